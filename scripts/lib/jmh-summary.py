#!/usr/bin/env python3
"""Reads JMH's console output (stdin, passed through to stdout) and prints, per benchmark, the
minimum, 10th percentile and median of its measurement iterations, then each Java benchmark's
difference to the C benchmark named in --pairs JAVA=C (same run, same conditions). On a shared,
noisy machine the low percentiles are the figures least disturbed by other work; the median is
given beside them so nothing is hidden."""
import re
import sys

pairs = dict(p.split("=", 1) for p in sys.argv[1:] if "=" in p)
iterations, current = {}, None
for line in sys.stdin:
    sys.stdout.write(line)
    m = re.match(r"# Benchmark: (\S+)", line)
    if m:
        current = m.group(1).rsplit(".", 1)[-1]
        iterations.setdefault(current, [])
    m = re.match(r"Iteration\s+\d+: ([\d.]+) ns/op", line)
    if m and current:
        iterations[current].append(float(m.group(1)))


def stats(values):
    v = sorted(values)
    return v[0], v[len(v) // 10], v[len(v) // 2]


print("\n== summary: ns/op over %s iterations (min / p10 / median)" % ", ".join(
    "%s %d" % (k, len(v)) for k, v in iterations.items()))
for name, values in iterations.items():
    if values:
        print("  %-28s %8.2f %8.2f %8.2f" % ((name,) + stats(values)))
for java, c in pairs.items():
    if iterations.get(java) and iterations.get(c):
        j, k = stats(iterations[java]), stats(iterations[c])
        print("  %-28s %+8.2f %+8.2f %+8.2f   (minus %s)" % (java, j[0] - k[0], j[1] - k[1], j[2] - k[2], c))
