#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The tree's shape as Documentation/design.md (section 2) states it.

    tests/structure.py BUILD

  structure:calls-<tree>  in libdlcache, dlcachectl and dlcache.ko, the
                          graph of which file calls which (an object's
                          undefined symbols that another object of the
                          tree defines, read with nm from BUILD's objects)
                          has no cycle; a cycle is printed file by file
                          with a symbol of each edge
  structure:layers        libdlcache's folders call down: a file calls
                          its own folder and those below it (base; cache
                          and decode; data; io; tier; pipeline), never one
                          beside or above
  structure:includes      no header includes itself through others
  structure:sizes         no product file over 1,300 lines but those
                          design.md argues (OVER below), and no function
                          over 150 lines (a function's body from its "{"
                          to its "}" in column 0, kernel style)

Prints "ok|FAIL|skip structure:NAME (why)". The objects come from make lib
tools and make module; without them a check is skipped with its reason
(a failure under CI=true, tests/skip-required.sh).
"""
import glob
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LAYER = {"base": 0, "cache": 1, "decode": 1, "data": 2, "io": 3, "tier": 4,
         "pipeline": 5}
MAX_FILE, MAX_FUNC = 1300, 150
# The files over MAX_FILE that design.md argues read best whole.
OVER = {"libdlcache/pipeline/ktier.c", "libdlcache/decode/decode.c"}
PRODUCT = ("libdlcache/*/*.c", "kmod/*.c", "tools/dlcachectl/*.c", "uapi/*.h",
           "libdlcache/*/*.h", "kmod/*.h", "tools/dlcachectl/*.h",
           "libdlcache/include/*.h", "python/dlcache/*.py")
fails = 0


def result(st, name, why=""):
    global fails
    if st == "skip":
        r = subprocess.run([os.path.join(ROOT, "tests", "skip-required.sh"),
                            "structure:" + name, why],
                           stdout=subprocess.PIPE, universal_newlines=True)
        print(r.stdout, end="", flush=True)
        fails += r.returncode != 0
        return
    fails += st == "FAIL"
    print(f"{st} structure:{name}" + (f" ({why})" if why else ""), flush=True)


def symbols(objs):
    """{symbol: defining object}, {object: its undefined symbols}."""
    defs, uses = {}, {o: set() for o in objs}
    for o in objs:
        out = subprocess.run(["nm", o], stdout=subprocess.PIPE,
                             universal_newlines=True, check=True).stdout
        for line in out.splitlines():
            p = line.split()
            if len(p) == 3 and p[1] in "TDBRC":
                defs[p[2]] = o
            elif len(p) == 2 and p[0] == "U":
                uses[o].add(p[1])
    return defs, uses


def cycle(graph):
    """One cycle of @graph ({node: {node}}) as a list of nodes, or None."""
    state = {}
    for start in sorted(graph):
        if start in state:
            continue
        stack = [(start, iter(sorted(graph[start])))]
        path = [start]
        state[start] = 1
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                state[node] = 2
                stack.pop()
                path.pop()
            elif state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            elif nxt not in state:
                state[nxt] = 1
                stack.append((nxt, iter(sorted(graph[nxt]))))
                path.append(nxt)
    return None


def built(objs, src_dir):
    """The objects of @objs whose source is still in @src_dir (relative to
    ROOT, "" for the object's own folder under it): a file renamed or
    removed leaves its old object behind in a build tree."""
    out = []
    for o in objs:
        d = src_dir or os.path.join(*o.split(os.sep)[-3:-1])
        if os.path.exists(os.path.join(ROOT, d, os.path.basename(o)[:-2] + ".c")):
            out.append(o)
    return out


def calls(name, objs):
    if not objs:
        result("skip", "calls-" + name, "no objects built (make lib tools module)")
        return None
    defs, uses = symbols(objs)
    graph = {o: {defs[s] for s in uses[o] if s in defs and defs[s] != o}
             for o in objs}
    c = cycle(graph)
    if c is None:
        result("ok", "calls-" + name, f"{len(objs)} files, no cycle")
    else:
        edges = []
        for a, b in zip(c, c[1:]):
            s = sorted(x for x in uses[a] if defs.get(x) == b)[0]
            edges.append(f"{os.path.basename(a)} -> {os.path.basename(b)} ({s})")
        result("FAIL", "calls-" + name, "a cycle: " + ", ".join(edges))
    return defs, uses


def layers(objs, syms):
    defs, uses = syms
    bad = set()
    for o in objs:
        here = o.split("/")[-2]
        for s in uses[o]:
            there = defs[s].split("/")[-2] if s in defs else here
            if there != here and LAYER[there] >= LAYER[here]:
                bad.add(f"{here}/{os.path.basename(o)} calls {s} of {there}/")
    if bad:
        result("FAIL", "layers", "; ".join(sorted(bad)[:6]))
    else:
        result("ok", "layers", "every call between libdlcache's folders goes down")


def includes():
    files = [f for pat in ("libdlcache/*/*.h", "kmod/*.h", "tools/dlcachectl/*.h")
             for f in glob.glob(os.path.join(ROOT, pat))]
    by_name = {os.path.basename(f): f for f in files}
    graph = {f: set() for f in files}
    for f in files:
        for m in re.finditer(r'#include "([^"]+)"', open(f).read()):
            g = by_name.get(os.path.basename(m.group(1)))
            if g and g != f:
                graph[f].add(g)
    c = cycle(graph)
    if c:
        result("FAIL", "includes", " -> ".join(os.path.relpath(x, ROOT) for x in c))
    else:
        result("ok", "includes", f"{len(files)} headers, no cycle")


def sizes():
    big, long_fn = [], []
    for pat in PRODUCT:
        for f in sorted(glob.glob(os.path.join(ROOT, pat))):
            rel = os.path.relpath(f, ROOT)
            lines = open(f, errors="replace").read().split("\n")
            if len(lines) - 1 > MAX_FILE and rel not in OVER:
                big.append(f"{rel} {len(lines) - 1} lines")
            if not rel.endswith(".c"):
                continue
            start, name = None, "?"
            for i, line in enumerate(lines):
                if re.match(r"[A-Za-z_].*\(", line):
                    name = line.split("(")[0].split()[-1].lstrip("*")
                elif line.startswith("{"):
                    start = i
                elif line.startswith("}") and start is not None:
                    if i - start - 1 > MAX_FUNC:
                        long_fn.append(f"{rel}: {name} {i - start - 1} lines")
                    start = None
    if big or long_fn:
        result("FAIL", "sizes", "; ".join(big + long_fn))
    else:
        result("ok", "sizes", f"no file over {MAX_FILE} lines but "
               f"{', '.join(sorted(OVER))} (design.md), no function over {MAX_FUNC}")


def main():
    build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
    lib = built(sorted(glob.glob(os.path.join(build, "release", "libdlcache",
                                              "*", "*.o"))), "")
    syms = calls("libdlcache", lib)
    if syms:
        layers(lib, syms)
    calls("dlcachectl", built(sorted(glob.glob(os.path.join(
        build, "release", "tools", "dlcachectl", "*.o"))), "tools/dlcachectl"))
    # Any kernel's build of the module: its files are the same.
    kmod = sorted(glob.glob(os.path.join(build, "kmod-*", "kmod")))
    calls("kmod", built(sorted(glob.glob(os.path.join(kmod[0], "*.o"))), "kmod")
          if kmod else [])
    includes()
    sizes()
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
