package io.jverbs.counters;

import java.util.List;

/**
 * The per-queue-pair counters of one QP, or why there are none.
 *
 * @param device    the device name
 * @param port      the port number
 * @param qpn       the queue pair number asked about
 * @param supported whether the kernel has a counter bound to this QP
 * @param counterId the kernel's counter object id ({@code cntn}), -1 when unsupported
 * @param counters  its values (empty when unsupported)
 * @param reason    when unsupported, why, in a sentence; empty when supported
 */
public record QpCounters(String device, int port, int qpn, boolean supported, int counterId, List<Counter> counters,
                         String reason) {
    /** Copies the list. */
    public QpCounters {
        counters = List.copyOf(counters);
    }
}
