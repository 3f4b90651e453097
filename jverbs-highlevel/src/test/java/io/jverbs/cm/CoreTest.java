package io.jverbs.cm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

/** The core steps connection management reaches through method handles are where it looks. */
class CoreTest {
    /**
     * Initializing {@link Core} resolves every handle: a core method renamed, retyped or gone
     * fails here with the method's name, not in a connection.
     */
    @Test
    void everyHandleResolves() throws Exception {
        Class<?> c = Class.forName("io.jverbs.cm.Core", true, CoreTest.class.getClassLoader());
        assertEquals("io.jverbs.cm.Core", c.getName());
    }

    /** A target's exception passes through unchanged, not wrapped. */
    @Test
    void exceptionsPassThrough() {
        assertThrows(NullPointerException.class, () -> Core.markConnected(null));
    }
}
