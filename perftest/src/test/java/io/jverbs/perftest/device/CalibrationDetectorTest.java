package io.jverbs.perftest.device;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link Perf#clockCalibrationFailed}: the device tests retry a C perftest run whose clock
 * calibration failed under emulation, and only such a run. The outputs below are the shapes C
 * perftest printed in the rig (the table rows abridged to the fields the detector reads).
 */
class CalibrationDetectorTest {
    private static final String WARN = "Correlation coefficient r^2: 0.830747 < 0.9\n";
    private static final String BW_HEADER =
            " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n";
    private static final String LAT_HEADER = " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]\n";

    @Test
    void bandwidthRowOfZerosAfterTheWarningIsACalibrationFailure() {
        // seen in CI: ib_write_bw across the two-node rig exited 0 with this row
        String out = WARN + BW_HEADER + " 65536      400              0.00               0.00   \t\t   0.000000\n";
        assertTrue(Perf.clockCalibrationFailed(out));
    }

    @Test
    void latencyRowOfInfAfterTheWarningIsACalibrationFailure() {
        String out = WARN + LAT_HEADER + " 2       1000          inf            inf          inf             inf\n";
        assertTrue(Perf.clockCalibrationFailed(out));
    }

    @Test
    void warningWithoutATableIsACalibrationFailure() {
        assertTrue(Perf.clockCalibrationFailed(WARN + "Unable to calibrate cycles. Exiting.\n"));
    }

    @Test
    void measuredRowIsNotACalibrationFailureEvenWithTheWarning() {
        String out = WARN + BW_HEADER + " 65536      400              52.10              51.87   \t\t   0.000830\n";
        assertFalse(Perf.clockCalibrationFailed(out));
    }

    @Test
    void zeroRowWithoutTheWarningIsNotRetried() {
        // no calibration message: a 0.00 row is a real result for the test to judge, not a retry
        String out = BW_HEADER + " 65536      400              0.00               0.00   \t\t   0.000000\n";
        assertFalse(Perf.clockCalibrationFailed(out));
    }
}
