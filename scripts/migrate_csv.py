#!/usr/bin/python3
"""Converts measurement CSVs written before protocol 2 (no `machine` and `runtime` columns) in place.

Rows measured before the collector recorded its machine get `machine` = `unrecorded` (docs/DATASET.md):
their machine is not known and must not be guessed. `runtime` is what every such row ran: Debian's
python3-torch 1.13.1 (`torch-1.13.1`; its `torch.__version__` says 1.13.0a0). A file that already has
the columns is left as it is. The file is rewritten through a temporary file and rename, so a killed run
leaves either the old or the new file, never half of one.

usage: scripts/migrate_csv.py FILE.csv [FILE.csv ...]
"""
import csv
import os
import sys

NEW = ("machine", "runtime")


def migrate(path: str) -> str:
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    if not rows:
        return f"{path}: empty, left alone"
    head = rows[0]
    if all(c in head for c in NEW):
        return f"{path}: already has {', '.join(NEW)}"
    if any(c in head for c in NEW):
        raise SystemExit(f"migrate_csv: {path} has only some of {NEW}; fix it by hand")
    for i, r in enumerate(rows[1:], start=2):
        if len(r) != len(head):
            raise SystemExit(f"migrate_csv: {path}:{i}: {len(r)} fields, the header has {len(head)}")
    tmp = path + ".migrate-tmp"
    with open(tmp, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(head + list(NEW))
        for r in rows[1:]:
            w.writerow(r + ["unrecorded", "torch-1.13.1"])
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    return f"{path}: {len(rows) - 1} rows, machine=unrecorded runtime=torch-1.13.1"


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(argv) >= 2 else 2
    for p in argv[1:]:
        print(migrate(p))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
