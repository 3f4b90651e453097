package io.jverbs.rdmacm.internal;

import io.jverbs.ibverbs.internal.NativeAccess;

import java.lang.foreign.SymbolLookup;

/**
 * Loads {@code librdmacm.so.1} for the generated bindings. Not exported: a symbol lookup is a
 * restricted power. Thread-safe; the library stays loaded for the life of the JVM.
 */
public final class RdmaCmLibrary {
    private RdmaCmLibrary() {
    }

    /**
     * Returns the symbols of {@code librdmacm.so.1}, loaded on first use.
     *
     * @return the symbols of {@code librdmacm.so.1}, loaded on first use
     * @throws UnsatisfiedLinkError when rdma-core's librdmacm is not installed (the message names the package)
     */
    public static SymbolLookup librdmacm() {
        NativeAccess.libibverbs(); // librdmacm depends on it; load it first so a missing one is named as such
        return NativeAccess.load("librdmacm.so.1", "librdmacm1");
    }
}
