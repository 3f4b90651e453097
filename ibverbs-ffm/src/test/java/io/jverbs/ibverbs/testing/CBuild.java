package io.jverbs.ibverbs.testing;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Compiles C sources with gcc for tests (probes and fake providers) into a per-run folder under
 * {@code target/}. Fails with a clear message when gcc or the rdma-core headers are missing.
 */
public final class CBuild {
    private CBuild() {
    }

    /** The folder for build products: {@code target/cbuild} of the module under test. */
    public static Path workDir() throws IOException {
        Path dir = Path.of(System.getProperty("jverbs.cbuild.dir", "target/cbuild")).toAbsolutePath();
        Files.createDirectories(dir);
        return dir;
    }

    /** Reads a class-path resource as text. */
    public static String resource(Class<?> anchor, String name) throws IOException {
        try (InputStream in = anchor.getResourceAsStream(name)) {
            if (in == null) {
                throw new IOException("test resource not found: " + name);
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
    }

    /**
     * Compiles {@code source} into a shared library.
     *
     * @return the path of {@code lib<name>.so}
     */
    public static Path sharedLibrary(String name, String source, String... extraArgs) throws IOException, InterruptedException {
        Path dir = workDir();
        Path c = dir.resolve(name + ".c");
        Path so = dir.resolve("lib" + name + ".so");
        Files.writeString(c, source);
        List<String> cmd = new ArrayList<>(List.of("gcc", "-O2", "-Wall", "-shared", "-fPIC", "-o", so.toString(), c.toString()));
        cmd.addAll(List.of(extraArgs));
        run(cmd);
        return so;
    }

    /**
     * Compiles {@code source} into an executable.
     *
     * @return the path of the executable
     */
    public static Path executable(String name, String source, String... extraArgs) throws IOException, InterruptedException {
        Path dir = workDir();
        Path c = dir.resolve(name + ".c");
        Path exe = dir.resolve(name);
        Files.writeString(c, source);
        List<String> cmd = new ArrayList<>(List.of("gcc", "-O0", "-w", "-o", exe.toString(), c.toString()));
        cmd.addAll(List.of(extraArgs));
        run(cmd);
        return exe;
    }

    /** Runs a command, returning its standard output; throws with its output when it fails. */
    public static String run(List<String> cmd) throws IOException, InterruptedException {
        Process p;
        try {
            p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        } catch (IOException e) {
            throw new IOException("cannot run " + cmd.getFirst() + " (install gcc, libibverbs-dev and librdmacm-dev:"
                    + " apt-get install gcc libibverbs-dev librdmacm-dev): " + e.getMessage(), e);
        }
        byte[] out = p.getInputStream().readAllBytes();
        if (!p.waitFor(120, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new IOException("timed out: " + String.join(" ", cmd));
        }
        String text = new String(out, StandardCharsets.UTF_8);
        if (p.exitValue() != 0) {
            throw new IOException(String.join(" ", cmd) + " failed (exit " + p.exitValue() + "); are gcc, libibverbs-dev"
                    + " and librdmacm-dev installed?\n" + text);
        }
        return text;
    }
}
