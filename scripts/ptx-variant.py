#!/usr/bin/env python3
"""Writes a variant of the built PTX for speed experiments on a GPU machine
(load it with LBM_PTX_FILE; scripts/ptx-ab.sh benchmarks several side by
side): register caps per entry, and cache hints on the population loads and
stores of the stream-collide kernels (flag loads, `.b8`, are left alone).
Correctness is not checked by `lbm bench`: a variant that wins goes into
the source (kernels-gpu/src/kernels.rs for caps) and through the tests.

  usage: scripts/ptx-variant.py IN.ptx OUT.ptx [--cap ENTRY=N ...]
                                [--load-hint Q[.Q..]] [--store-hint Q[.Q..]]
  e.g. --load-hint L1::no_allocate.L2::256B (qualifiers: see LOAD_HINTS, STORE_HINTS)
"""
import argparse
import re
import sys


# Cache operators, L1 eviction priorities and L2 prefetch sizes (PTX ISA, ld / st).
LOAD_HINTS = ["cs", "lu", "cg", "ca", "nc", "L1::evict_first", "L1::evict_last", "L1::no_allocate",
              "L2::64B", "L2::128B", "L2::256B"]
STORE_HINTS = ["cs", "cg", "wt", "L1::evict_first", "L1::no_allocate"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("src")
    ap.add_argument("dst")
    ap.add_argument("--cap", action="append", default=[], help="ENTRY=N: .maxnreg N for ENTRY (0 removes the cap)")
    ap.add_argument("--load-hint", help=f"qualifiers joined by '.', from {', '.join(LOAD_HINTS)}")
    ap.add_argument("--store-hint", help=f"qualifiers joined by '.', from {', '.join(STORE_HINTS)}")
    a = ap.parse_args()
    for hint, allowed in ((a.load_hint, LOAD_HINTS), (a.store_hint, STORE_HINTS)):
        bad = [q for q in (hint or "").split(".") if hint and q not in allowed]
        if bad:
            sys.exit(f"unknown cache qualifier {', '.join(bad)}; use {', '.join(allowed)}")
    caps = {}
    for c in a.cap:
        name, _, n = c.partition("=")
        if not n.isdigit():
            sys.exit(f"--cap {c}: use ENTRY=N")
        caps[name] = int(n)
    out, entry, seen = [], None, set()
    for line in open(a.src).read().split("\n"):
        m = re.search(r"\.entry (\w+)\(", line)
        if m:
            entry = m.group(1)
        if line.startswith(".maxnreg") and entry in caps:
            continue
        if line == "{" and entry in caps:
            if caps[entry] > 0:
                out.append(f".maxnreg {caps[entry]}")
            seen.add(entry)
        if entry and entry.startswith("stream_collide_"):
            if a.load_hint:
                line = re.sub(r"\bld\.global\.(b16|b32|b64)\b", rf"ld.global.{a.load_hint}.\1", line)
            if a.store_hint:
                line = re.sub(r"\bst\.global\.(b16|b32|b64)\b", rf"st.global.{a.store_hint}.\1", line)
        out.append(line)
    missing = set(caps) - seen
    if missing:
        sys.exit(f"no such entry: {', '.join(sorted(missing))}")
    open(a.dst, "w").write("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
