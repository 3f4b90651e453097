package io.jverbs.perftest;

import io.jverbs.counters.CounterDelta;
import io.jverbs.counters.CounterError;
import io.jverbs.counters.CounterSnapshot;
import io.jverbs.counters.CounterSource;
import io.jverbs.counters.RdmaCounters;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The port counters around a run: a snapshot once the peer is connected (after both sides'
 * warm-ups, before the handshake's exchange and the measured loop), another after the run,
 * and every counter that moved printed under the table and put in the JSON ({@code counter_deltas}),
 * whatever the driver calls it (retransmits, sequence errors, RNR, CNP/ECN where the device has
 * them). This side's only: the C perftest's wire protocol has no place for the peer's, so each
 * side prints its own (on one node both sides share the port, so each sees both directions).
 * Counters never fail a run: when they cannot be read the line says why.
 */
final class CounterWatch {
    private final RdmaCounters counters;
    private final String device;
    private final int port;
    private final CounterSnapshot before;
    private final String unavailable;

    private CounterWatch(RdmaCounters counters, String device, int port, CounterSnapshot before, String unavailable) {
        this.counters = counters;
        this.device = device;
        this.port = port;
        this.before = before;
        this.unavailable = unavailable;
    }

    static CounterWatch start(String device, int port) {
        RdmaCounters counters = RdmaCounters.system();
        try {
            return new CounterWatch(counters, device, port, counters.snapshot(device, port), null);
        } catch (RuntimeException e) {
            return new CounterWatch(counters, device, port, null, e.getMessage());
        }
    }

    /**
     * The port's activity as one number that moves whenever any of its counters moves (their sum),
     * read afresh at each call; for telling a peer that has stopped mid-run from one that is slow.
     *
     * @return the supplier, or null when the counters cannot be read here
     */
    java.util.function.LongSupplier activity() {
        if (before == null) {
            return null;
        }
        return () -> {
            try {
                long sum = 0;
                for (io.jverbs.counters.Counter counter : counters.snapshot(device, port).counters()) {
                    sum += counter.value();
                }
                return sum;
            } catch (RuntimeException e) {
                return Long.MIN_VALUE; // unreadable now: counts as a move, never as a stall
            }
        };
    }

    /** Reads the counters again, prints what moved, and adds it to the JSON report (when there is one). */
    CounterDelta finish(java.io.PrintWriter out, Outputs outputs) {
        Map<String, Object> json = new LinkedHashMap<>();
        json.put("device", device);
        json.put("port", port);
        json.put("side", "this side only");
        CounterDelta delta = null;
        String line;
        if (before == null) {
            line = " RDMA counters: not read (" + unavailable + ")";
            json.put("unavailable", unavailable);
        } else {
            try {
                CounterSnapshot after = counters.snapshotAfter(device, port, System.nanoTime());
                delta = after.since(before);
                Map<String, Long> moved = new LinkedHashMap<>();
                StringBuilder b = new StringBuilder();
                for (CounterDelta.Change ch : delta.moved()) {
                    moved.put(ch.name(), ch.delta());
                    b.append(b.isEmpty() ? "" : ", ").append(ch.name()).append(ch.delta() > 0 ? " +" : " ").append(ch.delta());
                }
                String source = after.hwSource() == CounterSource.NETLINK ? "netlink" : "sysfs";
                json.put("source", source);
                json.put("elapsed_ms", delta.elapsed().toMillis());
                json.put("moved", moved);
                List<CounterError> errors = after.errors();
                if (!errors.isEmpty()) {
                    json.put("unreadable", errors.stream().map(e -> e.name() + ": " + e.message()).toList());
                }
                line = " RDMA counters moved on this side (" + device + " port " + port + ", " + source + "): "
                        + (b.isEmpty() ? "none" : b) + (errors.isEmpty() ? "" : "; unreadable: "
                        + errors.stream().map(CounterError::name).toList());
            } catch (RuntimeException e) {
                line = " RDMA counters: not read after the run (" + e.getMessage() + ")";
                json.put("unavailable", e.getMessage());
            }
        }
        out.println(line);
        out.flush();
        if (outputs != null) {
            outputs.put("counter_deltas", json);
        }
        return delta;
    }
}
