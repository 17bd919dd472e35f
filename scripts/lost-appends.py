#!/usr/bin/env python3
"""lost-appends.py HISTORY.jsonl[.gz]...: the acknowledged appends a
list-append history lost.

An append is acknowledged when its transaction committed (the client saw
COMMIT succeed; transactions whose outcome is unknown are not counted).
It is lost when the last read of its key (the committed read that began
last) does not hold it, although that read began after the append
committed: the last reads are what survived (a read by a transaction on
a primary that is about to be deposed may see appends its successor
never had, so the longest read is not the measure). Appends that
committed after the last read of their key began are not judged. Prints one line per history:

  FILE  committed-appends  judged  lost-appends  txns-with-a-lost-append
        vanished-committed  vanished-unknown

where the vanished appends are those a committed transaction read that
are missing from the last read of their key, by whether the appending
transaction committed or its outcome is unknown (its COMMIT got no
answer): an unknown one read and then lost is a write made visible
before it was durable.

and, with -v, each lost append (key, value, its transaction, the read).
"""
import gzip
import json
import sys


def opener(path):
    return gzip.open(path, "rt") if path.endswith(".gz") else open(path)


def lost(path, verbose=False):
    appends = []  # (key, value, txn id, end)
    status = {}  # (key, value) -> the appending transaction's status
    reads = {}  # key -> [(begin, length, set, txn id)]
    with opener(path) as f:
        for line in f:
            t = json.loads(line)
            if "ops" not in t:
                continue
            st = t.get("status", "committed")
            for op in t["ops"]:
                if op[0] == "append":
                    status[(op[1], op[2])] = st
            if st != "committed":
                continue
            for op in t["ops"]:
                if op[0] == "append":
                    appends.append((op[1], op[2], t["id"], t["end"]))
                elif op[0] == "r" and op[2] is not None:
                    reads.setdefault(op[1], []).append((t["begin"], len(op[2]), op[2], t["id"]))
    # Per key: the read that began last; of one transaction's reads of the
    # key, its last (a read after the transaction's own append shows it).
    last = {k: max(reversed(rs), key=lambda r: r[0]) for k, rs in reads.items()}
    sets = {}
    judged = n = 0
    txns = set()
    for k, v, tid, end in appends:
        r = last.get(k)
        if r is None or r[0] <= end:
            continue
        judged += 1
        s = sets.get(k)
        if s is None:
            s = sets[k] = set(r[2])
        if v not in s:
            n += 1
            txns.add(tid)
            if verbose:
                print(f"  key {k}: T{tid} appended {v}, missing from T{r[3]}'s read of {r[1]} elements")
    vanished = {"committed": 0, "unknown": 0}
    for k, rs in reads.items():
        seen = set()
        for r in rs:
            seen.update(r[2])
        for v in seen - set(last[k][2]):
            st = status.get((k, v))
            if st in vanished:
                vanished[st] += 1
    return len(appends), judged, n, len(txns), vanished["committed"], vanished["unknown"]


def main():
    args = sys.argv[1:]
    verbose = "-v" in args
    files = [a for a in args if a != "-v"]
    if not files:
        sys.exit(__doc__)
    for p in files:
        print(p, *lost(p, verbose), sep="\t")


if __name__ == "__main__":
    main()
