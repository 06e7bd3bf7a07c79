"""Fingerprint of one seeded library run, to check that a refactoring changed no behaviour.

    python benchmarks/same_table.py --synthesizer dpgen --epsilon 1 --seed 0

Fits the synthesizer on the whole of adult.data (read and masked as the schema declares) with the seeded noise
source (``privacy.noise_seed``: the library's test path; a synthesize run refuses it), samples 5,000 rows with
a fixed seed, and prints the accountant's history, ε and the SHA-256 of the sampled table. Run it in two
checkouts (``PYTHONPATH=<checkout>``): equal fingerprints mean the same synthetic table.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data" / "adult" / "adult.data"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--synthesizer", default="dpgen")
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--rows", type=int, default=5000)
    args = ap.parse_args(argv)
    warnings.filterwarnings("ignore")
    from dpsyn.io import read_table
    from dpsyn.masking import mask_table
    from dpsyn.schema import load_schema
    from dpsyn.synth import create

    schema = load_schema("adult")
    train, _ = mask_table(read_table(DATA, schema), schema)
    synth = create(args.synthesizer, {}, privacy={"epsilon": args.epsilon, "secure_rng": False,
                                                  "noise_seed": args.seed})
    synth.fit(train, schema)
    table = synth.sample(args.rows, random_state=args.seed)
    digest = hashlib.sha256(table.to_csv(index=False).encode()).hexdigest()
    print(json.dumps({"code": str(REPO), "history": [m["label"] for m in synth.privacy_["mechanisms"]],
                      "epsilon": synth.privacy_["epsilon_spent"], "sha256": digest}))


if __name__ == "__main__":
    sys.exit(main())
