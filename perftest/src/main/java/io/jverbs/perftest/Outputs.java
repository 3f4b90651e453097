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

    Outputs(PerftestCommand c, Session s, int mtuEnum) {
        Map<String, Object> info = new LinkedHashMap<>();
        root.put("test_info", info);
        String title = c.verb == Verb.ATOMIC ? "Atomic_" + (c.cas ? "CMP_AND_SWAP" : "FETCH_AND_ADD") : c.verb.title;
        info.put("test", title + (c.kind == Kind.BW ? "_BW_Test" : "_Latency_Test"));
        info.put("implementation", "jverbs-perftest");
        info.put("role", c.isServer() ? "server" : "client");
        // C's test_info keys, with what jverbs does (see the header box in Report)
        info.put("Dual_port", "OFF");
        info.put("Device", s.context.name());
        info.put("Number_of_qps", s.count());
        info.put("Transport_type", "IB");
        info.put("Connection_type", c.connection);
        info.put("Using_SRQ", "OFF");
        info.put("PCIe_relax_order", "OFF");
        info.put("ibv_wr_API", "OFF");
        info.put("TX_depth", c.tx);
        if (c.verb == Verb.SEND) {
            info.put("RX_depth", c.rx);
        }
        if (c.kind == Kind.BW) {
            info.put("CQ_Moderation", c.cqModResolved);
        }
        info.put("Mtu", 128 << mtuEnum);
        info.put("Link_type", s.port.isEthernet() ? "Ethernet" : "IB");
        if (s.gid != null) {
            info.put("GID_index", s.gid.index());
        }
        info.put("Max_inline_data", s.maxInline);
        info.put("Outstand_reads", s.outReads);
        info.put("rdma_cm_QPs", c.rdmaCm ? "ON" : "OFF");
        info.put("Data_ex_method", c.rdmaCm ? "rdma_cm" : "Ethernet");
        info.put("bidirectional", c.bidirectional);
        info.put("duration_s", c.durationSec);
        info.put("units", units(c));
    }

    /** The unit of the results: C's table heads ({@code BW average[MB/sec]}, {@code t_avg[usec]}). */
    static String units(PerftestCommand c) {
        return c.kind == Kind.LAT ? "usec" : c.reportGbits ? "Gb/sec" : "MB/sec";
    }

    void bw(BwLoop.BwResult r) {
        Map<String, Object> o = new LinkedHashMap<>();
        results.add(o);
        o.put("MsgSize", r.size());
        o.put("n_iterations", r.iters());
        o.put("BW_peak", round(r.peak(), 2));
        o.put("BW_average", round(r.avg(), 2));
        o.put("MsgRate", round(r.msgRate(), 6));
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

    void allocation(long bytes) {
        root.put("allocated_bytes", bytes);
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

    /** Latency: value at each percentile against 1/(1-p) on a log axis, so the tail gets room. */
    static void plotLatency(Path file, String title, Histogram h) {
        plotLatency(file, title, h, null);
    }

    /**
     * Latency, with C's figures of the same test beside jverbs' curve when {@code c} is given:
     * its t_min, t_typical, 99% and 99.9% at their percentiles (C prints no more of its
     * distribution).
     */
    static void plotLatency(Path file, String title, Histogram h, CReference c) {
        XYSeries series = new XYSeries("jverbs (usec)");
        for (double q : new double[] {0, 10, 25, 50, 75, 90, 95, 99, 99.5, 99.9, 99.95, 99.99, 99.999}) {
            if (h.getTotalCount() == 0) {
                break;
            }
            series.add(1 / (1 - q / 100), h.getValueAtPercentile(q) / 1e3);
        }
        JFreeChart chart = ChartFactory.createXYLineChart(title, "percentile (1/(1-p): 10 = p90, 100 = p99, 1000 = p99.9)",
                "latency [usec]", dataset(series, c == null ? null : cLatency(c)), PlotOrientation.VERTICAL, true, false, false);
        XYPlot plot = chart.getXYPlot();
        if (c != null) {
            org.jfree.chart.renderer.xy.XYLineAndShapeRenderer r = new org.jfree.chart.renderer.xy.XYLineAndShapeRenderer(true, true);
            plot.setRenderer(r);
        }
        LogAxis x = new LogAxis("percentile (1/(1-p): 10 = p90, 100 = p99, 1000 = p99.9)");
        x.setBase(10);
        x.setSmallestValue(1);
        plot.setDomainAxis(x);
        save(file, chart);
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
        for (double[] p : c.latencyPoints()) {
            s.add(1 / (1 - p[0] / 100), p[1]);
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

    /**
     * compare-perftest's picture: per case, C's and jverbs' medians side by side (bars), one
     * chart for bandwidth (MB/s) and one for latency (t_typical, µs).
     */
    static void plotComparison(Path file, String title, String valueAxis, List<String> cases, double[] c, double[] java) {
        org.jfree.data.category.DefaultCategoryDataset d = new org.jfree.data.category.DefaultCategoryDataset();
        for (int i = 0; i < cases.size(); i++) {
            d.addValue(c[i], "C perftest", cases.get(i));
            d.addValue(java[i], "jverbs-perftest", cases.get(i));
        }
        JFreeChart chart = ChartFactory.createBarChart(title, "case", valueAxis, d, PlotOrientation.VERTICAL, true, false, false);
        org.jfree.chart.axis.CategoryAxis axis = chart.getCategoryPlot().getDomainAxis();
        axis.setCategoryLabelPositions(org.jfree.chart.axis.CategoryLabelPositions.UP_45);
        axis.setMaximumCategoryLabelWidthRatio(2.0f);
        save(file, chart, Math.max(900, 110 * cases.size()), 560);
    }

    private static void save(Path file, JFreeChart chart) {
        save(file, chart, 900, 500);
    }

    private static void save(Path file, JFreeChart chart, int width, int height) {
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
