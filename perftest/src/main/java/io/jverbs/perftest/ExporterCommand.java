package io.jverbs.perftest;

import io.jverbs.counters.RdmaCounters;
import io.jverbs.prometheus.RdmaMetrics;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

import java.io.IOException;
import java.io.InputStream;
import java.net.HttpURLConnection;
import java.net.InetAddress;
import java.net.URI;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;

/**
 * {@code jverbs-perftest exporter}: serves the RDMA counters of this host's devices (every
 * {@code counters/} and {@code hw_counters/} file, netlink where the kernel offers it) on
 * {@code /metrics} through the official Prometheus client's HTTP server, until killed.
 * {@code --once} prints one scrape of that endpoint and exits (for logs and CI).
 *
 * <p>It listens on 127.0.0.1 unless {@code --bind} names another address ({@code 0.0.0.0} or
 * {@code ::} for every one). The devices are read at most once per {@code --interval} (default
 * 1 s), whatever the scrape rate; the server's defences against slow clients are described in
 * {@link ExporterServer}.
 *
 * <p>The per-connection series of the dashboard ({@code rdma_connection_*}: latency histogram and
 * summary, posted operations and bytes) come from a service, not from this command: the service
 * registers {@link RdmaMetrics} in its own registry, serves it (with the Prometheus client's
 * {@code HTTPServer} or its framework's endpoint) and names each connection it wants to see:
 * {@code RdmaMetrics.of(RdmaCounters.system()).register(registry).addConnection("orders",
 * recorder, tracker)}, where {@code recorder} is the {@code HdrLatencyRecorder} the connection's
 * {@code LatencyTracker} {@code tracker} feeds.
 *
 * <p>Exit codes: 0 (killed, or {@code --once} scraped), 1 (cannot listen, or the scrape failed),
 * 2 (the command line is refused).
 */
@Command(name = "exporter", mixinStandardHelpOptions = true, sortOptions = false, usageHelpAutoWidth = true,
        description = "Serve RDMA device and port counters (and this process's RDMA resources) for Prometheus on /metrics.",
        footer = {"", "Per-connection series (rdma_connection_*: latency histogram and summary, posted operations and bytes)"
                + " come from a service that registers io.jverbs.prometheus.RdmaMetrics in its own Prometheus registry and"
                + " calls addConnection(name, recorder, tracker) for each connection; this command exports device counters."})
final class ExporterCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Option(names = "--port", paramLabel = "<port>", description = "HTTP port (default 9879; 0: any free port)")
    int port = 9879;
    @Option(names = "--bind", paramLabel = "<address>", description = "address to listen on (default 127.0.0.1, this host"
            + " only; 0.0.0.0 or :: for every address)")
    String bind = "127.0.0.1";
    @Option(names = {"-d", "--ib-dev"}, paramLabel = "<dev>", description = "export only this device (repeatable; default: all)")
    List<String> devices = List.of();
    @Option(names = "--sysfs-root", paramLabel = "<dir>", description = "read this tree instead of /sys/class/infiniband (sysfs only, no netlink)")
    Path sysfsRoot;
    @Option(names = "--interval", paramLabel = "<sec>", description = "read the devices at most once per this many seconds;"
            + " scrapes in between get the last read (default 1)")
    double intervalSeconds = 1;
    @Option(names = "--once", description = "print one scrape of /metrics and exit")
    boolean once;

    private RdmaCounters counters;

    @Override
    public Integer call() throws InterruptedException {
        var out = spec.commandLine().getOut();
        var err = spec.commandLine().getErr();
        ExporterServer server;
        try {
            server = start();
        } catch (IOException e) {
            err.println("exporter: cannot listen on " + bind + " port " + port + ": " + e.getMessage()
                    + " (another process on that port? choose one with --port)");
            err.flush();
            return 1;
        }
        try (server) {
            if (once) {
                try {
                    out.print(scrape(server));
                    out.flush();
                    return 0;
                } catch (IOException e) {
                    err.println("exporter: the scrape of " + server.metricsUri() + " failed: " + e.getMessage());
                    err.flush();
                    return 1;
                }
            }
            String found = counters.devices().isEmpty() ? "no RDMA devices under " + counters.root()
                    : "devices " + counters.devices();
            String hw = counters.netlinkAvailable() ? "hw_counters through netlink (uncached)"
                    : "hw_counters through sysfs (" + counters.netlinkStatus().orElse("") + ")";
            out.println("exporter: serving " + server.listeningUri() + "; " + found + "; " + hw + "; read at most every "
                    + Oob.seconds(Math.round(intervalSeconds * 1000)));
            out.flush();
            if (!server.address().isLoopbackAddress()) {
                err.println("exporter: note: " + bind + " is reachable from other hosts: whoever reaches port "
                        + server.port() + " reads these counters");
                err.flush();
            }
            new CountDownLatch(1).await(); // until killed
            return 0;
        }
    }

    /**
     * Checks the options and starts serving.
     *
     * @return the running server; the caller closes it
     * @throws ParameterException when an option is refused (exit code 2)
     * @throws IOException        when the address and port cannot be bound
     */
    ExporterServer start() throws IOException {
        String refused = Seconds.refusal("--interval", intervalSeconds, null);
        if (refused != null) {
            throw usage(refused);
        }
        if (port < 0 || port > 65535) {
            throw usage("--port must be 0..65535, not " + port);
        }
        InetAddress address;
        try {
            address = InetAddress.getByName(bind);
        } catch (UnknownHostException e) {
            throw usage("--bind " + bind + " cannot be resolved: give an IP address of this host (127.0.0.1, 0.0.0.0, ::)");
        }
        counters = sysfsRoot != null ? RdmaCounters.sysfs(sysfsRoot) : RdmaCounters.system();
        PrometheusRegistry registry = new PrometheusRegistry();
        RdmaMetrics.of(counters, Set.copyOf(devices), Duration.ofNanos(Math.round(intervalSeconds * 1e9))).register(registry);
        return ExporterServer.start(address, port, registry);
    }

    private ParameterException usage(String message) {
        return new ParameterException(spec.commandLine(), message);
    }

    /** One scrape of the running server. */
    private String scrape(ExporterServer server) throws IOException {
        URI uri = server.metricsUri();
        HttpURLConnection c = (HttpURLConnection) uri.toURL().openConnection();
        c.setConnectTimeout(30_000);
        c.setReadTimeout(30_000);
        try {
            int status = c.getResponseCode();
            if (status != 200) {
                throw new IOException("HTTP " + status);
            }
            try (InputStream in = c.getInputStream()) {
                return new String(in.readAllBytes(), StandardCharsets.UTF_8);
            }
        } finally {
            c.disconnect();
        }
    }
}
