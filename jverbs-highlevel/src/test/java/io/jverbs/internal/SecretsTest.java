package io.jverbs.internal;

import org.junit.jupiter.api.Test;

import java.io.InputStream;
import java.lang.module.ModuleDescriptor;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The bridges between the module's packages, and the packages the module exports. */
class SecretsTest {
    @Test
    void eachPackageRegistersItsAccessorWhenFirstAskedFor() {
        CoreAccess core = Secrets.core();
        assertNotNull(core, "the core registers its accessor (Resource's static initializer)");
        assertSame(core, Secrets.core(), "one accessor");
        DatagramAccess datagram = Secrets.datagram();
        assertNotNull(datagram, "the datagram package registers its accessor (DatagramQueuePair's static initializer)");
        assertSame(datagram, Secrets.datagram(), "one accessor");
    }

    @Test
    void theModuleExportsItsApiPackagesAndNotTheInternals() throws Exception {
        Path classes = Path.of(Secrets.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        ModuleDescriptor module;
        try (InputStream in = Files.newInputStream(classes.resolve("module-info.class"))) {
            module = ModuleDescriptor.read(in);
        }
        assertEquals("io.jverbs.highlevel", module.name());
        Set<String> exported = module.exports().stream().map(ModuleDescriptor.Exports::source)
                .collect(Collectors.toCollection(TreeSet::new));
        assertEquals(new TreeSet<>(Set.of("io.jverbs", "io.jverbs.cm", "io.jverbs.datagram", "io.jverbs.counters",
                "io.jverbs.latency")), exported, "exported packages");
        assertTrue(Files.isRegularFile(classes.resolve("io/jverbs/internal/Secrets.class")),
                "io.jverbs.internal is a package of the module, unexported");
    }
}
