#!/usr/bin/python3
"""One machine profile from several `abacus calibrate --out` runs of the same machine id (scripts/campaign.sh
measures three): per rate the median over the runs of rate / that run's reference workload, times the
median reference. Each run's rates were timed in the same minute as its reference, so their ratio is what
the host's speed at that minute does not change; the time model multiplies the rates by the rows' drift
(speed index / reference, docs/MACHINES.md), so the ratio is what it uses. On a host whose speed wanders (the
Intel VM of 2026-12-05: references of 44.3, 24.1 and 24.5 ms in three runs a minute apart) one run alone
carries its minute's speed in every rate. The spread written is (max - min) / median of the normalised
values over the runs; `runs` is the total of the runs' passes; `seconds` their median.

usage: scripts/merge_profiles.py OUT.machine RUN.machine [RUN.machine ...]
"""
import statistics
import sys


def read(path):
    head, rates, runs = {}, {}, 0
    with open(path) as f:
        lines = [l.rstrip("\n") for l in f]
    if not lines or not lines[0].startswith("abacus-machine-profile "):
        sys.exit(f"merge_profiles: {path}: not a machine profile (its first line must be 'abacus-machine-profile 1')")
    for n, line in enumerate(lines[1:], start=2):
        f = line.split()
        if not f or f[0].startswith("#"):
            continue
        if f[0] == "rate":
            if len(f) != 4:
                sys.exit(f"merge_profiles: {path}:{n}: a rate line is 'rate NAME SECONDS SPREAD'")
            rates[f[1]] = float(f[2])
        elif f[0] == "runs":
            runs = int(f[1])
        elif f[0] in ("adapt", "shot"):
            sys.exit(f"merge_profiles: {path}:{n}: an adapted profile; merge the runs of 'abacus calibrate' only")
        else:
            head[f[0]] = " ".join(f[1:])
    if "reference" not in rates or not all(v > 0 for v in rates.values()):
        sys.exit(f"merge_profiles: {path}: needs a positive 'reference' rate and positive rates")
    return lines[0], head, rates, runs


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    out, paths = argv[1], argv[2:]
    profs = [read(p) for p in paths]
    magic, head0, rates0, _ = profs[0]
    for p, (_, head, rates, _) in zip(paths, profs):
        for k in ("machine", "threads", "runtime"):
            if head.get(k) != head0.get(k):
                sys.exit(f"merge_profiles: {p}: {k} '{head.get(k)}' differs from {paths[0]}'s '{head0.get(k)}'")
        if set(rates) != set(rates0):
            sys.exit(f"merge_profiles: {p}: its rates differ from {paths[0]}'s")
    ref = statistics.median(r["reference"] for _, _, r, _ in profs)
    lines = [magic, f"# merged by scripts/merge_profiles.py from {len(paths)} runs: " +
             " ".join(p.rsplit("/", 1)[-1] for p in paths)]
    for k in ("machine", "threads", "runtime", "measured"):
        if k in head0:
            lines.append(f"{k} {head0[k]}")
    secs = [float(h["seconds"]) for _, h, _, _ in profs if "seconds" in h]
    if secs:
        lines.append(f"seconds {statistics.median(secs):.1f}")
    lines.append(f"runs {sum(r for _, _, _, r in profs) or len(profs)}")
    for name in rates0:  # the first run's order
        if name == "reference":
            v = [r["reference"] for _, _, r, _ in profs]
            med = ref
        else:
            v = [r[name] / r["reference"] * ref for _, _, r, _ in profs]
            med = statistics.median(v)
        lines.append(f"rate {name} {med:.6e} {(max(v) - min(v)) / med:.4f}")
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main(sys.argv)
