package example.consumer;

import io.jverbs.Rdma.DeviceList;
import io.jverbs.Rdma;

/** Lists the RDMA devices through jverbs: libibverbs is loaded and called. */
public final class Main {
    private Main() {
    }

    /**
     * What rdma-core answered, or null when it could not be reached.
     *
     * @return a line to print
     */
    public static String devices() {
        DeviceList list = Rdma.devices();
        if (list.reason() != null && list.reason().startsWith("rdma-core cannot be used")) {
            return null;
        }
        return "consumer: rdma-core reached on the " + (Main.class.getModule().isNamed() ? "module" : "class")
                + " path: " + list;
    }

    /**
     * Prints what rdma-core answered; exits 1 when it could not be reached.
     *
     * @param args none
     */
    public static void main(String[] args) {
        String line = devices();
        if (line == null) {
            System.out.println("consumer: rdma-core not reached: " + Rdma.devices().reason());
            System.exit(1);
        }
        System.out.println(line);
    }
}
