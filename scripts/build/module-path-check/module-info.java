/**
 * A user's module, for scripts/build/check-module-path: it requires jverbs as any modular program
 * would, and must get the public API only: the thin modules on the host, and the high-level
 * module on a device too ({@code Main device}).
 */
module io.jverbs.modulecheck {
    requires io.jverbs.rdmacm;
    requires io.jverbs.highlevel;
}
