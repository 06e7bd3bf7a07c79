"""Make dpsyn/data/adult_sample.data: a seeded random sample of UCI Adult rows.

Usage (from the repository root)::

    python benchmarks/make_adult_sample.py [SOURCE [DEST]]

SOURCE defaults to ``../shared/data/adult/adult.data`` relative to the
repository root, DEST to ``dpsyn/data/adult_sample.data``. The sample is
``N_ROWS`` distinct data rows drawn with ``random.Random(SEED).sample`` from
the non-blank lines of SOURCE, written in their original order and
byte-for-byte in the original line format (no header, ", " separated,
"\\n" line ends, one trailing newline). Running it again gives the same
file; it prints the sha256 of the source and of the sample for NOTICE.md.
"""

from __future__ import annotations

import hashlib
import random
import sys
from pathlib import Path

SEED = 20261130
N_ROWS = 4000
REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SOURCE = REPO_ROOT.parent / "shared" / "data" / "adult" / "adult.data"
DEFAULT_DEST = REPO_ROOT / "dpsyn" / "data" / "adult_sample.data"
EXPECTED_SOURCE_SHA256 = "5b00264637dbfec36bdeaab5676b0b309ff9eb788d63554ca0a249491c86603d"


def sample_lines(raw: bytes, n_rows: int = N_ROWS, seed: int = SEED) -> bytes:
    """Return ``n_rows`` randomly chosen non-blank lines of ``raw``, in file order."""
    lines = [line for line in raw.split(b"\n") if line.strip()]
    if len(lines) < n_rows:
        raise SystemExit(f"source has only {len(lines)} data rows, fewer than {n_rows}")
    keep = sorted(random.Random(seed).sample(range(len(lines)), n_rows))
    return b"".join(lines[i] + b"\n" for i in keep)


def main(argv: list[str]) -> int:
    source = Path(argv[1]) if len(argv) > 1 else DEFAULT_SOURCE
    dest = Path(argv[2]) if len(argv) > 2 else DEFAULT_DEST
    if not source.is_file():
        print(f"source file not found: {source}", file=sys.stderr)
        return 2
    raw = source.read_bytes()
    src_sha = hashlib.sha256(raw).hexdigest()
    if src_sha != EXPECTED_SOURCE_SHA256:
        print(f"warning: {source} is not the UCI original (sha256 {src_sha})", file=sys.stderr)
    out = sample_lines(raw)
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_bytes(out)
    print(f"source {source} sha256 {src_sha}")
    n_out = out.count(b"\n")
    print(f"wrote {dest}: {n_out} rows, sha256 {hashlib.sha256(out).hexdigest()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
