package io.jverbs.perftest;

import com.sun.net.httpserver.Authenticator;
import com.sun.net.httpserver.BasicAuthenticator;
import com.sun.net.httpserver.HttpsConfigurator;
import io.prometheus.metrics.exporter.httpserver.HTTPServer;
import io.prometheus.metrics.model.registry.PrometheusRegistry;

import javax.net.ssl.SSLContext;
import java.io.IOException;
import java.net.InetAddress;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The exporter's HTTP(S) server: the official Prometheus client's {@link HTTPServer} on one
 * address, with its own bounded pool of worker threads and the JDK server's request timeout
 * shortened, so that clients which open connections and send part of a request cannot hold up a
 * scrape.
 *
 * <p>The JDK's server ({@code com.sun.net.httpserver}) reads a request on a worker thread, and
 * reads its timeouts from system properties once, when the first server of the JVM is made.
 * Prometheus' {@code HTTPServer} sets {@code sun.net.httpserver.maxReqTime} to 60 s in its static
 * initialiser unless it is set already, and its default pool has 10 threads: 10 connections that
 * each send half a request line then hold every worker for a minute. This class sets, before
 * {@code HTTPServer} is initialised and only where the JVM was not given a value ({@code -D}):
 * {@value #REQUEST_TIMEOUT_SECONDS} s to receive a request ({@code sun.net.httpserver.maxReqTime},
 * whole seconds), {@value #RESPONSE_TIMEOUT_SECONDS} s to send a response
 * ({@code sun.net.httpserver.maxRspTime}), checked every {@value #TIMER_MILLIS} ms
 * ({@code sun.net.httpserver.timerMillis}). In a JVM that already made a
 * {@code com.sun.net.httpserver} server before, the JDK kept the values of that moment. The pool
 * has {@value #THREADS} threads and room for {@value #QUEUE} waiting requests; a connection that
 * finds both full is closed at once.
 *
 * <p>Thread-safety: {@link #close()} may be called from any thread, more than once.
 */
final class ExporterServer implements AutoCloseable {
    static final int REQUEST_TIMEOUT_SECONDS = 2;
    static final int RESPONSE_TIMEOUT_SECONDS = 10;
    static final int TIMER_MILLIS = 250;
    static final int THREADS = 32;
    static final int QUEUE = 32;

    static {
        setUnlessGiven("sun.net.httpserver.maxReqTime", Integer.toString(REQUEST_TIMEOUT_SECONDS));
        setUnlessGiven("sun.net.httpserver.maxRspTime", Integer.toString(RESPONSE_TIMEOUT_SECONDS));
        setUnlessGiven("sun.net.httpserver.timerMillis", Integer.toString(TIMER_MILLIS));
    }

    private final HTTPServer server;
    private final ThreadPoolExecutor workers;
    private final InetAddress address;
    private final boolean tls;
    private final java.util.concurrent.atomic.AtomicBoolean closed = new java.util.concurrent.atomic.AtomicBoolean();

    private ExporterServer(HTTPServer server, ThreadPoolExecutor workers, InetAddress address, boolean tls) {
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
        ThreadPoolExecutor workers = new ThreadPoolExecutor(THREADS, THREADS, 30, TimeUnit.SECONDS,
                new ArrayBlockingQueue<>(QUEUE), daemonThreads(), new ThreadPoolExecutor.AbortPolicy());
        workers.allowCoreThreadTimeOut(true);
        HTTPServer.Builder builder = HTTPServer.builder().inetAddress(address).port(port).registry(registry)
                .executorService(workers);
        if (authenticator != null) {
            builder.authenticator(authenticator);
        }
        if (tls != null) {
            builder.httpsConfigurator(new HttpsConfigurator(tls));
        }
        try {
            return new ExporterServer(builder.buildAndStart(), workers, address, tls != null);
        } catch (IOException | RuntimeException e) {
            workers.shutdownNow();
            throw e;
        }
    }

    private static ThreadFactory daemonThreads() {
        AtomicInteger n = new AtomicInteger();
        return r -> Thread.ofPlatform().daemon(true).name("jverbs-exporter-http-" + n.incrementAndGet()).unstarted(r);
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
        return server.getPort();
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
            server.close();
            workers.shutdownNow();
        }
    }
}
