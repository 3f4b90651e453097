package io.jverbs.ibverbs.device;

import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolver;
import org.junit.jupiter.api.extension.TestWatcher;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Optional;

/**
 * What {@link PairTest} adds: a run outside rxe-pair fails at once with the reason (a two-node
 * test is never silently skipped); the {@link ResourceLeakCheck} of the run; before each test a
 * barrier with the peer node (both run the same test at the same time); and one line per test
 * in the results file ({@code jverbs.pairResults}, default {@code <jverbs.deviceReports>/results.txt}):
 * {@code START id}, then {@code PASS id}, {@code FAIL id message} or {@code SKIP id reason}, with
 * {@code [fault]} after the id of fault cases. The lines are written as they happen, so a node
 * powered off in the middle of a test still leaves what it had done.
 */
public final class PairTestExtension implements BeforeAllCallback, BeforeEachCallback, TestWatcher, ParameterResolver {
    private static final ExtensionContext.Namespace NAMESPACE = ExtensionContext.Namespace.create(PairTestExtension.class);
    private static volatile ResourceLeakCheck leakCheck;

    static ResourceLeakCheck leakCheck() {
        return leakCheck;
    }

    @Override
    public void beforeAll(ExtensionContext context) {
        String reason = PairNode.absenceReason();
        if (reason != null) {
            throw new IllegalStateException(reason);
        }
        PairNode node = PairNode.current();
        leakCheck = context.getRoot().getStore(NAMESPACE)
                .getOrComputeIfAbsent(ResourceLeakCheck.class, key -> ResourceLeakCheck.start(node.device()), ResourceLeakCheck.class);
    }

    @Override
    public void beforeEach(ExtensionContext context) throws IOException {
        PairNode node = PairNode.current();
        String id = id(context);
        record("START " + id);
        context.publishReportEntry("device", node.device().description() + ", node " + node.role());
        System.out.println("[pair " + node.role() + " " + node.device().name() + " " + node.kernel() + "] " + id);
        if (!node.isPeerGone()) {
            node.control().barrier(id, PairControl.DEFAULT_WAIT);
        }
    }

    @Override
    public void testSuccessful(ExtensionContext context) {
        record("PASS " + id(context));
    }

    @Override
    public void testFailed(ExtensionContext context, Throwable cause) {
        record("FAIL " + id(context) + " " + String.valueOf(cause).replace('\n', ' '));
    }

    @Override
    public void testAborted(ExtensionContext context, Throwable cause) {
        record("SKIP " + id(context) + " " + String.valueOf(cause).replace('\n', ' '));
    }

    @Override
    public void testDisabled(ExtensionContext context, Optional<String> reason) {
        record("SKIP " + id(context) + " disabled: " + reason.orElse(""));
    }

    private static String id(ExtensionContext context) {
        String id = context.getRequiredTestClass().getSimpleName() + "." + context.getRequiredTestMethod().getName();
        return context.getTags().contains(PairTest.FAULT) ? id + " [fault]" : id;
    }

    private static synchronized void record(String line) {
        Path file = Path.of(System.getProperty("jverbs.pairResults",
                Path.of(System.getProperty("jverbs.deviceReports", "target/device-reports"), "results.txt").toString()));
        try {
            Files.createDirectories(file.toAbsolutePath().getParent());
            Files.writeString(file, line + "\n", StandardCharsets.UTF_8, StandardOpenOption.CREATE, StandardOpenOption.APPEND,
                    StandardOpenOption.SYNC);
        } catch (IOException e) {
            System.err.println("[pair] cannot write " + file + ": " + e);
        }
    }

    @Override
    public boolean supportsParameter(ParameterContext parameter, ExtensionContext context) {
        Class<?> type = parameter.getParameter().getType();
        return type == TestDevice.class || type == PairNode.class;
    }

    @Override
    public Object resolveParameter(ParameterContext parameter, ExtensionContext context) {
        PairNode node = PairNode.current();
        return parameter.getParameter().getType() == PairNode.class ? node : node.device();
    }
}
