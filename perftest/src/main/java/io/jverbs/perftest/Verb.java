package io.jverbs.perftest;

/** The operation a test measures, with the name C perftest prints in its header. */
enum Verb {
    WRITE("RDMA_Write"),
    READ("RDMA_Read"),
    SEND("Send"),
    ATOMIC("Atomic");

    final String title;

    Verb(String title) {
        this.title = title;
    }

    /** Latency is a round trip halved for write and send (ping-pong), a single operation for read and atomics. */
    int rttFactor() {
        return this == READ || this == ATOMIC ? 1 : 2;
    }
}
