package example.consumer;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertNotNull;

class MainTest {
    @Test
    void reachesRdmaCore() {
        String line = Main.devices();
        assertNotNull(line, "rdma-core was not reached under Surefire");
        System.out.println(line);
    }
}
