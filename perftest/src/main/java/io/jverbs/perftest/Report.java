package io.jverbs.perftest;

import org.HdrHistogram.Histogram;

import java.io.PrintWriter;
import java.math.BigDecimal;
import java.math.MathContext;
import java.util.Locale;

/** The C perftest's printed output: header box, address lines, tables; plus jverbs' HdrHistogram lines. */
final class Report {
    static final String LINE = "-".repeat(87);
    private final TestSpec c;
    private final PrintWriter out;
    /** --output: print only that number (null: the whole report). */
    private final String output;
    /** -C: CPU cycles a microsecond (0: microseconds). */
    private final double cyclesPerUsec;
    /** -W: the sysfs counters printed after each row, or null. */
    SysfsCounters counters;
    /** --cpu_util's value for the next row (0.00 for a row this side did not measure, as C's). */
    double cpuUtil;

    /**
     * A report of one test.
     *
     * @param c the test
     * @param out where it prints (stdout)
     */
    Report(TestSpec c, PrintWriter out) {
        this.c = c;
        this.out = out;
        this.output = c.extras().output();
        this.cyclesPerUsec = c.extras().reportCycles() ? cpuMhz() : 0;
    }

    /** Whether the whole report prints (no --output). */
    boolean full() {
        return output == null;
    }

    /** The CPU's MHz from /proc/cpuinfo (C's get_cpu_mhz reads it there too). */
    static double cpuMhz() {
        try (var lines = java.nio.file.Files.lines(java.nio.file.Path.of("/proc/cpuinfo"))) {
            return lines.filter(l -> l.startsWith("cpu MHz")).findFirst()
                    .map(l -> Double.parseDouble(l.substring(l.indexOf(':') + 1).trim()))
                    .orElseThrow(() -> new PerftestException("-C/--report-cycles: /proc/cpuinfo names no cpu MHz"));
        } catch (java.io.IOException | NumberFormatException e) {
            throw new PerftestException("-C/--report-cycles: cannot read the CPU's MHz from /proc/cpuinfo: " + e.getMessage());
        }
    }

    /** A latency in the report's unit: microseconds, or cycles under -C. */
    private double unit(double usec) {
        return cyclesPerUsec > 0 ? usec * cyclesPerUsec : usec;
    }

    /** C's {@code CPU_Util[%]} header column, where --cpu_util applies. */
    private String cpuHead() {
        return c.extras().cpuUtil() ? "    CPU_Util[%]" : "";
    }

    /** C's {@code CPU_Util[%]} row column (then the value is spent). */
    private String cpuCell() {
        String cell = c.extras().cpuUtil() ? String.format(Locale.ROOT, "\t    %-3.2f", cpuUtil) : "";
        cpuUtil = 0;
        return cell;
    }

    private void afterRow() {
        if (counters != null) {
            counters.print(out);
        }
        out.flush();
    }

    private void p(String format, Object... args) {
        out.print(String.format(Locale.ROOT, format, args));
    }

    void waiting() {
        if (!full()) {
            return;
        }
        out.println();
        out.println("************************************");
        out.println("* Waiting for client to connect... *");
        out.println("************************************");
        out.flush();
    }

    void header(Session s, int mtuEnum) {
        if (!full()) {
            return;
        }
        out.println(LINE);
        String title = c.verb() == Verb.ATOMIC ? "Atomic " + (c.cas() ? "CMP_AND_SWAP" : "FETCH_AND_ADD") : c.verb().title;
        // as C's title: "Bidirectional " and "Post List " before "BW " where they apply
        String kind = c.kind() == Kind.BW ? (c.bidirectional() ? "Bidirectional " : "") + (c.postList() > 1 ? "Post List " : "")
                + "BW " : "Latency ";
        out.println("                    " + title + " " + kind + "Test");
        if (c.events()) {
            out.println(" Test with events. Using " + s.context.name() + "_comp" + c.extras().vector()); // C's completion vector
        }
        p(" Dual-port       : %s\t\tDevice         : %s\n", "OFF", s.context.name());
        p(" Number of qps   : %d\t\tTransport type : %s\n", s.count(), "IB");
        p(" Connection type : %s\t\tUsing SRQ      : %s\n", c.connection(), "OFF");
        p(" PCIe relax order: %s\n", c.extras().relaxedOrdering() ? "ON" : "OFF");
        p(" ibv_wr* API     : %s\n", "OFF");
        if (!c.isServer() || c.bidirectional()) {
            p(" TX depth        : %d\n", c.tx());
        }
        if (c.postList() > 1) {
            p(" Post List       : %d\n", c.postList());
        }
        if (c.verb() == Verb.SEND && (c.isServer() || c.bidirectional())) { // as C: not on a send_lat client
            p(" RX depth        : %d\n", c.rx());
        }
        if (c.kind() == Kind.BW) {
            p(" CQ Moderation   : %d\n", c.cqMod());
        }
        p(" Mtu             : %d[B]\n", 128 << mtuEnum);
        p(" Link type       : %s\n", s.port.isEthernet() ? "Ethernet" : "IB");
        if (s.gid != null) {
            p(" GID index       : %d\n", s.gid.index());
        }
        if (c.verb() != Verb.READ && c.verb() != Verb.ATOMIC) {
            p(" Max inline data : %d[B]\n", s.maxInline);
        } else {
            p(" Outstand reads  : %d\n", s.outReads);
        }
        p(" rdma_cm QPs\t : %s\n", c.rdmaCm() ? "ON" : "OFF");
        p(" Data ex. method : %s\n", c.rdmaCm() || c.extras().commRdmaCm() ? "rdma_cm" : "Ethernet");
        out.println(LINE);
        out.flush();
    }

    void addresses(Session s) {
        if (!full()) {
            return;
        }
        for (int i = 0; i < s.mine.length; i++) {
            address("local", s.mine[i]);
            address("remote", s.theirs[i]);
        }
        out.println(LINE);
        out.flush();
    }

    private void address(String who, QpRecord r) {
        StringBuilder b = new StringBuilder(" " + who + " address: LID " + alt(r.lid(), 4) + " QPN " + alt(r.qpn(), 6)
                + " PSN " + alt(r.psn(), 6));
        // -R: C prints these lines with its control channel's verb (SEND): no OUT, RKey, VAddr
        if (c.verb() == Verb.READ && !c.rdmaCm()) {
            b.append(" OUT ").append(alt(r.outReads(), 4));
        }
        if ((c.verb() == Verb.WRITE || c.verb() == Verb.READ) && !c.rdmaCm()) {
            b.append(" RKey ").append(alt(r.rkey(), 8)).append(" VAddr ").append(alt(r.vaddr(), 16));
        }
        out.println(b);
        if (r.gid() != null) {
            StringBuilder g = new StringBuilder(" GID: ");
            for (int i = 0; i < 16; i++) {
                g.append(String.format(Locale.ROOT, "%02d", r.gid()[i] & 0xff)).append(i < 15 ? ":" : "");
            }
            out.println(g);
        }
    }

    /** C's {@code %#0Nx}: "0x" and zero padding to N characters in all, but no "0x" for 0. */
    static String alt(long value, int width) {
        String h = Long.toHexString(value);
        if (value == 0) {
            return "0".repeat(width);
        }
        int digits = Math.max(h.length(), width - 2);
        return "0x" + "0".repeat(digits - h.length()) + h;
    }

    /** C's bandwidth table header, with the CPU column where --cpu_util applies. */
    private String bwHeader() {
        return (c.reportGbits()
                ? " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]"
                : " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]") + cpuHead();
    }

    void bwHead() {
        if (!full()) {
            return;
        }
        out.println(bwHeader());
        out.flush();
    }

    void bwRow(BwLoop.BwResult r) {
        if (!full()) {
            p("%f\n", output.equals("bandwidth") ? r.avg() : r.msgRate());
            afterRow();
            return;
        }
        if (c.reportGbits() && r.avg() < 0.1) {
            p(" %-7d    %d           %-7.6f            %-7.6f            %-7.6f%s\n", r.size(), r.iters(), r.peak(),
                    r.avg(), r.msgRate(), cpuCell());
        } else {
            p(" %-7d    %-10d       %-7.2f            %-7.2f\t\t   %-7.6f%s\n", r.size(), r.iters(), r.peak(), r.avg(),
                    r.msgRate(), cpuCell());
        }
        afterRow();
    }

    /**
     * C's {@code --report-both} under {@code -b}: after the summed row, this side's and the
     * peer's tables, each under its title (not held back by --output, as C's; the rows follow it).
     */
    void bothSides(BwLoop.BwResult local, BwLoop.BwResult remote) {
        for (int i = 0; i < 2; i++) {
            out.println(LINE);
            out.print(i == 0 ? "\n Local results: \n" : "\n Remote results: \n");
            out.println(LINE);
            out.println(bwHeader());
            bwRow(i == 0 ? local : remote);
        }
    }

    void latHead() {
        if (!full()) {
            return;
        }
        out.println(c.duration()
                ? " #bytes        #iterations       t_avg[usec]    tps average" + cpuHead()
                : " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99"
                  + "% percentile[usec]   99.9% percentile[usec] ");
        out.flush();
    }

    void latRow(LatStats st) {
        if (c.unsorted()) {
            out.println(cyclesPerUsec > 0 ? "#, cycles" : "#, usec");
            for (int i = 0; i < st.unsorted().length; i++) {
                out.println((i + 1) + ", " + g(unit(st.unsorted()[i])));
            }
        }
        if (c.histogram()) {
            out.println(cyclesPerUsec > 0 ? "#, cycles" : "#, usec");
            for (int i = 0; i < st.sorted().length; i++) {
                out.println((i + 1) + ", " + g(unit(st.sorted()[i])));
            }
        }
        if (c.unsorted() || c.histogram()) {
            if (full()) {
                out.println(LINE);
            }
            latHead();
        }
        if (!full()) {
            p("%f\n", unit(st.avg()));
            afterRow();
            return;
        }
        p(" %-7d %d          %-7.2f        %-7.2f      %-7.2f  \t       %-7.2f     \t%-7.2f\t\t%-7.2f \t\t%-7.2f\n",
                st.size(), st.iters(), unit(st.min()), unit(st.max()), unit(st.typical()), unit(st.avg()),
                unit(st.stdev()), unit(st.p99()), unit(st.p999()));
        afterRow();
    }

    void latDurationRow(long size, long iters, double avgUsec, double tps) {
        if (!full()) {
            p("%f\n", avgUsec);
            afterRow();
            return;
        }
        p(" %-7d       %d            %-7.2f        %-7.2f%s\n", size, iters, avgUsec, tps, cpuCell()); // -C does not apply, as C's
        afterRow();
    }

    /**
     * jverbs' addition after the C table: HdrHistogram percentiles of one size's gaps, in usec, over
     * the same samples as the row (without the slowest {@link LatStats#TAIL} in iteration mode).
     *
     * @param size      the message size of the row
     * @param h         the histogram
     * @param tailLeftOut whether the row's tail was left out (iteration mode)
     * @return the line, printed after the table so that the table stays C's
     */
    static String hdr(long size, Histogram h, boolean tailLeftOut) {
        return String.format(Locale.ROOT, " HdrHistogram[usec]: p50 %.2f  p90 %.2f  p99 %.2f  p99.9 %.2f  p99.99 %.2f"
                        + "  max %.2f  (%d samples of %d B%s)",
                h.getValueAtPercentile(50) / 1e3, h.getValueAtPercentile(90) / 1e3, h.getValueAtPercentile(99) / 1e3,
                h.getValueAtPercentile(99.9) / 1e3, h.getValueAtPercentile(99.99) / 1e3, h.getMaxValue() / 1e3,
                h.getTotalCount(), size, tailLeftOut ? ", the " + LatStats.TAIL + " slowest left out as in the row" : "");
    }

    /** Prints lines as they are, on {@code out}. */
    static void lines(PrintWriter out, java.util.List<String> lines) {
        for (String l : lines) {
            out.println(l);
        }
        out.flush();
    }

    void line() {
        if (!full()) {
            return;
        }
        out.println(LINE);
        out.flush();
    }

    /** C's {@code %g}: 6 significant digits, trailing zeros dropped. */
    static String g(double v) {
        if (v == 0) {
            return "0";
        }
        BigDecimal d = new BigDecimal(v).round(new MathContext(6));
        int exp = d.precision() - d.scale() - 1;
        if (exp < -4 || exp >= 6) {
            String s = String.format(Locale.ROOT, "%.5e", v);
            String mant = s.substring(0, s.indexOf('e'));
            if (mant.contains(".")) {
                mant = mant.replaceAll("0+$", "").replaceAll("\\.$", "");
            }
            String e = s.substring(s.indexOf('e') + 1);
            int ev = Integer.parseInt(e);
            return mant + "e" + (ev < 0 ? "-" : "+") + String.format(Locale.ROOT, "%02d", Math.abs(ev));
        }
        return d.stripTrailingZeros().toPlainString();
    }
}
