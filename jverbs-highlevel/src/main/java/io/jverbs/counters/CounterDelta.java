package io.jverbs.counters;

import java.time.Duration;
import java.util.List;
import java.util.Optional;

/**
 * The change of every counter of one port between two {@link CounterSnapshot}s.
 *
 * @param device  the device name
 * @param port    the port number
 * @param elapsed the time between the two reads
 * @param changes one entry per counter present in both snapshots, in the later snapshot's order
 */
public record CounterDelta(String device, int port, Duration elapsed, List<Change> changes) {
    /** Copies the list. */
    public CounterDelta {
        changes = List.copyOf(changes);
    }

    /**
     * The change of one counter.
     *
     * @param name   the driver's name
     * @param group  its group
     * @param unit   its unit (bytes already converted)
     * @param before the earlier value
     * @param after  the later value
     */
    public record Change(String name, CounterGroup group, CounterUnit unit, long before, long after) {
        /**
         * The increase, {@code after - before} (unsigned counters; negative only when the
         * counter was reset, e.g. by a driver reload).
         *
         * @return the difference
         */
        public long delta() {
            return after - before;
        }
    }

    /**
     * The counters that moved.
     *
     * @return the changes whose delta is not zero, in order
     */
    public List<Change> moved() {
        return changes.stream().filter(c -> c.delta() != 0).toList();
    }

    /**
     * The change of a counter by the driver's name ({@code hw_counters} first).
     *
     * @param name the counter's name
     * @return its change, or empty when it was not in both snapshots
     */
    public Optional<Change> change(String name) {
        Change found = null;
        for (Change c : changes) {
            if (c.name().equals(name) && (found == null || c.group() == CounterGroup.HW_COUNTERS)) {
                found = c;
            }
        }
        return Optional.ofNullable(found);
    }
}
