package io.jverbs.rdmacm;

import io.jverbs.ibverbs.Native;

import java.lang.foreign.SymbolLookup;

/**
 * Loads {@code librdmacm.so.1}. Thread-safe; the library stays loaded for the life of the JVM.
 */
public final class RdmaCmNative {
    private RdmaCmNative() {
    }

    /**
     * Returns the symbols of {@code librdmacm.so.1}, loaded on first use.
     *
     * @return the symbols of {@code librdmacm.so.1}, loaded on first use
     * @throws UnsatisfiedLinkError when rdma-core's librdmacm is not installed (the message names the package)
     */
    public static SymbolLookup librdmacm() {
        Native.libibverbs(); // librdmacm depends on it; load it first so a missing one is named as such
        return Native.load("librdmacm.so.1", "librdmacm1");
    }
}
