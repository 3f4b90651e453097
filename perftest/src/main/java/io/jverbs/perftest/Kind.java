package io.jverbs.perftest;

/** Bandwidth or latency. */
enum Kind {
    BW,
    LAT
}
