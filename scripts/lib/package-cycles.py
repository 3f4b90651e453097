#!/usr/bin/env python3
"""Reads "MODULE CLASS -> CLASS" lines (jdeps, from scripts/build/check-packages) on stdin; fails
when a module's own packages form a cycle, naming one class arrow of each step."""
import sys, collections
arrows = collections.defaultdict(lambda: collections.defaultdict(set))   # module -> package -> {package}
example = {}
classes = collections.defaultdict(set)
for line in sys.stdin:
    m, a, b = line.split()
    classes[m].add(a.rsplit(".", 1)[0])
    pa, pb = a.rsplit(".", 1)[0], b.rsplit(".", 1)[0]
    if "$" in pa or pa == pb:
        continue
    arrows[m][pa].add(pb)
    example.setdefault((m, pa, pb), a.split("$")[0] + " -> " + b.split("$")[0])
failed = False
summary = []
for m in sorted(classes):
    graph = arrows[m]
    own = classes[m]
    # Tarjan: strongly connected components of the module's own packages.
    index, low, stack, on, sccs, n = {}, {}, [], set(), [], [0]
    def visit(v):
        index[v] = low[v] = n[0]; n[0] += 1; stack.append(v); on.add(v)
        for w in graph.get(v, ()):
            if w not in own:
                continue
            if w not in index:
                visit(w); low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            scc = []
            while True:
                w = stack.pop(); on.discard(w); scc.append(w)
                if w == v: break
            sccs.append(scc)
    for v in sorted(own):
        if v not in index:
            visit(v)
    edges = sum(1 for p in own for q in graph.get(p, ()) if q in own)
    for scc in sccs:
        if len(scc) > 1:
            failed = True
            print(f"check-packages: FAILED: {m}: a package cycle through {', '.join(sorted(scc))}:", file=sys.stderr)
            for p in sorted(scc):
                for q in sorted(graph.get(p, ())):
                    if q in scc:
                        print(f"    {example[(m, p, q)]}", file=sys.stderr)
    summary.append(f"{m} {len(own)} packages, {edges} arrows")
if failed:
    sys.exit(1)
print("check-packages: no package cycle (" + "; ".join(summary) + ")")
