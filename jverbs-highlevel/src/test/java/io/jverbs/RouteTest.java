package io.jverbs;

import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import io.jverbs.ibverbs.raw.ibv_ah_attr;
import io.jverbs.ibverbs.raw.ibv_global_route;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A route's ranges, and the address vector fields it writes. */
class RouteTest {
    @Test
    void valuesOutsideTheirFieldsAreRefusedNamingTheField() {
        assertTrue(assertThrows(IllegalArgumentException.class, () -> Route.DEFAULT.withServiceLevel(16)).getMessage()
                .contains("serviceLevel 0..15"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> Route.DEFAULT.withTrafficClass(256)).getMessage()
                .contains("trafficClass 0..255"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> Route.DEFAULT.withFlowLabel(1 << 20)).getMessage()
                .contains("flowLabel"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> Route.DEFAULT.withHopLimit(0)).getMessage()
                .contains("hopLimit 1..255"));
    }

    @Test
    void itWritesTheServiceLevelAndOnARoutedPathTheRouteHeader() {
        Route r = Route.DEFAULT.withTrafficClass(106).withServiceLevel(3).withFlowLabel(0xABCDE).withHopLimit(255);
        try (Arena a = Arena.ofConfined()) {
            MemorySegment ah = a.allocate(ibv_ah_attr.LAYOUT);
            r.writeTo(ah, true);
            assertEquals(3, ibv_ah_attr.sl(ah));
            MemorySegment grh = ibv_ah_attr.grh(ah);
            assertEquals(106, Byte.toUnsignedInt(ibv_global_route.traffic_class(grh)));
            assertEquals(0xABCDE, ibv_global_route.flow_label(grh));
            assertEquals(255, Byte.toUnsignedInt(ibv_global_route.hop_limit(grh)));
            MemorySegment local = a.allocate(ibv_ah_attr.LAYOUT);
            r.writeTo(local, false);
            assertEquals(0, ibv_global_route.traffic_class(ibv_ah_attr.grh(local)), "no route header off a routed path");
        }
    }

    @Test
    void aQueuePairConfigCarriesItsRoute() {
        assertEquals(Route.DEFAULT, new Route(0, 0, 0, 64));
    }
}
