# Sourced by perftest/jverbs-perftest, the distribution's bin/jverbs-perftest (which ships this file
# as lib/jit.sh) and scripts/bench/compare-perftest: the JIT flags of the JVMs that measure (jverbs_jit_opts).
#
# C2 only (-XX:-TieredCompilation), with thresholds scaled down for jverbs' own classes only
# (io.jverbs.*, 200 calls instead of 10,000): the warm-up's rounds have C2 compile the measured
# loop, with the JDK code on it inlined, before the clock starts, while the JDK's other code
# (picocli, Jackson) stays in the interpreter unless it gets hot.
# - Tiered compilation crashed JVMs under QEMU's multi-threaded TCG: C1 code that HotSpot patches
#   on one vCPU (an entry made not entrant when C2's version replaces it, C1's patching stubs)
#   while another vCPU runs it was executed stale, SIGSEGV at the fresh jump (+0x20 of
#   ImmutableCollections$ListN.size, PostLock.lock, Throwable.fillInStackTrace, String.getBytes,
#   picocli's isMultiValue): 3 of 6 tiered JVMs in two compare-perftest boots, none of 11 C2-only
#   ones. The guest kernel's own int3 patching oopsed the same way once.
# - C1 only (the launcher's earlier default) costs the high-level post + poll about 550 ns on the
#   host against 25 under C2; perftest-demo's write_lat 2 B was 1.3-1.9x C under it, 1.04-1.15x
#   with these flags.
# - Scaling every method's thresholds (-XX:CompileThresholdScaling=0.1) kept C2 compiling JDK code
#   between and during runs, on the 2 vCPUs rxe's kernel work needs (compare-perftest's write_bw
#   64 KiB lost every one of 10 pairs to C, 0.75x), and busy 24 s into the warm-up in two fresh
#   JVMs at once.
# shellcheck disable=SC2034 # used by the scripts that source this file
jverbs_jit_opts=(-XX:-TieredCompilation -XX:CompileCommand=quiet
                 -XX:CompileCommand=CompileThresholdScaling,io.jverbs.*::*,0.02)
