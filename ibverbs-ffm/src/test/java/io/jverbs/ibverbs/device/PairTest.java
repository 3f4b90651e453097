package io.jverbs.ibverbs.device;

import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.parallel.Execution;
import org.junit.jupiter.api.parallel.ExecutionMode;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Marks a test class that runs on both nodes of {@code soft-roce-ci/rxe-pair} at once: tagged
 * {@value #TAG} (excluded from the host build and from the one-node device run), serial, methods
 * in {@code @Order} order (both nodes must run the same test at the same time), and extended by
 * {@link PairTestExtension}: a barrier with the peer before each test, the leak check of the run,
 * and a result line per test. Test methods may take {@link TestDevice} and {@link PairNode}
 * parameters; a method tagged {@value #FAULT} is a fault case (counted on the {@code faults:} line).
 */
@Target(ElementType.TYPE)
@Retention(RetentionPolicy.RUNTIME)
@Documented
@Tag(PairTest.TAG)
@Execution(ExecutionMode.SAME_THREAD)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
@ExtendWith(PairTestExtension.class)
public @interface PairTest {
    /** The tag of the two-node tests. */
    String TAG = "rdma-pair";
    /** The tag of the fault cases among them. */
    String FAULT = "fault";
}
