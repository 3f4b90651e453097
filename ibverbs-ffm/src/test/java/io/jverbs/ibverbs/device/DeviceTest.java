package io.jverbs.ibverbs.device;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.parallel.Execution;
import org.junit.jupiter.api.parallel.ExecutionMode;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Marks a test class that needs the real RDMA device: tagged {@value TestDevice#TAG} (excluded from
 * the host build), run serially (Soft-RoCE drops completions under concurrent queue pairs),
 * skipped with the reason when the device is absent, and each test records the device it ran on
 * as the report entry {@code device}. Test methods and lifecycle methods may take a
 * {@link TestDevice} parameter.
 */
@Target(ElementType.TYPE)
@Retention(RetentionPolicy.RUNTIME)
@Documented
@Tag(TestDevice.TAG)
@Execution(ExecutionMode.SAME_THREAD)
@ExtendWith(DeviceTestExtension.class)
public @interface DeviceTest {
}
