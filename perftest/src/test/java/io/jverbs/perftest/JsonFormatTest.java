package io.jverbs.perftest;

import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

import java.util.LinkedHashMap;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The JSON report's numbers as C's {@code %.Nf} writes them, and its units per test kind. */
class JsonFormatTest {
    @Test
    void numbersAreFixedPointAsCs() throws Exception {
        Map<String, Object> o = new LinkedHashMap<>();
        o.put("MsgRate", Outputs.round(9.26e-4, 6));
        o.put("small", Outputs.round(1.0e-7, 6));
        o.put("BW_average", Outputs.round(41.7649, 2));
        o.put("t_avg", Outputs.round(Double.NaN, 2));
        String text = Outputs.mapper().writeValueAsString(o);
        assertTrue(text.contains("\"MsgRate\" : 0.000926"), text);
        assertTrue(text.contains("\"small\" : 0.000000"), text);
        assertTrue(text.contains("\"BW_average\" : 41.76"), text);
        assertTrue(text.contains("\"t_avg\" : 0.00"), text);
        assertFalse(text.contains("E-"), text);
        JsonNode back = Outputs.mapper().readTree(text);
        assertEquals(9.26e-4, back.get("MsgRate").asDouble(), 1e-12, "valid JSON, the same value");
    }

    @Test
    void latencyTestsGiveMicroseconds() {
        assertEquals("usec", Outputs.units(parsed(Verb.WRITE, Kind.LAT)));
        assertEquals("MB/sec", Outputs.units(parsed(Verb.WRITE, Kind.BW)));
        assertEquals("Gb/sec", Outputs.units(parsed(Verb.SEND, Kind.BW, "--report_gbits")));
    }

    private static TestSpec parsed(Verb verb, Kind kind, String... args) {
        PerftestCommand c = new PerftestCommand(verb, kind);
        new CommandLine(c).parseArgs(args);
        return c.check();
    }
}
