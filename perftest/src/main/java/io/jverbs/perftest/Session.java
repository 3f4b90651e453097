package io.jverbs.perftest;

import io.jverbs.Access;
import io.jverbs.CompletionQueue;
import io.jverbs.Context;
import io.jverbs.DatagramQueuePair;
import io.jverbs.cm.RdmaCm;
import io.jverbs.Endpoint;
import io.jverbs.Gid;
import io.jverbs.ProtectionDomain;
import io.jverbs.QueuePair;
import io.jverbs.QueuePairConfig;
import io.jverbs.Rdma;
import io.jverbs.RegisteredBuffer;
import io.jverbs.RemoteBuffer;
import io.jverbs.ibverbs.VerbsException;

import java.lang.foreign.MemorySegment;
import java.util.HexFormat;
import java.util.NoSuchElementException;
import java.util.concurrent.ThreadLocalRandom;

/**
 * The RDMA side of one run, laid out as C perftest lays it out: one registered buffer of
 * {@code 2 × qps} slots of {@code BUFF = max(size, cycle_buffer)} bytes (rounded up to 64); slot
 * {@code i} is queue pair {@code i}'s source, slot {@code qps + i} is what the peer of queue pair
 * {@code i} writes into, reads from or runs atomics on (the vaddr it is told). One completion
 * queue serves every queue pair, both directions.
 */
final class Session implements AutoCloseable {
    final Context context;
    final Context.PortAttributes port;
    final boolean useGid;
    final Gid gid;
    final ProtectionDomain pd;
    final CompletionQueue cq;
    /** The connected queue pairs (RC or UC); empty under {@code -c UD}. */
    final QueuePair[] qps;
    /** {@code -c UD}: the datagram queue pairs, one per {@code -q}; null otherwise. */
    final DatagramQueuePair[] datagrams;
    /** {@code -c UD}: each datagram queue pair's address handle to its peer, once the records are in. */
    DatagramQueuePair.Destination[] destinations;
    private final TestSpec c;
    RegisteredBuffer buffer;
    MemorySegment memory;
    long slot;
    final int outReads;
    /** The inline size asked of the queue pairs: {@code -I}, or C's default for this device ({@link TestSpec#defaultInline}). */
    final int inline;
    final int maxInline;
    QpRecord[] mine;
    QpRecord[] theirs;
    RemoteBuffer[] remote;
    /** A warm-up twin ({@link #loopbackPair}): close releases only its own queue pair, CQ and buffer. */
    private final boolean twin;

    /**
     * Opens the device and makes the queue pairs the test asks for.
     *
     * @param c the test
     * @param streams where C's notes on the device go (null: nowhere)
     */
    Session(TestSpec c, Streams streams) {
        this.c = c;
        this.streams = streams;
        this.twin = false;
        String name = c.device();
        if (name == null) {
            Rdma.DeviceList list = Rdma.devices();
            if (!list.any()) {
                throw new PerftestException("No IB devices found: " + list.reason());
            }
            name = list.devices().get(0).name();
        }
        try {
            context = Rdma.open(name);
        } catch (NoSuchElementException e) {
            throw new PerftestException("IB device " + name + " not found: " + e.getMessage(), e);
        } catch (VerbsException | UnsupportedOperationException e) {
            throw new PerftestException("Couldn't open " + name + ": " + e.getMessage(), e);
        }
        try {
            port = context.port(c.ibPort());
            if (!port.isActive()) {
                throw new PerftestException("port " + c.ibPort() + " of " + name + " is not ACTIVE");
            }
            String link = port.isEthernet() ? "Ethernet" : "IB";
            if (c.extras().forceLink() != null && !c.extras().forceLink().equals(link)) {
                throw PerftestException.refusedHere("--force-link " + c.extras().forceLink() + ": port " + c.ibPort()
                        + " of " + name + " is " + link + " (jverbs does not override the port's link layer)");
            }
            useGid = port.isEthernet() || c.gidIndex() != null;
            if (useGid) {
                gid = c.gidIndex() != null ? context.gid(c.ibPort(), c.gidIndex())
                        : c.extras().ipv6() ? ipv6Gid(context, c.ibPort()) : context.chooseGid(c.ibPort());
                if (gid.isEmpty()) {
                    throw new PerftestException("GID index " + gid.index() + " of " + name + " port " + c.ibPort()
                            + " is empty: choose another -x (ibv_devinfo -v lists the table)");
                }
            } else {
                gid = null;
            }
            Context.DeviceAttributes attributes = context.deviceAttributes();
            inline = c.defaultInline(attributes.vendorId());
            if (streams != null && c.inlineNote(attributes.vendorId())) {
                streams.out().println(Report.LINE); // as C: a dashed line on stdout, the note on stderr
                streams.out().flush();
                streams.err().println("Device not recognized to implement inline feature. Disabling it");
                streams.err().flush();
            }
            int deviceRdAtom = attributes.maxQpRdAtomic();
            outReads = c.verb() == Verb.READ || c.verb() == Verb.ATOMIC
                    ? outstandingReads(c, streams != null ? streams.err() : null, deviceRdAtom) : 1;
            pd = context.allocateProtectionDomain();
            cq = completionQueue(c.qps(), true);
            if (c.ud()) {
                qps = new QueuePair[0];
                datagrams = new DatagramQueuePair[c.qps()];
                for (int i = 0; i < c.qps(); i++) {
                    datagrams[i] = createDatagram();
                }
                maxInline = 0;
            } else {
                datagrams = null;
                qps = new QueuePair[c.qps()];
                for (int i = 0; i < c.qps(); i++) {
                    qps[i] = pd.createQueuePair(queuePairConfig().withRoute(c.extras().route(i)));
                }
                maxInline = qps[0].maxInlineData();
            }
        } catch (RuntimeException e) {
            context.close();
            if (e instanceof VerbsException v) {
                throw new PerftestException(v.getMessage(), v);
            }
            throw e;
        }
    }

    /**
     * The completion queue of {@code queuePairs} data queue pairs: their send and receive depths,
     * with events for -e. {@code confined}: confined to this thread (no lock per poll, and the
     * queue pairs on it confined too, no lock per post), for a session whose one thread posts,
     * polls and closes, as C's single-threaded loops do; in one rig boot that brought Java's
     * read_lat 2 B t_min from 1.05x C to 1.01x. Events (-e) need the shared kind with a channel,
     * and -c UD's datagram queue pairs post under their own lock, so both stay shared.
     */
    private CompletionQueue completionQueue(int queuePairs, boolean confined) {
        // what each queue pair can have outstanding on it: its send and receive depths (a datagram
        // queue pair has the larger of the two for both)
        int perQp = c.ud() ? 2 * Math.max(c.tx(), c.rx()) : c.tx() + (c.verb() == Verb.SEND ? c.rx() : 1);
        if (c.events() && c.extras().vector() >= context.completionVectors()) {
            throw new PerftestException(" Completion vector specified is invalid (" + context.name() + " has "
                    + context.completionVectors() + ")");
        }
        return c.events() ? context.createCompletionQueueWithEvents(perQp * queuePairs, c.extras().vector())
                : confined && !c.ud() ? context.createConfinedCompletionQueue(perQp * queuePairs)
                : context.createCompletionQueue(perQp * queuePairs);
    }

    /**
     * A datagram queue pair on {@link #cq}, both depths the larger of -t and -r, -i's port, this
     * side's GID, and C's Q_Key: 0x11111111, or under -R the one rdma_cm's UDP port space gives
     * every queue pair (C's rdma_create_qp there; a C peer sends with it).
     */
    private DatagramQueuePair createDatagram() {
        return DatagramQueuePair.create(pd, cq, Math.max(c.tx(), c.rx()), qkey(), c.ibPort(), gid != null ? gid.index() : -1);
    }

    /** The Q_Key of this side's datagram queue pairs, and of the peer's. */
    int qkey() {
        return c.rdmaCm() ? RdmaCm.UDP_QKEY : DatagramQueuePair.DEFAULT_QKEY;
    }

    /** This side's MTU (the enum, 1 = 256 B … 5 = 4096 B): {@code -m}, or the port's active MTU. */
    int mtuEnum() {
        return c.mtuEnum() != 0 ? c.mtuEnum() : port.activeMtu();
    }

    /** How many queue pairs (connected or datagram) this side runs: {@code -q}. */
    int count() {
        return datagrams != null ? datagrams.length : qps.length;
    }

    /** Bytes a receive takes: the message, plus the routing header a datagram receive starts with. */
    int receiveLength(int size) {
        return datagrams != null ? size + DatagramQueuePair.GRH_BYTES : size;
    }

    /** A data queue pair's configuration on {@link #cq}, from the command line (depths, inline, port, GID, moderation). */
    private QueuePairConfig queuePairConfig() {
        // C perftest's retry 7 / RNR retry 7 and RNR timer 12, so a Java side behaves as a C side would
        return new QueuePairConfig(cq, cq, c.tx(), c.verb() == Verb.SEND ? c.rx() : 1, inline, c.ibPort(),
                gid != null ? gid.index() : -1, c.cqMod(), c.qpTimeout(), c.extras().retryCount(), 7, outReads,
                cq.isConfined(), c.connection().equals("UC") ? QueuePairConfig.Transport.UC : QueuePairConfig.Transport.RC,
                12, null, QueuePairConfig.DEFAULT_OPERATION_TIMEOUT, io.jverbs.Route.DEFAULT);
    }

    /**
     * A warm-up twin of {@code base}: its context, port, GID and protection domain, and its own
     * completion queue, one queue pair made with the same configuration as the session's, and a
     * buffer of two {@code slot}-byte slots open to every remote access; under {@code -c UD} a
     * datagram queue pair instead (on a shared queue, as the session's). {@code confined} for the
     * twin the creating thread runs; the other runs on the warm-up's peer thread (shared), so the
     * warm-up profiles both branches of the lock the measured loops take.
     */
    private Session(Session base, long slot, boolean confined) {
        this.c = base.c;
        this.streams = null;
        this.twin = true;
        this.context = base.context;
        this.port = base.port;
        this.useGid = base.useGid;
        this.gid = base.gid;
        this.pd = base.pd;
        this.outReads = base.outReads;
        this.inline = base.inline;
        boolean ud = base.datagrams != null;
        this.cq = completionQueue(1, confined);
        this.datagrams = ud ? new DatagramQueuePair[1] : null;
        this.qps = new QueuePair[ud ? 0 : 1];
        try {
            if (ud) {
                datagrams[0] = createDatagram();
                this.maxInline = 0;
            } else {
                qps[0] = pd.createQueuePair(queuePairConfig());
                this.maxInline = qps[0].maxInlineData();
            }
            this.slot = slot;
            this.buffer = pd.allocate(2 * slot, Access.REMOTE_WRITE, Access.REMOTE_READ, Access.REMOTE_ATOMIC);
            this.memory = buffer.segment();
        } catch (RuntimeException e) {
            close();
            throw e;
        }
    }

    /**
     * Two twins of the session connected to each other on the same device, for the warm-up: the
     * measured loops run on them exactly as on the real queue pairs, and nothing reaches the peer.
     * Close both when done; the session itself stays open.
     *
     * @param size the largest message the warm-up sends
     * @return {server twin, client twin}, each one's remote buffer the other's target slot (under
     *         {@code -c UD}: each one's destination the other's datagram queue pair)
     */
    Session[] loopbackPair(int size) {
        long twinSlot = align64(Math.max(receiveLength(size), 4096));
        Session a = new Session(this, twinSlot, false);
        Session b = null;
        try {
            b = new Session(this, twinSlot, true);
            a.remote = new RemoteBuffer[] {b.buffer.remote(b.targetOffset(0), twinSlot)};
            b.remote = new RemoteBuffer[] {a.buffer.remote(a.targetOffset(0), twinSlot)};
            if (datagrams != null) {
                // -c UD: an address handle to each other, as connect(int) makes to the peer
                a.destinations = new DatagramQueuePair.Destination[] {a.datagrams[0].destination(b.datagrams[0].address())};
                b.destinations = new DatagramQueuePair.Destination[] {b.datagrams[0].destination(a.datagrams[0].address())};
            } else {
                a.qps[0].connect(b.qps[0].localEndpoint());
                b.qps[0].connect(a.qps[0].localEndpoint());
            }
            return new Session[] {a, b};
        } catch (RuntimeException e) {
            a.close();
            if (b != null) {
                b.close();
            }
            throw e;
        }
    }

    /**
     * Allocates and registers the buffer once the cycle buffer is agreed (the larger page size of the two sides).
     *
     * @param cycleBuffer the agreed cycle buffer size
     * @param size the largest message the run sends (under {@code -c UD}, fitted to the agreed MTU)
     */
    void allocate(int cycleBuffer, int size) {
        try {
            slot = align64(Math.max(receiveLength(size), cycleBuffer));
            Access access = switch (c.verb()) {
                case WRITE -> Access.REMOTE_WRITE;
                case READ -> Access.REMOTE_READ;
                case ATOMIC -> Access.REMOTE_ATOMIC;
                case SEND -> Access.REMOTE_WRITE;
            };
            if (c.extras().mmapFile() != null) {
                buffer = mapped(c.extras().mmapFile(), c.extras().mmapOffset(), 2 * c.qps() * slot, access);
            } else {
                buffer = pd.allocate(2 * c.qps() * slot, c.extras().relaxedOrdering(), access);
            }
            memory = buffer.segment();
            byte[] payload = c.extras().payload();
            if (payload != null && (c.kind() == Kind.BW || c.verb() != Verb.WRITE)) {
                // --payload_file_path: the file's pattern, repeated (write_lat's buffers stay zeroed, as C's)
                for (long off = 0; off < memory.byteSize(); off += payload.length) {
                    MemorySegment.copy(payload, 0, memory, java.lang.foreign.ValueLayout.JAVA_BYTE, off,
                            (int) Math.min(payload.length, memory.byteSize() - off));
                }
            } else if (c.kind() == Kind.BW || c.verb() != Verb.WRITE) {
                // C fills its buffers with random bytes (write_lat's stay zeroed: their last byte is the signal)
                byte[] noise = new byte[(int) Math.min(memory.byteSize(), 1 << 20)];
                ThreadLocalRandom.current().nextBytes(noise);
                for (long off = 0; off < memory.byteSize(); off += noise.length) {
                    MemorySegment.copy(noise, 0, memory, java.lang.foreign.ValueLayout.JAVA_BYTE, off,
                                (int) Math.min(noise.length, memory.byteSize() - off));
                }
            }
        } catch (VerbsException e) {
            throw new PerftestException(e.getMessage(), e);
        }
    }

    /** Where C's notes go (null: nowhere, a warm-up twin's). */
    private final Streams streams;
    /** --mmap's mapping: unmapped once the context (and with it the registration) is closed. */
    private java.lang.foreign.Arena mapArena;

    /**
     * --mmap: the buffer is {@code bytes} of {@code file} from {@code offset}, mapped shared and
     * registered, as C's (the run's fill writes into the file, as C's does). The file must exist;
     * it grows when shorter (C's mapping would fault beyond its end instead).
     */
    private RegisteredBuffer mapped(java.nio.file.Path file, long offset, long bytes, Access access) {
        if (offset % 4096 != 0) {
            throw new PerftestException("Unable to mmap '" + file + "': Invalid argument (--mmap-offset " + offset
                    + " is not a multiple of the page size)");
        }
        java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofShared();
        MemorySegment segment;
        try (java.nio.channels.FileChannel ch = java.nio.channels.FileChannel.open(file,
                java.nio.file.StandardOpenOption.READ, java.nio.file.StandardOpenOption.WRITE)) {
            segment = ch.map(java.nio.channels.FileChannel.MapMode.READ_WRITE, offset, bytes, arena);
        } catch (java.io.IOException | RuntimeException e) {
            arena.close();
            throw new PerftestException("Unable to open '" + file + "': " + e);
        }
        mapArena = arena;
        if (streams != null) {
            streams.out().printf("allocated mmap buffer of size %d at 0x%x%n", bytes, segment.address());
            streams.out().flush();
        }
        return pd.register(arena, segment, c.extras().relaxedOrdering(), access);
    }

    /** --ipv6 without -x: the first RoCE v2 GID that is not IPv4-mapped, else what {@link Context#chooseGid} picks. */
    private static io.jverbs.Gid ipv6Gid(Context context, int port) {
        Context.PortAttributes attrs = context.port(port);
        for (int i = 0; i < attrs.gidTableLength(); i++) {
            try {
                io.jverbs.Gid g = context.gid(port, i);
                if (!g.isEmpty() && g.isRoceV2() && !g.isIpv4Mapped()) {
                    return g;
                }
            } catch (VerbsException e) {
                // an unreadable entry is skipped, as chooseGid skips it
            }
        }
        return context.chooseGid(port);
    }

    static long align64(long n) {
        return (n + 63) & ~63L;
    }

    /** This side's records: real queue pair data, one per queue pair (C never sends dummies). */
    QpRecord[] records() {
        QpRecord[] r = new QpRecord[count()];
        for (int i = 0; i < r.length; i++) {
            int lid;
            int qpn;
            int psn;
            if (datagrams != null) {
                DatagramQueuePair.Address a = datagrams[i].address();
                lid = a.lid();
                qpn = a.qpn();
                psn = 0; // a datagram queue pair has no receive PSN the peer needs
            } else {
                Endpoint e = qps[i].localEndpoint();
                lid = e.lid();
                qpn = e.qpn();
                psn = e.psn();
            }
            r[i] = new QpRecord(useGid ? 0 : lid, outReads, qpn, psn, buffer.rkey(), buffer.address() + targetOffset(i),
                    useGid ? gid.bytes() : null, 0);
        }
        mine = r;
        return r;
    }

    /** The latency loop's prepared request ({@link #latencyRequest}), kept while the size stays. */
    private io.jverbs.PreparedRequest latencyRequest;

    /**
     * The prepared request of the latency loops on queue pair 0 — Write or Read from its source
     * slot to the peer's target slot, or Send from its source slot — for {@code size} bytes: made
     * once per size (the warm-up's rounds and the measured loop reuse it), as C perftest fills its
     * request once. Null for atomics and {@code -c UD}.
     */
    io.jverbs.PreparedRequest latencyRequest(int size) {
        if (qps.length == 0 || c.verb() == Verb.ATOMIC) {
            return null;
        }
        if (latencyRequest == null || latencyRequest.length() != size) {
            QueuePair qp = qps[0];
            latencyRequest = c.verb() == Verb.WRITE ? qp.prepareWrite(buffer, sourceOffset(0), size, remote[0], 0)
                    : c.verb() == Verb.READ ? qp.prepareRead(buffer, sourceOffset(0), size, remote[0], 0)
                    : qp.prepareSend(buffer, sourceOffset(0), size);
        }
        return latencyRequest;
    }

    /** Offset of queue pair {@code i}'s source slot. */
    long sourceOffset(int i) {
        return i * slot;
    }

    /** Offset of the slot the peer of queue pair {@code i} targets. */
    long targetOffset(int i) {
        return (count() + i) * slot;
    }

    /**
     * Checks the peer's first records against this side (GID form and type, unless
     * {@code checkGids} is false) and remembers them.
     *
     * @throws PerftestException naming a GID type or index mismatch
     */
    void accept(QpRecord[] peer, int size, int cycleBuffer, boolean checkGids) {
        for (QpRecord r : peer) {
            if (!checkGids) {
                break; // -R: rdma_cm chose the path; C checks no GIDs either
            }
            if (useGid && r.ipv4Mapped() != gid.isIpv4Mapped()) {
                throw new PerftestException("Found Incompatibility issue with GID types: this side uses GID index "
                        + gid.index() + " (" + describe(gid.bytes()) + ", " + (gid.type().isEmpty() ? "type unknown" : gid.type())
                        + ") but the peer's GID is " + describe(r.gid()) + ": give both sides -x with the same kind of GID"
                        + " (IPv4-mapped RoCE v2, index 1 on rxe)");
            }
            if (useGid && isZero(r.gid())) {
                throw new PerftestException("the peer sent an empty GID: its -x index points at an unused GID table entry");
            }
        }
        theirs = peer;
        remote = new RemoteBuffer[peer.length];
        for (int i = 0; i < peer.length; i++) {
            remote[i] = new RemoteBuffer(peer[i].vaddr(), Math.max(size, cycleBuffer), peer[i].rkey());
        }
    }

    static String describe(byte[] gid) {
        boolean mapped = true;
        for (int i = 0; i < 10; i++) {
            mapped &= gid[i] == 0;
        }
        mapped &= gid[10] == (byte) 0xff && gid[11] == (byte) 0xff;
        if (mapped) {
            return "::ffff:" + (gid[12] & 0xff) + "." + (gid[13] & 0xff) + "." + (gid[14] & 0xff) + "." + (gid[15] & 0xff)
                    + ", IPv4-mapped";
        }
        String hex = HexFormat.of().formatHex(gid);
        StringBuilder s = new StringBuilder();
        for (int i = 0; i < 32; i += 4) {
            s.append(i == 0 ? "" : ":").append(hex, i, i + 4);
        }
        return s + ((gid[0] & 0xff) == 0xfe && (gid[1] & 0xc0) == 0x80 ? ", link-local, not IPv4-mapped" : ", not IPv4-mapped");
    }

    private static boolean isZero(byte[] b) {
        for (byte x : b) {
            if (x != 0) {
                return false;
            }
        }
        return true;
    }

    /**
     * Connects every queue pair to its peer (INIT → RTR → RTS); under {@code -c UD}, makes each
     * datagram queue pair's address handle to its peer instead (C's Q_Key).
     */
    void connect(int mtuEnum) {
        if (datagrams != null) {
            destinations = new DatagramQueuePair.Destination[datagrams.length];
        }
        for (int i = 0; i < count(); i++) {
            QpRecord r = theirs[i];
            byte[] g = r.gid() != null ? r.gid() : new byte[16];
            try {
                if (datagrams != null) {
                    destinations[i] = datagrams[i].destination(new DatagramQueuePair.Address(r.qpn() & 0xffffff,
                            qkey(), r.lid() & 0xffff, g), c.extras().route(i));
                } else {
                    qps[i].connect(new Endpoint(r.qpn() & 0xffffff, r.psn() & 0xffffff, r.lid() & 0xffff, g, mtuEnum));
                }
            } catch (VerbsException e) {
                throw new PerftestException((datagrams != null ? "Failed to create the address handle of QP "
                        + datagrams[i].number() : "Failed to modify QP " + qps[i].number() + " to RTR/RTS") + ": "
                        + e.getMessage(), e);
            }
        }
    }

    @Override
    public void close() {
        if (!twin) {
            context.close();
            if (mapArena != null) {
                mapArena.close();
            }
            return;
        }
        for (QueuePair qp : qps) {
            if (qp != null) {
                qp.close();
            }
        }
        if (datagrams != null && datagrams[0] != null) {
            datagrams[0].close();
        }
        if (buffer != null) {
            buffer.close();
        }
        cq.close();
    }

    /**
     * The outstanding reads/atomics, as C's {@code ctx_set_out_reads}: {@code -o} above the device's
     * {@code max_qp_rd_atom} is lowered to it with C's note on stderr; absent, 0 or less is that max.
     *
     * @param c the test
     * @param err where the note goes (null: nowhere)
     * @param deviceRdAtom the device's {@code max_qp_rd_atom}
     * @return the outstanding reads/atomics to ask of the queue pairs
     */
    static int outstandingReads(TestSpec c, java.io.PrintWriter err, int deviceRdAtom) {
        int max = Math.max(1, Math.min(255, deviceRdAtom));
        if (c.outs() == null || c.outs() <= 0) {
            return max;
        }
        if (c.outs() > max) {
            if (err != null) {
                err.println(" Number of outstanding reads is above max = " + max);
                err.println(" Changing to that max value");
                err.flush();
            }
            return max;
        }
        return c.outs();
    }

}
