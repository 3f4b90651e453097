package io.jverbs.counters;

import io.jverbs.ibverbs.VerbsException;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.locks.LockSupport;

/**
 * Reads the counters of any RDMA device and port, generically: every file of a port's
 * {@code counters/} and {@code hw_counters/} directories, under the names the driver gives,
 * converted to base units ({@code port_xmit_data}/{@code port_rcv_data} count 4-byte words and
 * are returned in bytes). A file that cannot be read (permission, {@code N/A (no PMA)}, EINVAL,
 * vanished) becomes a {@link CounterError} in the snapshot; the other counters are still read.
 *
 * <p>{@code hw_counters} come from the netlink {@code RDMA_NLDEV_CMD_STAT_GET} read when the
 * kernel offers it ({@link #system()}: unprivileged and uncached, through libc's socket calls over
 * FFM), otherwise from sysfs, where the kernel caches them for the port's {@code lifespan}
 * milliseconds: a snapshot says how stale it may be ({@link CounterSnapshot#maxStaleness()}), and
 * {@link #snapshotAfter} waits the lifespan out when it must see an event. {@code counters/} (the
 * PMA set) exists only in sysfs and is not cached.
 *
 * <p>Thread-safety: immutable apart from a cache of device indices; any thread may use it.
 * Nothing native is held between calls (a netlink socket lives for one call).
 */
public final class RdmaCounters {
    /** Where Linux lists RDMA devices. */
    public static final Path SYSFS_ROOT = Path.of("/sys/class/infiniband");
    private static final int NETLINK_TIMEOUT_MS = 2000;
    private final Path root;
    private final boolean useNetlink;
    private volatile String netlinkUnavailable;
    private volatile Map<String, Integer> indices = Map.of();

    private RdmaCounters(Path root, boolean useNetlink) {
        this.root = root;
        this.useNetlink = useNetlink;
    }

    /**
     * The system's devices, {@code hw_counters} through netlink where the kernel offers it.
     *
     * @return a reader of {@code /sys/class/infiniband} and NETLINK_RDMA
     */
    public static RdmaCounters system() {
        return new RdmaCounters(SYSFS_ROOT, true);
    }

    /**
     * Only sysfs, under another root: a fake tree in tests, a container's mounted {@code /sys}.
     *
     * @param root the directory that holds one directory per device (like {@code /sys/class/infiniband})
     * @return a reader that never uses netlink
     */
    public static RdmaCounters sysfs(Path root) {
        return new RdmaCounters(root, false);
    }

    /**
     * The sysfs root this reader lists devices under.
     *
     * @return the root
     */
    public Path root() {
        return root;
    }

    /**
     * Whether {@code hw_counters} are read through netlink; the first call may open a socket.
     *
     * @return true when this reader uses netlink and the kernel answered it
     */
    public boolean netlinkAvailable() {
        if (!useNetlink) {
            return false;
        }
        if (netlinkUnavailable == null && indices.isEmpty()) {
            refreshIndices();
        }
        return netlinkUnavailable == null;
    }

    /**
     * Why netlink is not used, when it is not.
     *
     * @return a sentence, or empty when netlink is in use
     */
    public Optional<String> netlinkStatus() {
        if (!useNetlink) {
            return Optional.of("netlink not requested (sysfs only, root " + root + ")");
        }
        return netlinkAvailable() ? Optional.empty() : Optional.of(netlinkUnavailable);
    }

    /**
     * The devices under the root, by name.
     *
     * @return the names, sorted; empty when the root does not exist (no RDMA, or a container without {@code /sys/class/infiniband})
     */
    public List<String> devices() {
        return names(root, false);
    }

    /**
     * A device's port numbers.
     *
     * @param device the device name
     * @return the port numbers, ascending; empty when the device has none or does not exist
     */
    public List<Integer> ports(String device) {
        return names(root.resolve(device).resolve("ports"), true).stream().map(Integer::valueOf).sorted().toList();
    }

    private static List<String> names(Path dir, boolean numeric) {
        List<String> out = new ArrayList<>();
        try (DirectoryStream<Path> s = Files.newDirectoryStream(dir)) {
            for (Path p : s) {
                String n = p.getFileName().toString();
                if (!n.startsWith(".") && (!numeric || n.chars().allMatch(Character::isDigit))) {
                    out.add(n);
                }
            }
        } catch (IOException e) {
            return List.of();
        }
        out.sort(Comparator.naturalOrder());
        return out;
    }

    /**
     * Every port of every device, read now.
     *
     * @return one snapshot per port
     */
    public List<CounterSnapshot> snapshotAll() {
        List<CounterSnapshot> out = new ArrayList<>();
        for (String d : devices()) {
            for (int p : ports(d)) {
                out.add(snapshot(d, p));
            }
        }
        return out;
    }

    /**
     * Reads every counter of a port now. With sysfs {@code hw_counters}, values may be as old as
     * the lifespan ({@link CounterSnapshot#maxStaleness()}).
     *
     * @param device the device name
     * @param port   the port number
     * @return the snapshot (errors inside it, never thrown for a single counter)
     * @throws java.util.NoSuchElementException when the device or port does not exist under the root
     */
    public CounterSnapshot snapshot(String device, int port) {
        Path portDir = root.resolve(device).resolve("ports").resolve(Integer.toString(port));
        if (!Files.isDirectory(portDir)) {
            throw new java.util.NoSuchElementException("no RDMA port " + device + "/" + port + " (" + portDir
                    + " does not exist; devices: " + devices() + ")");
        }
        Instant time = Instant.now();
        long nano = System.nanoTime();
        List<Counter> counters = new ArrayList<>();
        List<CounterError> errors = new ArrayList<>();
        readGroup(portDir, CounterGroup.PORT_COUNTERS, counters, errors);
        Optional<Duration> lifespan = lifespan(portDir);
        CounterSource source = CounterSource.SYSFS;
        if (netlinkAvailable()) {
            try {
                List<Counter> hw = netlinkPort(device, port);
                hw.sort(Comparator.comparing(Counter::name));
                counters.addAll(hw);
                source = CounterSource.NETLINK;
            } catch (VerbsException | IllegalArgumentException | java.util.NoSuchElementException e) {
                errors.add(new CounterError("hw_counters", CounterGroup.HW_COUNTERS, "netlink STAT_GET " + device + "/"
                        + port, e.getMessage() + " (read from sysfs instead)"));
            }
        }
        if (source == CounterSource.SYSFS) {
            readGroup(portDir, CounterGroup.HW_COUNTERS, counters, errors);
        }
        Duration stale = source == CounterSource.NETLINK ? Duration.ZERO : lifespan.orElse(Duration.ZERO);
        return new CounterSnapshot(device, port, time, nano, counters, errors, source, lifespan, stale);
    }

    /**
     * Reads a port so that the values include everything that happened up to {@code eventNanoTime}:
     * when {@code hw_counters} come from sysfs, first waits until the kernel's cache of the port
     * ({@code lifespan}) has expired since then; through netlink it reads at once.
     * The wait is at most the lifespan plus 2 ms, and never more than 10 s; an interrupt ends it early (the snapshot may then miss the
     * event) and the interrupt flag is kept.
     *
     * @param device        the device name
     * @param port          the port number
     * @param eventNanoTime {@link System#nanoTime()} at the end of the event to be counted, taken
     *                      in this JVM (not a wall-clock time)
     * @return the snapshot
     * @throws IllegalArgumentException when {@code eventNanoTime} lies in the future
     * @throws java.util.NoSuchElementException when the device or port does not exist
     */
    public CounterSnapshot snapshotAfter(String device, int port, long eventNanoTime) {
        long now = System.nanoTime();
        if (eventNanoTime - now > 0) {
            throw new IllegalArgumentException("eventNanoTime is " + (eventNanoTime - now) / 1_000_000 + " ms in the"
                    + " future: pass System.nanoTime() taken after the event, not a wall-clock time");
        }
        if (!netlinkAvailable()) {
            Path portDir = root.resolve(device).resolve("ports").resolve(Integer.toString(port));
            long wait = Math.min(lifespan(portDir).orElse(Duration.ZERO).toNanos() + 2_000_000L,
                    MAX_CACHE_WAIT_MS * 1_000_000L);
            long until = eventNanoTime + wait;
            for (long left = until - System.nanoTime(); left > 0 && !Thread.currentThread().isInterrupted();
                    left = until - System.nanoTime()) {
                LockSupport.parkNanos(left);
            }
        }
        return snapshot(device, port);
    }

    /** The most {@link #snapshotAfter} waits for the kernel's cache, whatever {@code lifespan} says. */
    private static final long MAX_CACHE_WAIT_MS = 10_000;

    private static Optional<Duration> lifespan(Path portDir) {
        try {
            return Optional.of(Duration.ofMillis(Long.parseLong(Files.readString(portDir.resolve("hw_counters")
                    .resolve("lifespan")).trim())));
        } catch (IOException | NumberFormatException e) {
            return Optional.empty();
        }
    }

    private static void readGroup(Path portDir, CounterGroup group, List<Counter> into, List<CounterError> errors) {
        Path dir = portDir.resolve(group.directory());
        if (!Files.exists(dir)) {
            return; // rxe has no counters/ (no PMA): absent, not an error
        }
        List<Path> files = new ArrayList<>();
        try (DirectoryStream<Path> s = Files.newDirectoryStream(dir)) {
            s.forEach(files::add);
        } catch (IOException e) {
            errors.add(new CounterError(group.directory(), group, dir.toString(), "cannot list: " + describe(e)));
            return;
        }
        files.sort(Comparator.comparing(p -> p.getFileName().toString()));
        for (Path f : files) {
            String name = f.getFileName().toString();
            if (name.startsWith(".") || (group == CounterGroup.HW_COUNTERS && name.equals("lifespan"))) {
                continue;
            }
            String text;
            try {
                text = Files.readString(f).trim();
            } catch (IOException | java.io.UncheckedIOException e) {
                errors.add(new CounterError(name, group, f.toString(), "cannot read: "
                        + describe(e instanceof java.io.UncheckedIOException u ? u.getCause() : (IOException) e)));
                continue;
            }
            long raw;
            try {
                raw = Long.parseUnsignedLong(text);
            } catch (NumberFormatException e) {
                errors.add(new CounterError(name, group, f.toString(), "not a number: '" + text + "'"));
                continue;
            }
            int scale = Counter.rawScale(group, name);
            into.add(new Counter(name, group, raw * scale, scale == 4 ? CounterUnit.BYTES : CounterUnit.EVENTS));
        }
    }

    private static String describe(IOException e) {
        String kind = e instanceof NoSuchFileException ? "no such file"
                : e instanceof java.nio.file.AccessDeniedException ? "permission denied" : e.getClass().getSimpleName();
        return kind + (e.getMessage() != null && !(e instanceof NoSuchFileException) ? " (" + e.getMessage() + ")" : "");
    }

    // ---- netlink ----

    private synchronized void refreshIndices() {
        try (NetlinkSocket s = new NetlinkSocket(NETLINK_TIMEOUT_MS)) {
            Map<String, Integer> found = new HashMap<>();
            for (Netlink.Message m : s.exchange(Netlink.request(Netlink.CMD_GET, true, NetlinkSocket.nextSeq()), true,
                    "RDMA_NLDEV_CMD_GET")) {
                Netlink.Attr index = m.find(Netlink.ATTR_DEV_INDEX);
                Netlink.Attr name = m.find(Netlink.ATTR_DEV_NAME);
                if (index != null && name != null) {
                    found.put(name.string(), index.u32());
                }
            }
            indices = Map.copyOf(found);
            netlinkUnavailable = null;
        } catch (VerbsException | IllegalArgumentException | UnsupportedOperationException e) {
            netlinkUnavailable = "netlink RDMA_NLDEV unavailable: " + e.getMessage();
        } catch (IllegalCallerException e) {
            netlinkUnavailable = "netlink RDMA_NLDEV unavailable: " + e.getMessage();
        }
    }

    private int index(String device) {
        Integer i = indices.get(device);
        if (i == null) {
            refreshIndices();
            i = indices.get(device);
        }
        if (i == null) {
            throw new java.util.NoSuchElementException("netlink lists no device " + device + " (it lists "
                    + indices.keySet() + ")");
        }
        return i;
    }

    private List<Counter> netlinkPort(String device, int port) {
        int dev = index(device);
        try (NetlinkSocket s = new NetlinkSocket(NETLINK_TIMEOUT_MS)) {
            List<Netlink.Message> answer = s.exchange(Netlink.request(Netlink.CMD_STAT_GET, false,
                    NetlinkSocket.nextSeq(), Netlink.ATTR_DEV_INDEX, dev, Netlink.ATTR_PORT_INDEX, port), false,
                    "RDMA_NLDEV_CMD_STAT_GET " + device + "/" + port);
            for (Netlink.Message m : answer) {
                Netlink.Attr hw = m.find(Netlink.ATTR_STAT_HWCOUNTERS);
                if (hw != null) {
                    return new ArrayList<>(Netlink.hwCounters(hw));
                }
            }
            throw new IllegalArgumentException("the kernel's STAT_GET answer for " + device + "/" + port
                    + " holds no hardware counters");
        }
    }

    /**
     * The per-QP counters of one queue pair, where the driver binds counters to QPs (mlx5, ionic,
     * after {@code rdma statistic qp set link DEV/PORT auto type on}, which needs CAP_NET_ADMIN,
     * before the QP is created). On rxe and siw the kernel never binds one: the answer says
     * "unsupported" and why.
     *
     * @param device the device name
     * @param port   the port number
     * @param qpn    the queue pair number
     * @return the counters or the reason there are none (never null)
     */
    public QpCounters qpCounters(String device, int port, int qpn) {
        if (!netlinkAvailable()) {
            return new QpCounters(device, port, qpn, false, -1, List.of(), "unsupported: per-QP counters are read"
                    + " through netlink only, and " + netlinkStatus().orElse("it is unavailable"));
        }
        List<Netlink.Message> answer;
        try (NetlinkSocket s = new NetlinkSocket(NETLINK_TIMEOUT_MS)) {
            answer = s.exchange(Netlink.request(Netlink.CMD_STAT_GET, true, NetlinkSocket.nextSeq(),
                    Netlink.ATTR_DEV_INDEX, index(device), Netlink.ATTR_PORT_INDEX, port, Netlink.ATTR_STAT_RES,
                    Netlink.ATTR_RES_QP), true, "RDMA_NLDEV_CMD_STAT_GET (QP counters) " + device + "/" + port);
        } catch (VerbsException | IllegalArgumentException | java.util.NoSuchElementException e) {
            return new QpCounters(device, port, qpn, false, -1, List.of(), "unsupported: the kernel refused the"
                    + " per-QP counter dump: " + e.getMessage());
        }
        for (Netlink.Message m : answer) {
            List<Integer> qpns = new ArrayList<>();
            Netlink.collectU32(m.attributes(), Netlink.ATTR_RES_LQPN, qpns, 0);
            Netlink.Attr hw = m.find(Netlink.ATTR_STAT_HWCOUNTERS);
            Netlink.Attr id = m.find(Netlink.ATTR_STAT_COUNTER_ID);
            if (qpns.contains(qpn) && hw != null) {
                return new QpCounters(device, port, qpn, true, id == null ? -1 : id.u32(), Netlink.hwCounters(hw), "");
            }
        }
        return new QpCounters(device, port, qpn, false, -1, List.of(), "unsupported: no per-QP counter is bound to QP "
                + qpn + " on " + device + "/" + port + " (" + answer.size() + " counter objects on the port). Drivers"
                + " that bind counters (mlx5, ionic) need `rdma statistic qp set link " + device + "/" + port
                + " auto type on` (CAP_NET_ADMIN) before the QP is created; rxe and siw bind none");
    }

    /**
     * The RDMA objects this process holds on a device, from the kernel's resource tracker over
     * netlink. The tracker records the thread that created each object: objects made by a thread
     * of this process that has since exited are not counted.
     *
     * @param device the device name
     * @return the counts, or empty when netlink is unavailable or the kernel refused the dump
     */
    public Optional<ProcessResources> processResources(String device) {
        if (!netlinkAvailable()) {
            return Optional.empty();
        }
        // The tracker names the creating thread (its task id), not the process: compare with every live thread of ours.
        java.util.Set<Integer> threads = new java.util.HashSet<>(List.of((int) ProcessHandle.current().pid()));
        try (DirectoryStream<Path> tasks = Files.newDirectoryStream(Path.of("/proc/self/task"))) {
            for (Path t : tasks) {
                threads.add(Integer.parseInt(t.getFileName().toString()));
            }
        } catch (IOException | NumberFormatException e) {
            // only the process id then
        }
        try (NetlinkSocket s = new NetlinkSocket(NETLINK_TIMEOUT_MS)) {
            int dev = index(device);
            int[] counts = new int[4];
            int[] ops = {Netlink.CMD_RES_QP_GET, Netlink.CMD_RES_CQ_GET, Netlink.CMD_RES_MR_GET, Netlink.CMD_RES_PD_GET};
            for (int i = 0; i < ops.length; i++) {
                for (Netlink.Message m : s.exchange(Netlink.request(ops[i], true, NetlinkSocket.nextSeq(),
                        Netlink.ATTR_DEV_INDEX, dev), true, "RDMA_NLDEV resource dump " + ops[i] + " " + device)) {
                    List<Integer> pids = new ArrayList<>();
                    Netlink.collectU32(m.attributes(), Netlink.ATTR_RES_PID, pids, 0);
                    for (int p : pids) {
                        if (threads.contains(p)) {
                            counts[i]++;
                        }
                    }
                }
            }
            return Optional.of(new ProcessResources(device, counts[0], counts[1], counts[2], counts[3]));
        } catch (VerbsException | IllegalArgumentException | java.util.NoSuchElementException e) {
            return Optional.empty();
        }
    }
}
