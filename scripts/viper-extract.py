#!/usr/bin/env python3
"""Run Viper's own JSON history parser on a log directory and print what it
extracts, for internal/format/viper's cross-check (TestViperCrossCheck).

Usage: viper-extract.py VIPER_SRC LOG_DIR

VIPER_SRC is the src/ directory of a checkout of github.com/Khoury-srg/Viper
(the test extracts it from the mirror with `git archive`). Nothing of Viper
is copied here: this driver imports Viper's modules from VIPER_SRC and calls
them. Viper's parse/wr_range_parse.py imports edn_format at its top for its
EDN functions, and edn_format is not installed here (nor reachable); so the
driver executes that file's own JSON functions and imports, read from
VIPER_SRC, leaving out only the edn_format imports and the EDN functions
that need them. Nothing is stubbed.

Output (JSON on standard output):
  {"reject": null or the message of Viper's RejectException,
   "initial": [[k, v], ...] or null (Viper's initial_state),
   "sessions": [{"file": name, "txns": [{"reads": [[k, v], ...],
                 "writes": [[k, v], ...], "ranges": [[k1, k2, [ids]], ...]}]}]}
where reads and writes are Viper's ext_reads_fn and ext_writes_fn of each
transaction, the sessions are Viper's session histories (one per log file,
the initial transaction's file left out), and k1/k2 are null for "nil".
"""
import ast
import json
import os
import sys
import types


def load_parser(src):
    """Viper's parse/wr_range_parse.py without its edn_format imports and
    the EDN functions: a module of Viper's own JSON parsing functions."""
    path = os.path.join(src, "parse", "wr_range_parse.py")
    with open(path) as f:
        tree = ast.parse(f.read(), path)
    keep = []
    for node in tree.body:
        if isinstance(node, ast.Import) and any(a.name == "edn_format" for a in node.names):
            continue
        if isinstance(node, ast.ImportFrom) and node.module == "edn_format":
            continue
        if isinstance(node, ast.FunctionDef) and "edn" in node.name:
            continue
        if isinstance(node, ast.If):  # the __main__ block
            continue
        keep.append(node)
    mod = types.ModuleType("wr_range_parse")
    mod.__file__ = path
    exec(compile(ast.Module(body=keep, type_ignores=[]), path, "exec"), mod.__dict__)
    return mod


def key(k):
    return None if k == "nil" else k


def main():
    src, log_dir = sys.argv[1], sys.argv[2]
    sys.path.insert(0, src)
    from utils.utils import load_logs_json, initial_state
    from utils.range_utils import ext_reads_fn, ext_writes_fn
    from utils.exceptions import RejectException
    parser = load_parser(src)

    logs = load_logs_json(log_dir)
    # load_logs_json returns the files' contents in os.listdir order
    # without their names: name each by matching its content.
    names = {}
    for name in os.listdir(log_dir):
        full = os.path.join(log_dir, name)
        if os.path.isdir(full) or not (name.startswith("J") or name.startswith("history.edn")):
            continue
        with open(full) as f:
            text = f.read()
        names.setdefault("[" + text.replace("\n", ",")[:-1] + "]", []).append(name)
    files = [names[content].pop(0) for content in logs]

    out = {"reject": None, "initial": None, "sessions": []}
    try:
        full_history, sessions = parser.construct_all_txns_json(logs, parser.construct_single_txn4wrrange_json)
    except RejectException as e:
        out["reject"] = str(e)
        print(json.dumps(out))
        return
    init = initial_state(full_history)
    if init is not None:
        out["initial"] = sorted([k, v] for k, v in init.items())
    # The sessions are the files whose history is not the initial one, in
    # order.
    session_files = []
    for content, name in zip(logs, files):
        txns, _ = parser.construct_single_txn4wrrange_json(content, 1)
        if not parser.is_initial_history(txns):
            session_files.append(name)
    assert len(session_files) == len(sessions)
    for name, txns in zip(session_files, sessions):
        s = {"file": name, "txns": []}
        for t in txns:
            mops = t["value"]
            ranges = []
            for m in mops:
                if m[0] == "range":
                    ids = sorted(r["id"] for r in m[3] + m[4])
                    ranges.append([m[1], m[2], ids])
            s["txns"].append({
                "reads": sorted([k, v] for k, v in ext_reads_fn(mops).items()),
                "writes": sorted([k, v] for k, v in ext_writes_fn(mops).items()),
                "ranges": ranges,
                "mops": len(mops),
                "failed_writes_only": all(m[0] == "w" and not m[3] for m in mops),
            })
        out["sessions"].append(s)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
