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
    m = re.match(r"# Parameters: \((.*)\)", line)
    if m and current:
        # one row per parameter set: name[confined=true]
        if not iterations.get(current):
            iterations.pop(current, None)
        current = current.split("[", 1)[0] + "[" + m.group(1).replace(" ", "") + "]"
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
        print("  %-40s %8.2f %8.2f %8.2f" % ((name,) + stats(values)))
for java, c in pairs.items():
    for key in iterations:
        if key.split("[", 1)[0] != java:
            continue
        ckey = c + key[len(java):]  # the C benchmark with the same parameters
        if iterations.get(key) and iterations.get(ckey):
            j, k = stats(iterations[key]), stats(iterations[ckey])
            print("  %-40s %+8.2f %+8.2f %+8.2f   (minus %s)" % (key, j[0] - k[0], j[1] - k[1], j[2] - k[2], ckey))
