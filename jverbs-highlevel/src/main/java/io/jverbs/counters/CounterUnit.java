package io.jverbs.counters;

/** The unit of a {@link Counter}'s value, already converted to a base unit. */
public enum CounterUnit {
    /** A count of events (packets, errors, naks, ...). */
    EVENTS,
    /**
     * Bytes. {@code port_xmit_data}, {@code port_rcv_data} (and their {@code _64} forms) count
     * 4-byte words in sysfs; a {@link Counter} holds them multiplied by 4.
     */
    BYTES
}
