package io.jverbs.fakesysfs;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

/** Builds a fake {@code /sys/class/infiniband} tree: an rxe-like and an mlx5-like device. */
public final class FakeSysfs {
    private FakeSysfs() {
    }

    /**
     * Writes the tree.
     *
     * @param root an empty directory
     * @return root
     * @throws IOException when writing fails
     */
    public static Path create(Path root) throws IOException {
        Path rxe = root.resolve("rxe0/ports/1/hw_counters");
        Files.createDirectories(rxe);
        for (Map.Entry<String, Long> e : Map.of("sent_pkts", 1000L, "rcvd_pkts", 900L, "rdma_sends", 10L,
                "rdma_recvs", 10L, "completer_retry_err", 3L, "rcvd_seq_err", 2L, "out_of_seq_request", 1L,
                "rcvd_rnr_err", 0L, "send_rnr_err", 0L, "duplicate_request", 0L).entrySet()) {
            set(root, "rxe0", 1, "hw_counters", e.getKey(), e.getValue());
        }
        for (String n : new String[] {"retry_exceeded_err", "retry_rnr_exceeded_err", "send_err", "link_downed",
                "ack_deferred"}) {
            set(root, "rxe0", 1, "hw_counters", n, 0);
        }
        Files.writeString(rxe.resolve("lifespan"), "10\n");
        // Unreadable in three ways that root cannot bypass: a directory, a dangling link, a non-number.
        Files.createDirectories(rxe.resolve("broken_dir_counter"));
        Files.createSymbolicLink(rxe.resolve("vanished_counter"), rxe.resolve("no-such-target"));
        Path mlx = root.resolve("mlx5_0/ports/1");
        Files.createDirectories(mlx.resolve("counters"));
        Files.createDirectories(mlx.resolve("hw_counters"));
        for (String n : new String[] {"port_xmit_data", "port_rcv_data", "port_xmit_packets", "port_rcv_packets",
                "port_xmit_discards", "symbol_error"}) {
            set(root, "mlx5_0", 1, "counters", n, 100);
        }
        Files.writeString(mlx.resolve("counters/VL15_dropped"), "N/A (no PMA)\n");
        for (String n : new String[] {"np_cnp_sent", "rp_cnp_handled", "np_ecn_marked_roce_packets", "out_of_sequence",
                "packet_seq_err", "local_ack_timeout_err", "rnr_nak_retry_err", "roce_adp_retrans", "duplicate_request",
                "implied_nak_seq_err", "out_of_buffer"}) {
            set(root, "mlx5_0", 1, "hw_counters", n, 5);
        }
        Files.writeString(mlx.resolve("hw_counters/lifespan"), "10\n");
        return root;
    }

    /**
     * Writes one counter's value.
     *
     * @param root   the tree
     * @param device the device
     * @param port   the port
     * @param group  {@code counters} or {@code hw_counters}
     * @param name   the counter
     * @param value  its raw value
     * @throws IOException when writing fails
     */
    public static void set(Path root, String device, int port, String group, String name, long value) throws IOException {
        Path p = root.resolve(device).resolve("ports").resolve(Integer.toString(port)).resolve(group).resolve(name);
        Files.createDirectories(p.getParent());
        Files.writeString(p, value + "\n");
    }
}
