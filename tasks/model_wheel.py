"""A wheel of the ``dpsyn`` library for a logged model's own environment.

A registered model must load where no dpsyn checkout or development environment exists (``mlflow models serve``
builds a fresh virtual environment from the model's ``requirements.txt``). dpsyn is on no package index, so every
logged model carries a wheel of the library it was fitted with (``artifacts/dpsyn-<version>+<digest>-py3-none-any
.whl``) and its requirements install that file.

The wheel holds the ``dpsyn`` package only: no ``tasks``, ``flows`` or CLI (nothing that could collide with another
project's top-level package), and not the shipped sample data (``dpsyn/data``). Its requirements are what
unpickling and sampling a synthesizer imports (:data:`RUNTIME`), pinned to the versions that fitted it; Prefect,
Presidio, spaCy, Great Expectations and the ledgers' drivers are not needed to sample. The version's local label
is a digest of the package's files, so two models fitted by different code never share a cached environment.
"""

from __future__ import annotations

import base64
import hashlib
import io
import zipfile
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

__all__ = ["RUNTIME", "build_wheel", "pinned", "runtime_requirements"]

#: distributions a fitted synthesizer needs to be unpickled and sampled (torch for the DP-SGD models and pgm's task
#: model; pyarrow for pandas' string columns; scipy for the generators' helpers)
RUNTIME = ("numpy", "pandas", "pyarrow", "scipy", "pydantic", "pyyaml", "torch")


def pinned(dists) -> list[str]:
    """Each distribution pinned to its installed version (unpinned where it is not installed)."""
    out = []
    for dist in dists:
        try:
            out.append(f"{dist}=={version(dist)}")
        except PackageNotFoundError:
            out.append(dist)
    return out


def runtime_requirements() -> list[str]:
    """:data:`RUNTIME`, each pinned to the installed version."""
    return pinned(RUNTIME)


def _package_files() -> list[tuple[str, bytes]]:
    import dpsyn

    root = Path(dpsyn.__file__).resolve().parent
    files = []
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root)
        if not p.is_file() or "__pycache__" in rel.parts or p.suffix in (".pyc", ".pyo") or rel.parts[0] == "data":
            continue
        files.append((f"dpsyn/{rel.as_posix()}", p.read_bytes()))
    return files


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def build_wheel(dest: str | Path) -> Path:
    """Write the wheel into the folder ``dest`` and return its path (the same bytes for the same code)."""
    files = _package_files()
    h = hashlib.sha256()
    for name, data in files:
        h.update(name.encode() + b"\0" + hashlib.sha256(data).digest())
    try:
        base = version("dpsyn")
    except PackageNotFoundError:
        base = "0"
    ver = f"{base}+{h.hexdigest()[:12]}"
    info = f"dpsyn-{ver}.dist-info"
    metadata = "\n".join([
        "Metadata-Version: 2.1", "Name: dpsyn", f"Version: {ver}",
        "Summary: dpsyn's library, packaged with a logged model to sample from it", "Requires-Python: >=3.11",
        *(f"Requires-Dist: {r}" for r in runtime_requirements()), "",
    ]).encode()
    wheel = b"Wheel-Version: 1.0\nGenerator: dpsyn (tasks/model_wheel.py)\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    entries = files + [(f"{info}/METADATA", metadata), (f"{info}/WHEEL", wheel)]
    record = "\n".join([_record_line(n, d) for n, d in entries] + [f"{info}/RECORD,,", ""]).encode()
    path = Path(dest) / f"dpsyn-{ver}-py3-none-any.whl"
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for name, data in [*entries, (f"{info}/RECORD", record)]:
            zi = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))  # fixed: the same code, the same bytes
            zi.compress_type = zipfile.ZIP_DEFLATED
            zi.external_attr = 0o644 << 16
            z.writestr(zi, data)
    path.write_bytes(buf.getvalue())
    return path
