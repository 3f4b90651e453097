/**
 * jverbs-perftest: the C perftest's bandwidth and latency tools (write, read, send, atomic) on
 * jverbs-highlevel, with the same flags, report tables and out-of-band TCP handshake, so that a
 * Java side can face a C side. Run it on the class path with
 * {@code --enable-native-access=ALL-UNNAMED} (the jar's manifest says so for {@code java -jar}).
 */
module io.jverbs.perftest {
    requires io.jverbs.highlevel;
    requires info.picocli;
    requires HdrHistogram;
    requires io.prometheus.metrics.model;
    requires io.prometheus.metrics.exporter.httpserver;
    requires jdk.httpserver;
    requires java.net.http;
    requires com.fasterxml.jackson.databind;
    requires org.jfree.jfreechart;
    requires java.desktop;
    requires jdk.management;
    opens io.jverbs.perftest to info.picocli;
}
