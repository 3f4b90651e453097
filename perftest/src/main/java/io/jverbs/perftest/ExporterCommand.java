package io.jverbs.perftest;

import io.jverbs.counters.RdmaCounters;
import io.jverbs.prometheus.RdmaMetrics;
import io.prometheus.metrics.exporter.httpserver.HTTPServer;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;

/**
 * {@code jverbs-perftest exporter --port N [-d dev]}: serves the RDMA counters of this host's
 * devices (every {@code counters/} and {@code hw_counters/} file, netlink where the kernel offers
 * it) on {@code http://HOST:N/metrics} through the official Prometheus client's HTTP server, until
 * killed. {@code --once} prints one scrape of that endpoint and exits (for logs and CI).
 */
@Command(name = "exporter", mixinStandardHelpOptions = true, sortOptions = false,
        description = "Serve RDMA device and port counters (and this process's RDMA resources) for Prometheus on /metrics.")
final class ExporterCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Option(names = "--port", paramLabel = "<port>", description = "HTTP port (default 9879; 0: any free port)")
    int port = 9879;
    @Option(names = "--bind", paramLabel = "<address>", description = "address to listen on (default: all)")
    String bind;
    @Option(names = {"-d", "--ib-dev"}, paramLabel = "<dev>", description = "export only this device (repeatable; default: all)")
    List<String> devices = List.of();
    @Option(names = "--sysfs-root", paramLabel = "<dir>", description = "read this tree instead of /sys/class/infiniband (sysfs only, no netlink)")
    Path sysfsRoot;
    @Option(names = "--once", description = "print one scrape of /metrics and exit")
    boolean once;

    @Override
    public Integer call() throws IOException, InterruptedException {
        RdmaCounters counters = sysfsRoot != null ? RdmaCounters.sysfs(sysfsRoot) : RdmaCounters.system();
        PrometheusRegistry registry = new PrometheusRegistry();
        RdmaMetrics.of(counters, Set.copyOf(devices)).register(registry);
        HTTPServer.Builder builder = HTTPServer.builder().port(port).registry(registry);
        if (bind != null) {
            builder.hostname(bind);
        }
        HTTPServer server;
        try {
            server = builder.buildAndStart();
        } catch (IOException e) {
            spec.commandLine().getErr().println("exporter: cannot listen on port " + port + ": " + e.getMessage());
            spec.commandLine().getErr().flush();
            return 1;
        }
        var out = spec.commandLine().getOut();
        String found = counters.devices().isEmpty() ? "no RDMA devices under " + counters.root()
                : "devices " + counters.devices();
        String hw = counters.netlinkAvailable() ? "hw_counters through netlink (uncached)"
                : "hw_counters through sysfs (" + counters.netlinkStatus().orElse("") + ")";
        if (once) {
            try (server; HttpClient http = HttpClient.newHttpClient()) {
                HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.getPort()
                        + "/metrics")).timeout(Duration.ofSeconds(30)).build(), HttpResponse.BodyHandlers.ofString());
                out.print(r.body());
                out.flush();
                return r.statusCode() == 200 ? 0 : 1;
            }
        }
        out.println("exporter: serving http://" + (bind == null ? "0.0.0.0" : bind) + ":" + server.getPort() + "/metrics; "
                + found + "; " + hw);
        out.flush();
        new CountDownLatch(1).await(); // until killed
        return 0;
    }
}
