package io.jverbs.ibverbs.device;

import io.jverbs.ibverbs.UnsupportedVerbException;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.LifecycleMethodExecutionExceptionHandler;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolver;
import org.junit.jupiter.api.extension.TestExecutionExceptionHandler;
import org.opentest4j.TestAbortedException;

/**
 * What {@link DeviceTest} adds: the skip when the device is absent (before any fixture opens
 * it), the {@link ResourceLeakCheck} of the run (started before the first device test class),
 * the {@code device} report entry and console line per test, {@link TestDevice} parameters, and
 * {@link UnsupportedVerbException} (EOPNOTSUPP) turned into a skip.
 */
public final class DeviceTestExtension implements BeforeAllCallback, BeforeEachCallback, ParameterResolver,
        TestExecutionExceptionHandler, LifecycleMethodExecutionExceptionHandler {
    private static final TestDevice DEVICE = TestDevice.fromEnvironment();
    private static final ExtensionContext.Namespace NAMESPACE = ExtensionContext.Namespace.create(DeviceTestExtension.class);

    @Override
    public void beforeAll(ExtensionContext context) {
        String reason = DEVICE.absenceReason();
        Assumptions.assumeTrue(reason == null, reason);
        // One leak check per run: the root store closes it after the last test class, inside this JVM.
        context.getRoot().getStore(NAMESPACE)
                .getOrComputeIfAbsent(ResourceLeakCheck.class, key -> ResourceLeakCheck.start(DEVICE), ResourceLeakCheck.class);
    }

    @Override
    public void beforeEach(ExtensionContext context) {
        context.publishReportEntry("device", DEVICE.description());
        System.out.println("[device " + DEVICE.name() + "] " + context.getRequiredTestClass().getSimpleName() + "."
                + context.getRequiredTestMethod().getName());
    }

    /** What the device does not support is a skip with the verb's message, never a pass or a failure. */
    @Override
    public void handleTestExecutionException(ExtensionContext context, Throwable thrown) throws Throwable {
        throw unsupportedAsAborted(thrown);
    }

    @Override
    public void handleBeforeAllMethodExecutionException(ExtensionContext context, Throwable thrown) throws Throwable {
        throw unsupportedAsAborted(thrown);
    }

    @Override
    public void handleBeforeEachMethodExecutionException(ExtensionContext context, Throwable thrown) throws Throwable {
        throw unsupportedAsAborted(thrown);
    }

    private static Throwable unsupportedAsAborted(Throwable thrown) {
        if (thrown instanceof UnsupportedVerbException unsupported) {
            return new TestAbortedException(DEVICE.name() + " does not support this: " + unsupported.getMessage(), unsupported);
        }
        return thrown;
    }

    @Override
    public boolean supportsParameter(ParameterContext parameter, ExtensionContext context) {
        return parameter.getParameter().getType() == TestDevice.class;
    }

    @Override
    public Object resolveParameter(ParameterContext parameter, ExtensionContext context) {
        return DEVICE;
    }
}
