package io.jverbs.counters;

/**
 * One counter of a port at one moment, as the driver names it.
 *
 * @param name  the driver's name ({@code sent_pkts}, {@code port_xmit_data}, ...), unchanged
 * @param group the directory it was found in (or the netlink read, which gives {@link CounterGroup#HW_COUNTERS})
 * @param value the value in base units ({@link CounterUnit#BYTES} already multiplied out of 4-byte
 *              words); an unsigned 64-bit quantity held in a {@code long}
 * @param unit  what {@code value} counts
 */
public record Counter(String name, CounterGroup group, long value, CounterUnit unit) {
    /**
     * The multiplier that turns a raw sysfs value of this counter into base units: 4 for the
     * PMA's data counters (which count 4-byte words), 1 otherwise.
     *
     * @param group the counter's group
     * @param name  the counter's file name
     * @return 4 or 1
     */
    public static int rawScale(CounterGroup group, String name) {
        return group == CounterGroup.PORT_COUNTERS && (name.equals("port_xmit_data") || name.equals("port_rcv_data")
                || name.equals("port_xmit_data_64") || name.equals("port_rcv_data_64")) ? 4 : 1;
    }
}
