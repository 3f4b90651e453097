package io.jverbs.perftest;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.HistogramLogWriter;
import org.jfree.chart.ChartFactory;
import org.jfree.chart.ChartUtils;
import org.jfree.chart.JFreeChart;
import org.jfree.chart.axis.LogAxis;
import org.jfree.chart.plot.PlotOrientation;
import org.jfree.chart.plot.XYPlot;
import org.jfree.data.xy.XYSeries;
import org.jfree.data.xy.XYSeriesCollection;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** What a run leaves in files: the JSON report (once, at the end), the HdrHistogram log, the PNG plot. */
final class Outputs {
    // Plain maps until the end: Jackson is loaded only when a JSON report is written (class loading
    // costs seconds in an emulated guest).
    private final Map<String, Object> root = new LinkedHashMap<>();
    private final List<Map<String, Object>> results = new ArrayList<>();
    private final boolean cpuColumn;

    Outputs(TestSpec c, Session s, int mtuEnum) {
        cpuColumn = c.extras().cpuUtil();
        Map<String, Object> info = new LinkedHashMap<>();
        root.put("test_info", info);
        String title = c.verb() == Verb.ATOMIC ? "Atomic_" + (c.cas() ? "CMP_AND_SWAP" : "FETCH_AND_ADD") : c.verb().title;
        info.put("test", title + (c.kind() == Kind.BW ? "_BW_Test" : "_Latency_Test"));
        info.put("implementation", "jverbs-perftest");
        info.put("role", c.isServer() ? "server" : "client");
        // C's test_info keys, with what jverbs does (see the header box in Report)
        info.put("Dual_port", "OFF");
        info.put("Device", s.context.name());
        info.put("Number_of_qps", s.count());
        info.put("Transport_type", "IB");
        info.put("Connection_type", c.connection());
        info.put("Using_SRQ", "OFF");
        info.put("PCIe_relax_order", c.extras().relaxedOrdering() ? "ON" : "OFF");
        info.put("ibv_wr_API", "OFF");
        info.put("TX_depth", c.tx());
        if (c.verb() == Verb.SEND) {
            info.put("RX_depth", c.rx());
        }
        if (c.kind() == Kind.BW) {
            info.put("CQ_Moderation", c.cqMod());
        }
        info.put("Mtu", 128 << mtuEnum);
        info.put("Link_type", s.port.isEthernet() ? "Ethernet" : "IB");
        if (s.gid != null) {
            info.put("GID_index", s.gid.index());
        }
        info.put("Max_inline_data", s.maxInline);
        info.put("Outstand_reads", s.outReads);
        info.put("rdma_cm_QPs", c.rdmaCm() ? "ON" : "OFF");
        info.put("Data_ex_method", c.rdmaCm() || c.extras().commRdmaCm() ? "rdma_cm" : "Ethernet");
        info.put("bidirectional", c.bidirectional());
        info.put("duration_s", c.durationSec());
        info.put("units", units(c));
    }

    /** The unit of the results: C's table heads ({@code BW average[MB/sec]}, {@code t_avg[usec]}). */
    static String units(TestSpec c) {
        return c.kind() == Kind.LAT ? "usec" : c.reportGbits() ? "Gb/sec" : "MB/sec";
    }

    /** --cpu_util's value for the next result (0 for a result this side did not measure, as C's). */
    double cpuUtil;

    void bw(BwLoop.BwResult r) {
        Map<String, Object> o = new LinkedHashMap<>();
        results.add(o);
        o.put("MsgSize", r.size());
        o.put("n_iterations", r.iters());
        o.put("BW_peak", round(r.peak(), 2));
        o.put("BW_average", round(r.avg(), 2));
        o.put("MsgRate", round(r.msgRate(), 6));
        cpu(o);
    }

    /** C's CPU_Util key (percent), where --cpu_util applies. */
    private void cpu(Map<String, Object> o) {
        if (cpuColumn) {
            o.put("CPU_Util", round(cpuUtil, 2));
        }
        cpuUtil = 0;
    }

    void lat(LatStats st, Histogram h) {
        Map<String, Object> o = new LinkedHashMap<>();
        results.add(o);
        o.put("MsgSize", st.size());
        o.put("n_iterations", st.iters());
        o.put("t_min", round(st.min(), 2));
        o.put("t_max", round(st.max(), 2));
        o.put("t_typical", round(st.typical(), 2));
        o.put("t_avg", round(st.avg(), 2));
        o.put("t_stdev", round(st.stdev(), 2));
        o.put("percentile_99", round(st.p99(), 2));
        o.put("percentile_99.9", round(st.p999(), 2));
        hdr(o, h);
    }

    void latDuration(long size, long iters, double avg, double tps, Histogram h) {
        Map<String, Object> o = new LinkedHashMap<>();
        results.add(o);
        o.put("MsgSize", size);
        o.put("n_iterations", iters);
        o.put("t_avg", round(avg, 2));
        o.put("tps_average", round(tps, 2));
        cpu(o);
        hdr(o, h);
    }

    private static void hdr(Map<String, Object> o, Histogram h) {
        Map<String, Object> p = new LinkedHashMap<>();
        o.put("hdr_percentiles_usec", p);
        for (double q : new double[] {50, 90, 99, 99.9, 99.99}) {
            p.put("p" + (q == Math.rint(q) ? Long.toString((long) q) : Double.toString(q)), round(h.getValueAtPercentile(q) / 1e3, 3));
        }
        p.put("max", round(h.getMaxValue() / 1e3, 3));
        p.put("samples", h.getTotalCount());
    }

    void put(String key, Object value) {
        root.put(key, value);
    }

    /** jverbs' extras of the measured loops: the bytes the measuring thread allocated, the JIT's milliseconds (-1: unknown). */
    void allocation(long bytes, long jitMs) {
        root.put("allocated_bytes", bytes);
        root.put("jit_ms_during_loop", jitMs);
    }

    void write(Path file) {
        root.put("results", results.isEmpty() ? Map.of() : results.get(results.size() - 1));
        if (results.size() > 1) {
            root.put("all_results", results);
        }
        try {
            mapper().writeValue(file.toFile(), root);
        } catch (IOException e) {
            throw new PerftestException("couldn't write the JSON report " + file + ": " + e.getMessage(), e);
        }
    }

    /** The JSON writer of the report: indented, numbers as {@link #round} made them (plain, fixed point). */
    static ObjectMapper mapper() {
        return new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT)
                .enable(com.fasterxml.jackson.core.JsonGenerator.Feature.WRITE_BIGDECIMAL_AS_PLAIN);
    }

    static void hdrLog(Path file, Histogram h, long startMs) {
        try (PrintStream ps = new PrintStream(Files.newOutputStream(file))) {
            HistogramLogWriter w = new HistogramLogWriter(ps);
            w.outputComment("jverbs-perftest latency, values in ns (post-to-post gap / rtt factor)");
            w.outputStartTime(startMs);
            w.setBaseTime(startMs);
            w.outputLogFormatVersion();
            w.outputLegend();
            w.outputIntervalHistogram(h);
        } catch (IOException e) {
            throw new PerftestException("couldn't write the HdrHistogram log " + file + ": " + e.getMessage(), e);
        }
    }

    /** The percentiles a latency plot draws, each only where the sample count supports it ({@link #supported}). */
    static final double[] PLOT_PERCENTILES = {0, 10, 25, 50, 75, 90, 95, 99, 99.5, 99.9, 99.95, 99.99, 99.995, 99.999};

    /**
     * Whether {@code samples} support percentile {@code q}: at least one sample lies beyond it
     * ({@code (1 - q/100) * samples >= 1}); p99.99 needs 10,000 samples, p99.9 1,000.
     */
    static boolean supported(double q, long samples) {
        return samples > 0 && (1 - q / 100) * samples >= 1 - 1e-9;
    }

    /**
     * Latency, HdrHistogram style: the value at each percentile against 1/(1-p) on a log axis (10 is
     * p90, 1000 p99.9), latency on a log axis too, so that the median and the tail both get room;
     * one curve per message size, each as deep as its samples support; with {@code c}, C's points of
     * its (last) row, which, like these histograms, leave its two slowest samples out.
     *
     * @param file   the PNG
     * @param title  the chart's title
     * @param curves message size to its histogram, in the order to draw
     * @param c      C's result of the same test, or null
     */
    static void plotLatency(Path file, String title, Map<Long, Histogram> curves, CReference c) {
        XYSeriesCollection data = new XYSeriesCollection();
        for (Map.Entry<Long, Histogram> e : curves.entrySet()) {
            XYSeries series = latencySeries("jverbs " + e.getKey() + " B (usec)", e.getValue());
            if (series.getItemCount() > 0) {
                data.addSeries(series);
            }
        }
        if (c != null) {
            data.addSeries(cLatency(c));
        }
        String xLabel = "percentile (1/(1-p): 10 = p90, 100 = p99, 1000 = p99.9)";
        JFreeChart chart = ChartFactory.createXYLineChart(title, xLabel, "latency [usec]", data, PlotOrientation.VERTICAL,
                true, false, false);
        XYPlot plot = chart.getXYPlot();
        plot.setRenderer(new org.jfree.chart.renderer.xy.XYLineAndShapeRenderer(true, true));
        LogAxis x = new LogAxis(xLabel);
        x.setBase(10);
        x.setSmallestValue(1);
        plot.setDomainAxis(x);
        LogAxis y = new LogAxis("latency [usec]");
        y.setBase(10);
        y.setSmallestValue(0.01);
        plot.setRangeAxis(y);
        save(file, chart);
    }

    /** One histogram's points: (1/(1-p), usec) for each supported percentile of {@link #PLOT_PERCENTILES}. */
    static XYSeries latencySeries(String name, Histogram h) {
        XYSeries series = new XYSeries(name);
        for (double q : PLOT_PERCENTILES) {
            if (supported(q, h.getTotalCount())) {
                series.add(1 / (1 - q / 100), Math.max(0.01, h.getValueAtPercentile(q) / 1e3));
            }
        }
        return series;
    }

    /** Bandwidth per 10 ms, against seconds. */
    static void plotBandwidth(Path file, String title, double[] rates) {
        plotBandwidth(file, title, rates, Double.NaN, null);
    }

    /**
     * Bandwidth per 10 ms, with jverbs' average as a line and, when {@code c} is given, C's
     * average (and peak) of the same test as lines across the same time span.
     */
    static void plotBandwidth(Path file, String title, double[] rates, double javaAverage, CReference c) {
        XYSeries series = new XYSeries("jverbs (MB/sec per 10 ms)");
        for (int i = 0; i < rates.length; i++) {
            series.add(i * BwLoop.BIN_NS / 1e9, rates[i]);
        }
        XYSeriesCollection data = new XYSeriesCollection(series);
        double end = Math.max(1, rates.length) * BwLoop.BIN_NS / 1e9;
        if (!Double.isNaN(javaAverage)) {
            data.addSeries(flat(String.format(java.util.Locale.ROOT, "jverbs average %.2f", javaAverage), javaAverage, end));
        }
        if (c != null) {
            data.addSeries(flat(c.label() + ": average", c.bwAverage(), end));
            if (c.bwPeak() > 0) {
                data.addSeries(flat("C perftest peak", c.bwPeak(), end));
            }
        }
        JFreeChart chart = ChartFactory.createXYLineChart(title, "time [s]", "bandwidth [MB/sec]",
                data, PlotOrientation.VERTICAL, true, false, false);
        save(file, chart);
    }

    private static XYSeries flat(String name, double value, double end) {
        XYSeries s = new XYSeries(name);
        s.add(0, value);
        s.add(end, value);
        return s;
    }

    private static XYSeries cLatency(CReference c) {
        XYSeries s = new XYSeries(c.label());
        long samples = c.latencySamples();
        for (double[] p : c.latencyPoints()) {
            if (samples <= 0 || supported(p[0], samples)) {
                s.add(1 / (1 - p[0] / 100), Math.max(0.01, p[1]));
            }
        }
        return s;
    }

    private static XYSeriesCollection dataset(XYSeries a, XYSeries b) {
        XYSeriesCollection d = new XYSeriesCollection(a);
        if (b != null) {
            d.addSeries(b);
        }
        return d;
    }

    private static void save(Path file, JFreeChart chart) {
        save(file, chart, 900, 500);
    }

    /** Writes a chart as a PNG of {@code width} x {@code height} pixels (headless). */
    static void save(Path file, JFreeChart chart, int width, int height) {
        System.setProperty("java.awt.headless", "true");
        try {
            ChartUtils.saveChartAsPNG(file.toFile(), chart, width, height);
        } catch (IOException | RuntimeException | Error e) {
            throw new PerftestException("couldn't draw the plot " + file + ": " + e, e);
        }
    }

    /**
     * A number as C's {@code %.Nf} writes it into its JSON: fixed point with {@code digits} decimals
     * ({@code 0.001059}, never {@code 1.059E-3}); the JSON writer keeps it plain.
     */
    static java.math.BigDecimal round(double v, int digits) {
        if (!Double.isFinite(v)) {
            return java.math.BigDecimal.ZERO.setScale(digits);
        }
        return new java.math.BigDecimal(v).setScale(digits, java.math.RoundingMode.HALF_UP);
    }
}
