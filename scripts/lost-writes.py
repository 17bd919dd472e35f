#!/usr/bin/env python3
"""lost-writes.py HISTORY.jsonl...: counts the acknowledged writes a run lost.

For each isoscope JSON Lines history (isoscope run -o) it prints one line:
FILE, committed, aborted and unknown transactions, and "lost":

- registers (mt, lwt, general): the committed read-modify-writes beyond the
  first that read one version of a key and wrote the key (each such pair
  is a lost update: both were acknowledged, one overwrote the other
  without seeing it);
- lists (list-append): the committed appends missing from the last read
  of their list that began after they ended (a committed append that no
  later read shows).

It reads the histories only; it needs no database.
"""
import json
import sys
from collections import defaultdict


def lost_in(path):
    committed = aborted = unknown = 0
    rmw = defaultdict(int)  # (key, version read) -> committed writers
    appends = []  # (key, element, end)
    reads = defaultdict(list)  # key -> [(begin, set of elements)]
    with open(path) as f:
        for line in f:
            t = json.loads(line)
            if "ops" not in t:
                continue
            st = t.get("status", "committed")
            if st == "aborted":
                aborted += 1
                continue
            if st != "committed":
                unknown += 1
                continue
            committed += 1
            first_read = {}
            wrote = set()
            for op in t["ops"]:
                kind, key, val = op[0], op[1], op[2] if len(op) > 2 else None
                if kind == "r":
                    if isinstance(val, list):
                        reads[key].append((t.get("begin", 0), set(val)))
                    elif key not in first_read and key not in wrote:
                        first_read[key] = val
                elif kind == "w":
                    wrote.add(key)
                elif kind == "append":
                    appends.append((key, val, t.get("end", 0)))
            for key in wrote:
                if key in first_read:
                    rmw[(key, json.dumps(first_read[key]))] += 1
    lost = sum(n - 1 for n in rmw.values() if n > 1)
    last = {}
    for key, rs in reads.items():
        rs.sort(key=lambda r: r[0])
        last[key] = rs
    for key, e, end in appends:
        rs = last.get(key, [])
        later = [r for r in rs if r[0] > end]
        if later and e not in later[-1][1]:
            lost += 1
    return committed, aborted, unknown, lost


def main():
    if len(sys.argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        sys.exit(2)
    for path in sys.argv[1:]:
        try:
            c, a, u, lost = lost_in(path)
        except (OSError, ValueError, KeyError, IndexError, TypeError) as e:
            print(f"{path}: {e}", file=sys.stderr)
            sys.exit(2)
        print(f"{path}\tcommitted {c}\taborted {a}\tunknown {u}\tlost {lost}")


if __name__ == "__main__":
    main()
