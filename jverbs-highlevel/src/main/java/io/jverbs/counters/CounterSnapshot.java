package io.jverbs.counters;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;

/**
 * Every counter of one port read at one moment, plus what could not be read.
 *
 * @param device       the device name ({@code rxe0})
 * @param port         the port number (from 1)
 * @param time         when the read started (wall clock)
 * @param nanoTime     {@link System#nanoTime()} when the read started, for rates and deltas
 * @param counters     the counters read, {@link CounterGroup#PORT_COUNTERS} first, each group by name
 * @param errors       the counters (or groups) that failed to read; empty when all were read
 * @param hwSource     how {@code hw_counters} were read
 * @param lifespan     the port's {@code hw_counters/lifespan} (the kernel's sysfs cache time), when the file exists
 * @param maxStaleness how old a value may be: the lifespan for a {@link CounterSource#SYSFS} read
 *                     of {@code hw_counters}, zero for {@link CounterSource#NETLINK}
 */
public record CounterSnapshot(String device, int port, Instant time, long nanoTime, List<Counter> counters,
                              List<CounterError> errors, CounterSource hwSource, Optional<Duration> lifespan,
                              Duration maxStaleness) {
    /** Copies the lists. */
    public CounterSnapshot {
        counters = List.copyOf(counters);
        errors = List.copyOf(errors);
    }

    /**
     * Finds a counter by the driver's name ({@code hw_counters} is searched first).
     *
     * @param name {@code sent_pkts}, {@code port_xmit_data}, ...
     * @return the counter, or empty when the port has none of that name (or it failed to read)
     */
    public Optional<Counter> counter(String name) {
        Counter found = null;
        for (Counter c : counters) {
            if (c.name().equals(name) && (found == null || c.group() == CounterGroup.HW_COUNTERS)) {
                found = c;
            }
        }
        return Optional.ofNullable(found);
    }

    /**
     * What changed between {@code earlier} and this snapshot, counter by counter (counters
     * present in both).
     *
     * @param earlier a snapshot of the same device and port taken before this one
     * @return the delta
     * @throws IllegalArgumentException when {@code earlier} is of another device or port, or was
     *                                  taken after this one (the delta would run backwards)
     */
    public CounterDelta since(CounterSnapshot earlier) {
        if (!earlier.device.equals(device) || earlier.port != port) {
            throw new IllegalArgumentException("a delta needs two snapshots of one port: " + earlier.device + "/"
                    + earlier.port + " and " + device + "/" + port);
        }
        if (earlier.nanoTime - nanoTime > 0) {
            throw new IllegalArgumentException("the snapshot given as earlier was taken "
                    + (earlier.nanoTime - nanoTime) / 1_000_000 + " ms after this one: call later.since(earlier)");
        }
        List<CounterDelta.Change> changes = new java.util.ArrayList<>();
        for (Counter now : counters) {
            for (Counter then : earlier.counters) {
                if (then.name().equals(now.name()) && then.group() == now.group()) {
                    changes.add(new CounterDelta.Change(now.name(), now.group(), now.unit(), then.value(), now.value()));
                    break;
                }
            }
        }
        return new CounterDelta(device, port, Duration.ofNanos(nanoTime - earlier.nanoTime), changes);
    }
}
