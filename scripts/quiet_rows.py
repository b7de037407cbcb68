#!/usr/bin/python3
"""Time error of an evaluation's rows split by how quiet the machine was while they were timed.

  abacus eval DATA.csv... --protocol P [--runtime NAME] --rows ROWS.csv
  /usr/bin/python3 scripts/quiet_rows.py ROWS.csv [--limit 0.1]

A row whose timed iterations shared the machine with other work (the CSV's busy_other above the limit;
the collector measures such a configuration again, at most twice, then writes it) has a time that is an
upper bound, not a measurement: scored against it, a prediction for a quiet machine looks worse than it
is. This prints, for the quiet rows and the busy ones apart, the count, the time MRE (speed-adjusted
prediction) and, where the protocol gives intervals, the share of measured times inside them; memory does
not depend on it and is printed over all rows.
"""
import argparse
import csv
import sys


def summary(rows):
    if not rows:
        return "0 rows"
    t = sum(abs(float(r["time_pred_s"]) / float(r["time_s"]) - 1) for r in rows) / len(rows)
    with_iv = [r for r in rows if float(r["time_hi_s"]) > 0]
    cov = (sum(float(r["time_lo_s"]) <= float(r["time_s"]) <= float(r["time_hi_s"]) for r in with_iv) / len(with_iv)
           if with_iv else float("nan"))
    return f"{len(rows)} rows, time MRE {100 * t:.2f} %, inside the 90 % interval {100 * cov:.1f} %"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("rows", help="the CSV of `abacus eval --rows`")
    ap.add_argument("--limit", type=float, default=0.10, help="busy_other above this is a busy row (default 0.1)")
    a = ap.parse_args(argv)
    try:
        rows = list(csv.DictReader(open(a.rows, newline="")))
    except OSError as e:
        sys.exit(f"quiet_rows: cannot read {a.rows}: {e.strerror}")
    need = {"busy_other", "time_s", "time_pred_s", "time_lo_s", "time_hi_s", "memory_bytes", "memory_pred_bytes"}
    if not rows or need - set(rows[0]):
        sys.exit(f"quiet_rows: {a.rows} is not an `abacus eval --rows` file (needs columns {', '.join(sorted(need))})")

    def busy(r):
        try:
            return float(r["busy_other"]) > a.limit
        except ValueError:  # empty or nan: the row predates the column, counted as quiet
            return False

    quiet = [r for r in rows if not busy(r)]
    loud = [r for r in rows if busy(r)]
    mem = sum(abs(float(r["memory_pred_bytes"]) / float(r["memory_bytes"]) - 1) for r in rows) / len(rows)
    print(f"quiet (busy_other <= {a.limit:g}): {summary(quiet)}")
    print(f"busy  (busy_other >  {a.limit:g}): {summary(loud)}")
    print(f"memory over all {len(rows)} rows: MRE {100 * mem:.2f} %")
    return 0


if __name__ == "__main__":
    sys.exit(main())
