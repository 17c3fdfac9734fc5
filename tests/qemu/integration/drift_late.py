#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Summarise how far the module's time lines ran off the drifting ranks.

    drift_late.py CONSOLE_LOG...

Reads the TRACE lines a dlcint.drift_only=N run prints (guest.sh: each
consumer of the data set every 0.5 s, from debugfs stats) and prints,
per log, the median over runs of each run's median |late_ms| (how far a
consumer's cursor ran behind, or ahead of, the time the policy predicted
for it), the median of the runs' worst and the worst of all. A line that
bends (a look-ahead that bursts or pauses mid-epoch) shows as large
values; benchmarks.md (2026-12-07) compares read-ahead budgets by it.
"""
import re
import statistics
import sys

TRACE = re.compile(r"TRACE (\S+) \S+ \S+ \S+ members \d+ cursor \d+ end \d+ "
                   r"ns_per_pos \d+ late_ms (-?\d+)")


def main():
    if len(sys.argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    for path in sys.argv[1:]:
        runs = {}
        with open(path, errors="replace") as f:
            for line in f:
                m = TRACE.search(line)
                if m:
                    runs.setdefault(m.group(1), []).append(abs(int(m.group(2))))
        if not runs:
            print(f"{path}: no TRACE lines (run with INT_APPEND=dlcint.drift_only=N)")
            continue
        meds = [statistics.median(v) for v in runs.values()]
        worst = [max(v) for v in runs.values()]
        print(f"{path}: {len(runs)} runs; late_ms median of medians "
              f"{statistics.median(meds):.0f}, median of worst "
              f"{statistics.median(worst):.0f}, worst {max(worst)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
