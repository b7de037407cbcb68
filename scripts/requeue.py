#!/usr/bin/python3
"""requeue.py — send time rows measured on a busy machine back to the campaign.

A row whose timed iterations shared the machine with other work (the CSV's busy_other column, the CPU
share of other processes during the timed iterations) times the contention as much as the network; with
two threads (cpu2) a busy second core makes the median up to 30x slower. This script moves such rows out
of the dataset into data/archive/requeued.csv (never deleted: their memory figures stay valid and the
archive says why they left), so that rerunning scripts/campaign.sh measures those configurations again.

    scripts/requeue.py --hw cpu2 --min-busy 0.1 [--dataset data/dataset.csv] [--dry-run]

The dataset is flock()ed like `abacus profile` does, so this refuses to run while the campaign writes.
"""
import argparse
import csv
import fcntl
import os
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("--dataset", default="data/dataset.csv")
    ap.add_argument("--archive", default="data/archive/requeued.csv")
    ap.add_argument("--hw", required=True, help="hardware id whose rows are considered (cpu1, cpu2)")
    ap.add_argument("--min-busy", type=float, required=True,
                    help="requeue ok rows whose busy_other exceeds this share of the machine")
    ap.add_argument("--dry-run", action="store_true")
    a = ap.parse_args()

    try:
        fd = os.open(a.dataset, os.O_RDWR)
    except OSError as e:
        sys.exit(f"requeue: cannot open {a.dataset}: {e.strerror}")
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        sys.exit(f"requeue: {a.dataset} is locked by a running `abacus profile` (the campaign); stop it first")

    with open(a.dataset, newline="") as f:
        text = f.read()
    reader = csv.reader(text.splitlines(keepends=True))
    header = next(reader, None)
    if not header or "busy_other" not in header or "hw" not in header:
        sys.exit(f"requeue: {a.dataset}: not a dataset CSV (no busy_other/hw columns in line 1)")
    i_busy, i_hw, i_status = header.index("busy_other"), header.index("hw"), header.index("status")
    keep, move = [], []
    for n, row in enumerate(reader, start=2):
        if len(row) != len(header):
            sys.exit(f"requeue: {a.dataset} line {n}: {len(row)} fields, the header has {len(header)}")
        try:
            busy = float(row[i_busy]) if row[i_busy] else 0.0
        except ValueError:
            sys.exit(f"requeue: {a.dataset} line {n}: busy_other '{row[i_busy]}' is not a number")
        (move if row[i_hw] == a.hw and row[i_status] == "ok" and busy > a.min_busy else keep).append(row)
    print(f"requeue: {len(move)} of {len(keep) + len(move)} rows move to {a.archive}")
    if a.dry_run or not move:
        return

    # The archive first: a crash between the two steps leaves a row in both places, never in neither.
    new = not os.path.exists(a.archive)
    with open(a.archive, "a", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        if new:
            w.writerow(header)
        w.writerows(move)
        f.flush()
        os.fsync(f.fileno())
    tmp = a.dataset + ".requeue.tmp"
    with open(tmp, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(header)
        w.writerows(keep)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, a.dataset)


if __name__ == "__main__":
    main()
