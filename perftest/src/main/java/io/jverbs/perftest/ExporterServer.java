package io.jverbs.perftest;

import com.sun.net.httpserver.Authenticator;
import com.sun.net.httpserver.BasicAuthenticator;
import com.sun.net.httpserver.HttpContext;
import com.sun.net.httpserver.HttpHandler;
import com.sun.net.httpserver.HttpServer;
import com.sun.net.httpserver.HttpsConfigurator;
import com.sun.net.httpserver.HttpsServer;
import io.prometheus.metrics.exporter.httpserver.DefaultHandler;
import io.prometheus.metrics.exporter.httpserver.HealthyHandler;
import io.prometheus.metrics.exporter.httpserver.MetricsHandler;
import io.prometheus.metrics.model.registry.PrometheusRegistry;

import javax.net.ssl.SSLContext;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * The exporter's HTTP(S) server: the JDK's server ({@code com.sun.net.httpserver}) on one address
 * with the official Prometheus client's handlers ({@link MetricsHandler} on {@code /metrics},
 * {@link HealthyHandler} on {@code /-/healthy}, {@link DefaultHandler} on {@code /}), made here
 * rather than by the client's {@code HTTPServer}, whose listen backlog (3) cannot be changed.
 *
 * <p>Slow clients cannot hold up a scrape. The JDK's server reads a request on a worker thread
 * from the moment its first byte arrives; here every request gets a virtual thread of its own
 * (a parked one costs a few hundred bytes), so a thousand connections that each send part of a
 * request wait beside the scrapes instead of in front of them. The listen backlog is
 * {@value #BACKLOG}. The JDK server's timeouts are read from system properties once, when the
 * first server of the JVM is made; this class sets, only where the JVM was not given a value
 * ({@code -D}): {@value #REQUEST_TIMEOUT_SECONDS} s to receive a request
 * ({@code sun.net.httpserver.maxReqTime}, whole seconds), {@value #RESPONSE_TIMEOUT_SECONDS} s to
 * send a response ({@code maxRspTime}), checked every {@value #TIMER_MILLIS} ms
 * ({@code timerMillis}), and an idle connection closed after {@value #IDLE_SECONDS} s
 * ({@code idleInterval}). A connection past its time is closed by the server.
 *
 * <p>Thread-safety: {@link #close()} may be called from any thread, more than once.
 */
final class ExporterServer implements AutoCloseable {
    static final int REQUEST_TIMEOUT_SECONDS = 2;
    static final int RESPONSE_TIMEOUT_SECONDS = 10;
    static final int TIMER_MILLIS = 250;
    static final int IDLE_SECONDS = 10;
    static final int BACKLOG = 1024;

    static {
        setUnlessGiven("sun.net.httpserver.maxReqTime", Integer.toString(REQUEST_TIMEOUT_SECONDS));
        setUnlessGiven("sun.net.httpserver.maxRspTime", Integer.toString(RESPONSE_TIMEOUT_SECONDS));
        setUnlessGiven("sun.net.httpserver.timerMillis", Integer.toString(TIMER_MILLIS));
        setUnlessGiven("sun.net.httpserver.idleInterval", Integer.toString(IDLE_SECONDS));
    }

    private final HttpServer server;
    private final ExecutorService workers;
    private final InetAddress address;
    private final boolean tls;
    private final java.util.concurrent.atomic.AtomicBoolean closed = new java.util.concurrent.atomic.AtomicBoolean();

    private ExporterServer(HttpServer server, ExecutorService workers, InetAddress address, boolean tls) {
        this.server = server;
        this.workers = workers;
        this.address = address;
        this.tls = tls;
    }

    private static void setUnlessGiven(String key, String value) {
        if (System.getProperty(key) == null) {
            System.setProperty(key, value);
        }
    }

    /**
     * Starts serving {@code registry} on {@code /metrics} (and Prometheus' own {@code /} and
     * {@code /-/healthy}).
     *
     * @param address       the address to listen on
     * @param port          the port (0: any free one)
     * @param registry      what a scrape returns
     * @param authenticator who may scrape (every path), or null for anyone
     * @param tls           the server's key and certificate for HTTPS, or null for plain HTTP
     * @return the running server; the caller closes it
     * @throws IOException when the address and port cannot be bound
     */
    static ExporterServer start(InetAddress address, int port, PrometheusRegistry registry, Authenticator authenticator,
                                SSLContext tls) throws IOException {
        InetSocketAddress where = new InetSocketAddress(address, port);
        HttpServer server;
        if (tls != null) {
            HttpsServer https = HttpsServer.create(where, BACKLOG);
            https.setHttpsConfigurator(new HttpsConfigurator(tls));
            server = https;
        } else {
            server = HttpServer.create(where, BACKLOG);
        }
        ExecutorService workers = Executors.newThreadPerTaskExecutor(
                Thread.ofVirtual().name("jverbs-exporter-http-", 1).factory());
        try {
            context(server, "/metrics", new MetricsHandler(registry), authenticator);
            context(server, "/-/healthy", new HealthyHandler(), authenticator);
            context(server, "/", new DefaultHandler("/metrics"), authenticator);
            server.setExecutor(workers);
            server.start();
            return new ExporterServer(server, workers, address, tls != null);
        } catch (RuntimeException e) {
            server.stop(0);
            workers.shutdownNow();
            throw e;
        }
    }

    private static void context(HttpServer server, String path, HttpHandler handler, Authenticator authenticator) {
        HttpContext context = server.createContext(path, handler);
        if (authenticator != null) {
            context.setAuthenticator(authenticator);
        }
    }

    /**
     * HTTP basic authentication for one user; the comparison takes the same time whichever
     * character differs.
     *
     * @param user     the user name
     * @param password the password
     * @return an authenticator for {@link #start}
     */
    static Authenticator basicAuthentication(String user, String password) {
        byte[] userHash = sha256(user);
        byte[] passwordHash = sha256(password);
        return new BasicAuthenticator("jverbs-exporter", StandardCharsets.UTF_8) {
            @Override
            public boolean checkCredentials(String u, String p) {
                // both compared, always: no early exit that tells which one was wrong
                boolean userOk = MessageDigest.isEqual(userHash, sha256(u));
                boolean passwordOk = MessageDigest.isEqual(passwordHash, sha256(p));
                return userOk & passwordOk;
            }
        };
    }

    private static byte[] sha256(String s) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(s.getBytes(StandardCharsets.UTF_8));
        } catch (NoSuchAlgorithmException e) {
            throw new AssertionError("every JDK has SHA-256", e);
        }
    }

    /** @return the port listened on */
    int port() {
        return server.getAddress().getPort();
    }

    /** @return the address listened on */
    InetAddress address() {
        return address;
    }

    /** @return whether the server speaks HTTPS */
    boolean tls() {
        return tls;
    }

    /**
     * The URI of the metrics as this host reaches it: the bound address, or loopback when the
     * server listens on every address.
     *
     * @return {@code http://127.0.0.1:9879/metrics} and the like
     */
    URI metricsUri() {
        return uri(address.isAnyLocalAddress() ? InetAddress.getLoopbackAddress() : address);
    }

    /**
     * The URI of the metrics on the address listened on, as the exporter announces it.
     *
     * @return {@code http://0.0.0.0:9879/metrics} and the like
     */
    URI listeningUri() {
        return uri(address);
    }

    private URI uri(InetAddress host) {
        try {
            return new URI(tls ? "https" : "http", null, host.getHostAddress(), port(), "/metrics", null, null);
        } catch (URISyntaxException e) {
            throw new IllegalStateException("no URI for " + host + ":" + port(), e);
        }
    }

    /** Stops listening, closes the connections and ends the worker threads. Idempotent. */
    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            server.stop(0);
            workers.shutdownNow();
        }
    }
}
