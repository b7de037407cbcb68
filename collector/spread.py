#!/usr/bin/python3
"""Spread of repeated measurements in an `abacus profile` CSV (the noise floor of docs/PROTOCOL.md).

  /usr/bin/python3 collector/spread.py FILE.csv [...]

Groups the `ok` rows by configuration (network, input shape, optimizer, hardware id: every column of the key
but the repeat index) and prints, for each configuration measured more than once: the count, the median
time_s of each repeat, the coefficient of variation (sample stdev / mean) of time_s across repeats and of
time_s / calib_s, the largest relative memory difference, and the mean busy_other. Standard library only.
"""
import csv
import statistics
import sys


def cv(v):
    return statistics.stdev(v) / statistics.fmean(v) if len(v) > 1 and statistics.fmean(v) else 0.0


def spread(v):
    return (max(v) - min(v)) / max(v) if v and max(v) else 0.0


def main(paths):
    groups = {}
    for p in paths:
        with open(p, newline="") as f:
            for r in csv.DictReader(f):
                if r["status"] == "ok":
                    groups.setdefault((r["network"], r["input_shape"], r["optimizer"], r["hw"]), []).append(r)
    for key, rs in groups.items():
        if len(rs) < 2:
            continue
        t = [float(r["time_s"]) for r in rs]
        c = [float(r["calib_s"]) for r in rs]
        n = [a / b for a, b in zip(t, c)]
        m = [int(r["memory_bytes"]) for r in rs]
        pb = [int(r["persistent_bytes"]) for r in rs]
        busy = [float(r["busy_other"]) for r in rs]
        print(f"{' '.join(key)}: {len(rs)} workers")
        print(f"  time_s          {' '.join(f'{x:.4f}' for x in t)}  cv {cv(t) * 100:.2f} %")
        print(f"  calib_s         {' '.join(f'{x:.4f}' for x in c)}  cv {cv(c) * 100:.2f} %")
        print(f"  time_s/calib_s  {' '.join(f'{x:.3f}' for x in n)}  cv {cv(n) * 100:.2f} %")
        print(f"  memory_bytes    {min(m)}..{max(m)}  spread {spread(m) * 100:.5f} %")
        print(f"  persistent      {min(pb)}..{max(pb)}  spread {spread(pb) * 100:.5f} %")
        print(f"  busy_other      {' '.join(f'{x:.2f}' for x in busy)}  mean {statistics.fmean(busy):.2f}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1:]))
