#!/usr/bin/python3
"""busy_worker.py — collector/worker.py whose first timed configuration reports a busy machine.

Used by collector_test.py to check that `abacus profile --wait-quiet` measures such a configuration again
instead of writing a row whose time measured the contention. Every later measurement reports the real figure.
"""
import sys

from collector import worker  # the collector starts workers with PYTHONPATH at the repository root

real_busy_other = worker.busy_other
calls = 0


def first_busy(a, b, ncpu):
    global calls
    calls += 1
    return 0.75 if calls == 1 else real_busy_other(a, b, ncpu)


worker.busy_other = first_busy
sys.exit(worker.main())
