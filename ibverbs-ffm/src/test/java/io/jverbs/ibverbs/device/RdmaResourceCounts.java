package io.jverbs.ibverbs.device;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The kernel's count of RDMA objects on one device, as iproute2's {@code rdma resource show}
 * prints it ({@code 0: rxe0: pd 1 cq 1 qp 1 cm_id 0 mr 0 ctx 0 srq 0}).
 *
 * @param counts object kind to count, in the order printed
 */
public record RdmaResourceCounts(Map<String, Long> counts) {
    private static final List<String> TOOL_CANDIDATES = List.of("/usr/sbin/rdma", "/sbin/rdma", "/usr/bin/rdma", "/bin/rdma");

    /** How long {@code rdma resource show} may take (it answers in milliseconds, even under QEMU TCG). */
    static final Duration TOOL_TIMEOUT = Duration.ofSeconds(20);

    /**
     * Runs {@code rdma resource show} and parses the line of {@code device}.
     *
     * @throws IOException when the tool is missing, fails, hangs past {@link #TOOL_TIMEOUT}, or does not list the device
     */
    public static RdmaResourceCounts read(String device) throws IOException {
        String tool = TOOL_CANDIDATES.stream().filter(p -> Files.isExecutable(Path.of(p))).findFirst().orElse("rdma");
        return parse(run(List.of(tool, "resource", "show"), TOOL_TIMEOUT), device);
    }

    /**
     * Runs a command with a time limit and returns its output (stdout and stderr together). The
     * output goes to a file, not a pipe, so waiting for the process is what can time out; on
     * timeout the command and its descendants are killed.
     *
     * @throws IOException when the command cannot start, exits non-zero, or does not finish within {@code timeout}
     */
    static String run(List<String> command, Duration timeout) throws IOException {
        String name = String.join(" ", command);
        Path output = Files.createTempFile("jverbs-tool-", ".out");
        try {
            Process process = new ProcessBuilder(command).redirectErrorStream(true)
                    .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")))
                    .redirectOutput(output.toFile()).start();
            try {
                if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                    process.descendants().forEach(ProcessHandle::destroyForcibly);
                    process.destroyForcibly();
                    process.waitFor(5, TimeUnit.SECONDS);
                    throw new IOException(name + " did not finish in " + text(timeout) + " (killed); output so far: "
                            + Files.readString(output).strip());
                }
            } catch (InterruptedException e) {
                process.destroyForcibly();
                Thread.currentThread().interrupt();
                throw new IOException("interrupted while running " + name, e);
            }
            String text = Files.readString(output);
            if (process.exitValue() != 0) {
                throw new IOException(name + " exited " + process.exitValue() + ": " + text.strip());
            }
            return text;
        } finally {
            Files.deleteIfExists(output);
        }
    }

    private static String text(Duration d) {
        return d.toMillis() % 1000 == 0 ? d.toSeconds() + " s" : d.toMillis() + " ms";
    }

    /** Parses the summary line of {@code device} from {@code rdma resource show} output. */
    public static RdmaResourceCounts parse(String output, String device) throws IOException {
        for (String line : output.split("\n")) {
            String[] words = line.trim().split("\\s+");
            // "<index>: <device>: kind N kind N ..."
            if (words.length >= 2 && words[1].equals(device + ":")) {
                Map<String, Long> counts = new LinkedHashMap<>();
                for (int i = 2; i + 1 < words.length; i += 2) {
                    try {
                        counts.put(words[i], Long.parseLong(words[i + 1]));
                    } catch (NumberFormatException e) {
                        throw new IOException("unexpected rdma resource show line: " + line, e);
                    }
                }
                if (counts.isEmpty()) {
                    throw new IOException("no counts in rdma resource show line: " + line);
                }
                return new RdmaResourceCounts(counts);
            }
        }
        throw new IOException("rdma resource show does not list " + device + ": " + output.strip());
    }

    /** @return the kinds whose count differs from {@code before}, as {@code "mr +2"}; empty when none */
    public String differenceFrom(RdmaResourceCounts before) {
        StringBuilder sb = new StringBuilder();
        for (Map.Entry<String, Long> e : counts.entrySet()) {
            long was = before.counts.getOrDefault(e.getKey(), 0L);
            if (e.getValue() != was) {
                sb.append(sb.isEmpty() ? "" : " ").append(e.getKey()).append(' ')
                        .append(e.getValue() > was ? "+" : "").append(e.getValue() - was);
            }
        }
        return sb.toString();
    }

    @Override
    public String toString() {
        StringBuilder sb = new StringBuilder();
        counts.forEach((kind, n) -> sb.append(sb.isEmpty() ? "" : " ").append(kind).append(' ').append(n));
        return sb.toString();
    }
}
