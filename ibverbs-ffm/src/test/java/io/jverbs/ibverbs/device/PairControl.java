package io.jverbs.ibverbs.device;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HexFormat;

/**
 * The two nodes' control channel: one TCP connection between node a (listening) and node b, over
 * the same wire as the RDMA traffic, carrying tagged text lines ({@code tag SP text}). Each side
 * sends what the other expects, in the same order; a barrier lets the two find each other again
 * after one side failed in the middle of a test. Every wait has a time limit.
 *
 * <p>One test thread uses it at a time (the pair tests run serially).
 */
public final class PairControl implements AutoCloseable {
    /** How long a wait for the peer may take unless the caller says otherwise (TCG is slow). */
    public static final Duration DEFAULT_WAIT = Duration.ofSeconds(150);

    private final Socket socket;
    private final BufferedReader in;
    private final Writer out;
    private volatile boolean peerGone;

    private PairControl(Socket socket) throws IOException {
        this.socket = socket;
        socket.setTcpNoDelay(true);
        in = new BufferedReader(new InputStreamReader(socket.getInputStream(), StandardCharsets.UTF_8));
        out = new OutputStreamWriter(socket.getOutputStream(), StandardCharsets.UTF_8);
    }

    /** Node a: waits for node b on {@code port}. */
    static PairControl listen(int port, Duration timeout) throws IOException {
        try (ServerSocket server = new ServerSocket()) {
            server.setReuseAddress(true);
            server.bind(new InetSocketAddress(port));
            server.setSoTimeout((int) timeout.toMillis());
            try {
                return new PairControl(server.accept());
            } catch (SocketTimeoutException e) {
                throw new IOException("the peer node did not connect to the control port " + port + " within "
                        + timeout.toSeconds() + " s", e);
            }
        }
    }

    /** Node b: connects to node a, retrying until {@code timeout} (node a's JVM may start later). */
    static PairControl connect(String host, int port, Duration timeout) throws IOException, InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        IOException last = null;
        while (System.nanoTime() < deadline) {
            Socket s = new Socket();
            try {
                s.connect(new InetSocketAddress(host, port), 2_000);
                return new PairControl(s);
            } catch (IOException e) {
                s.close();
                last = e;
                Thread.sleep(200);
            }
        }
        throw new IOException("cannot reach the peer node's control port " + host + ":" + port + " within "
                + timeout.toSeconds() + " s: " + (last == null ? "" : last.getMessage()), last);
    }

    /**
     * Sends one line.
     *
     * @param tag  what the line is (no blanks)
     * @param text its content (one line)
     * @throws IOException when the connection is gone
     */
    public synchronized void send(String tag, String text) throws IOException {
        if (peerGone) {
            throw new IOException("the peer node is gone (powered off)");
        }
        out.write(tag + " " + text.replace('\n', ' ') + "\n");
        out.flush();
    }

    /** Sends bytes as hex. */
    public void sendBytes(String tag, byte[] bytes) throws IOException {
        send(tag, HexFormat.of().formatHex(bytes));
    }

    /** Reads the next line, which must carry {@code tag}, within {@link #DEFAULT_WAIT}. */
    public String expect(String tag) throws IOException {
        return expect(tag, DEFAULT_WAIT);
    }

    /**
     * Reads the next line, which must carry {@code tag}.
     *
     * @return its text
     * @throws IOException on timeout, a closed connection, or a line with another tag (the peer is
     *                     elsewhere: the message says where)
     */
    public synchronized String expect(String tag, Duration timeout) throws IOException {
        String[] line = readLine(timeout, tag);
        if (!line[0].equals(tag)) {
            throw new IOException("expected '" + tag + "' from the peer node, got '" + line[0] + " " + line[1] + "'");
        }
        return line[1];
    }

    /** Reads bytes sent with {@link #sendBytes}. */
    public byte[] expectBytes(String tag) throws IOException {
        return HexFormat.of().parseHex(expect(tag));
    }

    /**
     * Both nodes meet at {@code name}: sends it, then skips whatever the peer sent before (left
     * over from a test that failed on one side) until the peer's same barrier arrives.
     */
    public synchronized void barrier(String name, Duration timeout) throws IOException {
        send("barrier", name);
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                throw new IOException("the peer node did not reach barrier '" + name + "' within " + timeout.toSeconds() + " s");
            }
            String[] line = readLine(Duration.ofNanos(left), "barrier " + name);
            if (line[0].equals("barrier") && line[1].equals(name)) {
                return;
            }
            System.out.println("[pair] skipped from the peer before barrier " + name + ": " + line[0] + " " + line[1]);
        }
    }

    private String[] readLine(Duration timeout, String waitingFor) throws IOException {
        if (peerGone) {
            throw new IOException("the peer node is gone (powered off)");
        }
        socket.setSoTimeout((int) Math.max(1, timeout.toMillis()));
        String line;
        try {
            line = in.readLine();
        } catch (SocketTimeoutException e) {
            throw new IOException("the peer node sent nothing within " + timeout.toSeconds() + " s (waiting for '"
                    + waitingFor + "')", e);
        }
        if (line == null) {
            throw new IOException("the peer node closed the control connection (waiting for '" + waitingFor + "')");
        }
        int blank = line.indexOf(' ');
        return blank < 0 ? new String[] {line, ""} : new String[] {line.substring(0, blank), line.substring(blank + 1)};
    }

    /** Marks the peer as gone (powered off): later sends and reads fail at once instead of waiting. */
    public void peerGone() {
        peerGone = true;
    }

    /** @return whether {@link #peerGone} was called */
    public boolean isPeerGone() {
        return peerGone;
    }

    @Override
    public void close() throws IOException {
        socket.close();
    }
}
