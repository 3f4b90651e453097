package io.jverbs.perftest;

import com.sun.net.httpserver.Authenticator;
import io.jverbs.counters.RdmaCounters;
import io.jverbs.prometheus.RdmaMetrics;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

import javax.net.ssl.HttpsURLConnection;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;
import java.io.IOException;
import java.io.InputStream;
import java.net.HttpURLConnection;
import java.net.InetAddress;
import java.net.URI;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.time.Duration;
import java.util.Base64;
import java.util.List;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.function.Function;

/**
 * {@code jverbs-perftest exporter}: serves the RDMA counters of this host's devices (every
 * {@code counters/} and {@code hw_counters/} file, netlink where the kernel offers it) on
 * {@code /metrics} through the official Prometheus client's HTTP server, until killed.
 * {@code --once} prints one scrape of that endpoint and exits (for logs and CI).
 *
 * <p>It listens on 127.0.0.1 unless {@code --bind} names another address ({@code 0.0.0.0} or
 * {@code ::} for every one). {@code --basic-auth-user} with a password from a file or an
 * environment variable (never the command line, which other users see in the process list)
 * asks every client for HTTP basic authentication; {@code --tls-keystore} serves HTTPS with the
 * key and certificate of a PKCS12 or JKS key store. Both are the Prometheus client's own
 * options. The devices are read at most once per {@code --interval} (default 1 s), whatever
 * the scrape rate; the server's defences against slow clients are described in
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
    @Option(names = "--basic-auth-user", paramLabel = "<name>", description = "require HTTP basic authentication as this user"
            + " (with --basic-auth-password-file or --basic-auth-password-env)")
    String authUser;
    @Option(names = "--basic-auth-password-file", paramLabel = "<file>", description = "the file holding the password (its"
            + " first line)")
    Path authPasswordFile;
    @Option(names = "--basic-auth-password-env", paramLabel = "<variable>", description = "the environment variable holding"
            + " the password")
    String authPasswordEnv;
    @Option(names = "--tls-keystore", paramLabel = "<file>", description = "serve HTTPS with the key and certificate in this"
            + " PKCS12 or JKS key store (with --tls-keystore-password-file or --tls-keystore-password-env)")
    Path tlsKeystore;
    @Option(names = "--tls-keystore-password-file", paramLabel = "<file>", description = "the file holding the key store's"
            + " password (its first line; also the key's)")
    Path tlsPasswordFile;
    @Option(names = "--tls-keystore-password-env", paramLabel = "<variable>", description = "the environment variable holding"
            + " the key store's password")
    String tlsPasswordEnv;
    @Option(names = "--once", description = "print one scrape of /metrics and exit")
    boolean once;

    /** Where {@code --*-password-env} variables are looked up; tests put their own. */
    Function<String, String> environment = System::getenv;

    // resolved by start()
    private RdmaCounters counters;
    private String authPassword;
    private SSLContext tlsContext;
    private KeyStore keyStore;

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
            out.println("exporter: serving " + server.listeningUri() + (authUser != null ? " (basic authentication)" : "")
                    + "; " + found + "; " + hw + "; read at most every "
                    + Oob.seconds(Math.round(intervalSeconds * 1000)));
            out.flush();
            if (!server.address().isLoopbackAddress()) {
                if (authUser == null) {
                    err.println("exporter: note: " + bind + " is reachable from other hosts and --basic-auth-user is not"
                            + " set: whoever reaches port " + server.port() + " reads these counters");
                } else if (tlsKeystore == null) {
                    err.println("exporter: note: basic authentication without --tls-keystore sends the password over the"
                            + " network in clear text");
                }
                err.flush();
            }
            new CountDownLatch(1).await(); // until killed
            return 0;
        }
    }

    /**
     * Checks the options, reads the passwords and the key store, and starts serving.
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
        Authenticator authenticator = null;
        if (authUser != null) {
            if (authUser.isEmpty() || authUser.contains(":")) {
                throw usage("--basic-auth-user must be a non-empty name without ':'");
            }
            authPassword = secret("--basic-auth-password-file", authPasswordFile, "--basic-auth-password-env", authPasswordEnv,
                    "--basic-auth-user");
            authenticator = ExporterServer.basicAuthentication(authUser, authPassword);
        } else if (authPasswordFile != null || authPasswordEnv != null) {
            throw usage((authPasswordFile != null ? "--basic-auth-password-file" : "--basic-auth-password-env")
                    + " gives a password for --basic-auth-user <name>, which is missing");
        }
        if (tlsKeystore != null) {
            String password = secret("--tls-keystore-password-file", tlsPasswordFile, "--tls-keystore-password-env",
                    tlsPasswordEnv, "--tls-keystore");
            tlsContext = tls(tlsKeystore, password.toCharArray());
        } else if (tlsPasswordFile != null || tlsPasswordEnv != null) {
            throw usage((tlsPasswordFile != null ? "--tls-keystore-password-file" : "--tls-keystore-password-env")
                    + " gives the password of --tls-keystore <file>, which is missing");
        }
        counters = sysfsRoot != null ? RdmaCounters.sysfs(sysfsRoot) : RdmaCounters.system();
        PrometheusRegistry registry = new PrometheusRegistry();
        RdmaMetrics.of(counters, Set.copyOf(devices), Duration.ofNanos(Math.round(intervalSeconds * 1e9))).register(registry);
        return ExporterServer.start(address, port, registry, authenticator, tlsContext);
    }

    private ParameterException usage(String message) {
        return new ParameterException(spec.commandLine(), message);
    }

    /** A password from exactly one of a file (its first line) and an environment variable. */
    private String secret(String fileOption, Path file, String envOption, String variable, String owner) {
        if ((file == null) == (variable == null)) {
            throw usage(owner + " needs its password from exactly one of " + fileOption + " <file> and " + envOption
                    + " <variable> (never on the command line)");
        }
        String value;
        if (file != null) {
            try {
                value = Files.readString(file, StandardCharsets.UTF_8).lines().findFirst().orElse("");
            } catch (IOException e) {
                throw usage(fileOption + " " + file + " cannot be read: " + e);
            }
        } else {
            value = environment.apply(variable);
            if (value == null) {
                throw usage(envOption + " " + variable + ": the environment variable is not set");
            }
        }
        if (value.isEmpty()) {
            throw usage(owner + "'s password is empty (" + (file != null ? fileOption + " " + file : envOption + " " + variable)
                    + ")");
        }
        return value;
    }

    /** The server's TLS context from a key store, whose password is also its key's. */
    private SSLContext tls(Path file, char[] password) {
        try {
            keyStore = KeyStore.getInstance(file.toFile(), password);
            KeyManagerFactory keys = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
            keys.init(keyStore, password);
            SSLContext context = SSLContext.getInstance("TLS");
            context.init(keys.getKeyManagers(), null, null);
            return context;
        } catch (IOException | GeneralSecurityException e) {
            throw usage("--tls-keystore " + file + " cannot be used: " + e.getMessage()
                    + " (a PKCS12 or JKS key store holding one key and its certificate, the key under the store's password)");
        }
    }

    /**
     * One scrape of the running server over its own protocol, with the credentials it asks for;
     * over HTTPS it trusts exactly the key store's certificates.
     */
    private String scrape(ExporterServer server) throws IOException {
        URI uri = server.metricsUri();
        HttpURLConnection c = (HttpURLConnection) uri.toURL().openConnection();
        c.setConnectTimeout(30_000);
        c.setReadTimeout(30_000);
        if (c instanceof HttpsURLConnection https) {
            try {
                TrustManagerFactory trust = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
                trust.init(keyStore);
                SSLContext own = SSLContext.getInstance("TLS");
                own.init(null, trust.getTrustManagers(), null);
                https.setSSLSocketFactory(own.getSocketFactory());
            } catch (GeneralSecurityException e) {
                throw new IOException("cannot trust the key store's certificate: " + e.getMessage(), e);
            }
            // only the key store's own certificate is trusted, whatever name it carries
            https.setHostnameVerifier((host, tls) -> true);
        }
        if (authUser != null) {
            c.setRequestProperty("Authorization", "Basic " + Base64.getEncoder().encodeToString((authUser + ":" + authPassword)
                    .getBytes(StandardCharsets.UTF_8)));
        }
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
