package io.jverbs.ibverbs.device;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

/**
 * This node of {@code soft-roce-ci/rxe-pair}, as its environment describes it
 * ({@code JVERBS_TEST_ROLE}, {@code JVERBS_TEST_IP}, {@code JVERBS_TEST_PEER_IP},
 * {@code JVERBS_PAIR_DIR}), with the control channel to the peer node, the fault tools
 * ({@code soft-roce-ci/rxe-fault}) and the device's hw_counters.
 *
 * <p>One instance per JVM ({@link #current}); used by one test thread at a time.
 */
public final class PairNode {
    /** The control channel's TCP port on node a (inside the guests: nothing else uses it). */
    static final int CONTROL_PORT = Integer.parseInt(System.getenv().getOrDefault("JVERBS_PAIR_CONTROL_PORT", "47391"));
    private static PairNode current;

    private final String role;
    private final String ip;
    private final String peerIp;
    private final TestDevice device;
    private final Path pairDir;
    private PairControl control;

    private PairNode(String role, String ip, String peerIp, TestDevice device, Path pairDir) {
        this.role = role;
        this.ip = ip;
        this.peerIp = peerIp;
        this.device = device;
        this.pairDir = pairDir;
    }

    /** @return why this JVM is not a pair node, or {@code null} when it is */
    static String absenceReason() {
        String role = System.getenv("JVERBS_TEST_ROLE");
        if (role == null || !(role.equals("a") || role.equals("b"))) {
            return "JVERBS_TEST_ROLE is '" + role + "', not a or b: the two-node tests run on both nodes of"
                    + " soft-roce-ci/rxe-pair (scripts/ci/pair-tests)";
        }
        if (System.getenv("JVERBS_TEST_PEER_IP") == null || System.getenv("JVERBS_TEST_IP") == null) {
            return "JVERBS_TEST_IP / JVERBS_TEST_PEER_IP unset";
        }
        return TestDevice.fromEnvironment().absenceReason();
    }

    /** @return this node (the environment must describe one: see {@link #absenceReason}) */
    public static synchronized PairNode current() {
        if (current == null) {
            String reason = absenceReason();
            if (reason != null) {
                throw new IllegalStateException(reason);
            }
            current = new PairNode(System.getenv("JVERBS_TEST_ROLE"), System.getenv("JVERBS_TEST_IP"),
                    System.getenv("JVERBS_TEST_PEER_IP"), TestDevice.fromEnvironment(),
                    Path.of(System.getenv().getOrDefault("JVERBS_PAIR_DIR", "/run/rxe-pair")));
        }
        return current;
    }

    /** @return {@code a} or {@code b} */
    public String role() {
        return role;
    }

    /** @return whether this is node a (the control channel's listener; usually the active side) */
    public boolean isA() {
        return role.equals("a");
    }

    /** @return this node's address */
    public String ip() {
        return ip;
    }

    /** @return the peer node's address */
    public String peerIp() {
        return peerIp;
    }

    /** @return this node's device */
    public TestDevice device() {
        return device;
    }

    /** @return this node's kernel release */
    public String kernel() {
        return System.getProperty("os.version");
    }

    /** @return the control channel, connected on first use (node a listens, node b connects) */
    public synchronized PairControl control() throws IOException {
        if (control == null) {
            try {
                control = isA() ? PairControl.listen(CONTROL_PORT, Duration.ofSeconds(180))
                        : PairControl.connect(peerIp, CONTROL_PORT, Duration.ofSeconds(180));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IOException("interrupted while connecting the control channel", e);
            }
        }
        return control;
    }

    /** @return whether the peer node was powered off by {@link #powerOffPeer} */
    public synchronized boolean isPeerGone() {
        return control != null && control.isPeerGone();
    }

    // ------------------------------------------------------------------ faults

    /**
     * Runs {@code rxe-fault ARGS} (soft-roce-ci/rxe-fault, on PATH in the guest) within 40 s.
     *
     * @return what it printed
     * @throws IOException when it fails, with its output
     */
    public String fault(String... args) throws IOException {
        List<String> cmd = new ArrayList<>();
        cmd.add(faultTool());
        cmd.addAll(List.of(args));
        String out = RdmaResourceCounts.run(cmd, Duration.ofSeconds(40)).strip();
        System.out.println("[pair " + role + "] " + out.replace("\n", "\n[pair " + role + "] "));
        return out;
    }

    /** tc netem on this node's egress, e.g. {@code netem("loss", "1%")}. */
    public String netem(String... params) throws IOException {
        String[] args = Stream.concat(Stream.of("netem"), Stream.of(params)).toArray(String[]::new);
        return fault(args);
    }

    /** Removes netem, brings the link up and waits until the device is ACTIVE. */
    public String clearFaults() throws IOException {
        return fault("clear");
    }

    /** Takes this node's link down for {@code seconds}, then up again (in the background). */
    public String linkDownFor(int seconds) throws IOException {
        return fault("link", "down", "--for", Integer.toString(seconds));
    }

    /** Waits until the device is ACTIVE with its IPv4 GID (after a link came back). */
    public String waitActive(int seconds) throws IOException {
        return fault("wait-active", Integer.toString(seconds));
    }

    /** The peer node kills {@code pid} with SIGKILL (through its fault agent). */
    public String killPeerProcess(long pid) throws IOException {
        return fault("kill-peer", Long.toString(pid), "KILL");
    }

    /** The host kills the peer node's QEMU; the control channel is then marked gone. */
    public String powerOffPeer() throws IOException {
        String out = fault("power-off-peer");
        control().peerGone();
        return out;
    }

    private static String faultTool() {
        for (String dir : System.getenv().getOrDefault("PATH", "").split(":")) {
            Path p = Path.of(dir.isEmpty() ? "." : dir, "rxe-fault");
            if (Files.isExecutable(p)) {
                return p.toString();
            }
        }
        Path inCheckout = Path.of("soft-roce-ci", "rxe-fault");
        return Files.isExecutable(inCheckout) ? inCheckout.toAbsolutePath().toString() : "rxe-fault";
    }

    // ------------------------------------------------------------------ counters and resources

    /** @return the device's {@code hw_counters} (rxe: sent_pkts, rcvd_seq_err, ...), by name */
    public Map<String, Long> hwCounters() throws IOException {
        Map<String, Long> counters = new LinkedHashMap<>();
        Path dir = device.sysfsPort().resolve("hw_counters");
        try (Stream<Path> files = Files.list(dir)) {
            for (Path f : files.sorted().toList()) {
                try {
                    counters.put(f.getFileName().toString(), Long.parseLong(Files.readString(f).strip()));
                } catch (NumberFormatException | IOException e) {
                    // not a plain number (or not readable): not a counter
                }
            }
        }
        return counters;
    }

    /** @return {@code after - before} per counter, only the ones that changed */
    public static Map<String, Long> delta(Map<String, Long> before, Map<String, Long> after) {
        Map<String, Long> d = new LinkedHashMap<>();
        after.forEach((k, v) -> {
            long diff = v - before.getOrDefault(k, 0L);
            if (diff != 0) {
                d.put(k, diff);
            }
        });
        return d;
    }

    /**
     * @return how this node's {@code rdma resource show} counts differ from the baseline taken
     * before the first pair test ({@code ""}: back to baseline)
     */
    public String resourcesAgainstBaseline() {
        ResourceLeakCheck check = PairTestExtension.leakCheck();
        return check == null ? "no baseline taken" : check.differenceNow();
    }

    /**
     * The java command for a child JVM running {@code main} with this JVM's flags and class path
     * (a victim process for the peer-kill fault).
     */
    public static List<String> childJvm(Class<?> main, String... args) {
        return ChildJvm.command(main, List.of("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"), List.of(args));
    }

    @Override
    public String toString() {
        return "node " + role + " (" + ip + ", kernel " + kernel() + ", " + device.name() + ") with peer " + peerIp;
    }
}
