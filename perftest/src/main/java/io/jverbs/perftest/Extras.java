package io.jverbs.perftest;

import java.nio.file.Path;
import java.util.List;

/**
 * The values of the implemented C options that are not fields of {@link PerftestCommand} (see
 * {@link CompatOptions}), checked by {@link SpecValidator}.
 *
 * @param output          {@code bandwidth}, {@code message_rate} or {@code latency}: print only that number; null: the whole report
 * @param counters        the sysfs counters of -W (paths under the port's folder); empty: none
 * @param waitDestroySec  --wait_destroy: seconds to wait before the resources are released
 * @param reportCycles    -C: latencies in CPU cycles
 * @param latencyGapUs    --latency_gap: microseconds to wait before each post of a latency test
 * @param payload         --payload_file_path's bytes (the pattern the buffers are filled with); null: none
 * @param ipv6            --ipv6: prefer a GID that is not IPv4-mapped
 * @param serviceLevel    -S: the service level
 * @param trafficClass    --tclass: the traffic class
 * @param flowLabels      --flow_label: the flow labels, dealt to the queue pairs in turn
 * @param retryCount      --retry_count: the queue pairs' retry count
 * @param forceLink       --force-link: {@code IB} or {@code Ethernet}, the link layer the port must have; null: any
 * @param cpuUtil         --cpu_util with -D: the CPU_Util[%] column
 * @param reportBoth      --report-both: under -b, the local and remote tables after the summed row
 * @param performWarmUp   --perform_warm_up: a send queue's depth of operations per queue pair before the measured loop
 * @param vector          -X: the completion vector of the completion queue (with -e)
 * @param rateLimit       --rate_limit with --rate_limit_type SW: the rate in {@code rateUnits}; 0: no limit
 * @param rateUnits       --rate_units: {@code M} (MiB/s), {@code g} (Gbit/s) or {@code p} (messages/s)
 * @param burstSize       --burst_size: messages per burst (0: the send queue depth, as C)
 * @param mmapFile        --mmap: the file whose mapping is the buffer; null: memory of its own
 * @param mmapOffset      --mmap-offset: where in the file the mapping starts
 * @param commRdmaCm      -z: the handshake over an rdma_cm connection, the test's queue pairs connected by their records
 * @param relaxedOrdering the buffer registered with relaxed ordering (C's default; --disable_pcie_relaxed: not)
 */
record Extras(String output, List<String> counters, int waitDestroySec, boolean reportCycles, double latencyGapUs,
              byte[] payload, boolean ipv6, int serviceLevel, int trafficClass, int[] flowLabels, int retryCount,
              String forceLink, boolean cpuUtil, boolean reportBoth,
              boolean performWarmUp, int vector, double rateLimit, char rateUnits, int burstSize,
              Path mmapFile, long mmapOffset, boolean commRdmaCm, boolean relaxedOrdering) {
    /** None of them given. */
    static final Extras NONE = new Extras(null, List.of(), 0, false, 0, null, false, 0, 0, new int[] {0}, 7, null, false, false, false, 0, 0, 'g', 0, null, 0, false, true);

    Extras {
        counters = List.copyOf(counters);
        flowLabels = flowLabels.clone();
        payload = payload == null ? null : payload.clone();
    }

    /** The software rate limiter's messages a second at {@code size} bytes a message (0: no limit), as C converts it. */
    double packetsPerSecond(int size) {
        if (rateLimit <= 0) {
            return 0;
        }
        return switch (rateUnits) {
            case 'M' -> rateLimit * 1_048_576 / size;
            case 'p' -> rateLimit;
            default -> rateLimit * 1e9 / 8 / size;
        };
    }

    /** The flow label of queue pair {@code i}. */
    int flowLabel(int i) {
        return flowLabels[i % flowLabels.length];
    }

    /** The route of queue pair {@code i}: C's GRH hop limit is 255 in the RDMA tools. */
    io.jverbs.Route route(int i) {
        return new io.jverbs.Route(serviceLevel, trafficClass, flowLabel(i), 255);
    }

    /**
     * Reads C's payload file: DWORDs written {@code 0xXXXXXXXX}, the first line split on commas, the
     * rest on commas and new lines; each stored little-endian.
     *
     * @param file the file
     * @return its bytes
     * @throws PerftestException with C's message when a DWORD is malformed or the file is empty
     */
    static byte[] readPayload(Path file) {
        String text;
        try {
            text = java.nio.file.Files.readString(file, java.nio.charset.StandardCharsets.US_ASCII);
        } catch (java.io.IOException e) {
            throw new PerftestException("Failed to open payload file " + file + ": " + e.getMessage());
        }
        List<String> tokens = new java.util.ArrayList<>();
        for (String t : text.split("[,\\n]")) {
            if (!t.isEmpty()) {
                tokens.add(t);
            }
        }
        if (tokens.isEmpty()) {
            throw new PerftestException("Payload size should be greater than 0");
        }
        java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
        for (int k = 0; k < tokens.size(); k++) {
            String t = tokens.get(k);
            if (t.length() != 10 || !t.startsWith("0x")) {
                throw new PerftestException("Failed to parse DWORD number: " + k);
            }
            long v;
            try {
                v = Long.parseLong(t.substring(2), 16);
            } catch (NumberFormatException e) {
                throw new PerftestException("Invalid hex char in DWORD number: " + k);
            }
            for (int b = 0; b < 4; b++) {
                out.write((int) (v >>> (8 * b)) & 0xff);
            }
        }
        return out.toByteArray();
    }
}
