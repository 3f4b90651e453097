/**
 * A user's module, for scripts/check-module-path: it requires jverbs as any modular program
 * would, and must get the public API only.
 */
module io.jverbs.modulecheck {
    requires io.jverbs.rdmacm;
}
