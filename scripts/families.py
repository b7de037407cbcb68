"""Writes data/families.tsv: the family of every network the dataset can hold, for `abacus eval --protocol lofo`
(leave-one-family-out: a model that never saw any network of a family predicts that family).

  /usr/bin/python3 scripts/families.py [--out data/families.tsv] [--generated 1000]

The zoo's families are its own (collector/zoo.py `family`: resnet, vgg, efficientnet, rnn, ...); a generated
network's family is its generator family (gen_cnn, gen_tfm, ...: collector/generator.py). Networks that are
in neither (scripts/outside_zoo.py's, which never enter the dataset) are not listed: abacus treats an
unlisted network as a family of its own.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(ROOT, "data", "families.tsv"))
    ap.add_argument("--generated", type=int, default=1000, help="generated networks to list (the catalogue)")
    a = ap.parse_args(argv)
    env = dict(os.environ, PYTHONPATH=ROOT, ABACUS_GENERATED=str(a.generated))
    out = subprocess.run(["/usr/bin/python3", "-m", "collector.worker", "--list"], cwd=ROOT, env=env,
                         capture_output=True, text=True, check=True).stdout
    nets = [json.loads(line) for line in out.splitlines() if line.strip()]
    tmp = a.out + ".tmp"
    with open(tmp, "w") as f:
        f.write("# network\tfamily (scripts/families.py; abacus eval --protocol lofo --families FILE)\n")
        for n in nets:
            f.write(f"{n['name']}\t{n['family'] or n['name']}\n")
    os.replace(tmp, a.out)
    fams = {n["family"] for n in nets}
    print(f"{a.out}: {len(nets)} networks in {len(fams)} families")
    return 0


if __name__ == "__main__":
    sys.exit(main())
