"""Reading a dataset's files and publishing its synthetic tables (one file per table, one atomic folder)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from dpsyn.errors import InputError
from dpsyn.io import read_table, staged_dir
from dpsyn.relational.schema import DatasetSchema

__all__ = ["read_dataset", "write_dataset"]


def read_dataset(dataset: DatasetSchema, folder: str | Path, *,
                 files: dict[str, str | Path] | None = None) -> dict[str, pd.DataFrame]:
    """Every table of ``dataset`` read as its table schema declares (the files are not modified). ``files``
    overrides a table's file (name → path); otherwise each is the dataset's ``file`` under ``folder``."""
    folder = Path(folder)
    refs = [dataset.root] + [c.ref for c in dataset.children]
    schemas = {dataset.root.name: dataset.root_schema} | {c.name: c.schema_ for c in dataset.children}
    out = {}
    for ref in refs:
        path = Path((files or {}).get(ref.name) or folder / (ref.file or f"{ref.name}.csv"))
        if not path.is_file():
            raise InputError(f"table '{ref.name}' of dataset '{dataset.name}': file not found: {path} (give the "
                             "folder holding the dataset's files)")
        out[ref.name] = read_table(path, schemas[ref.name])
    return out


def write_dataset(tables: dict[str, pd.DataFrame], dest: str | Path, *, manifest: dict | None = None,
                  overwrite: bool = False, files: dict[str, str] | None = None, before_publish=None) -> Path:
    """Write one CSV per table, ``manifest.json`` and the text ``files`` (name → content) into a staging folder,
    then move it to ``dest`` in one rename: a reader sees all tables or none. ``before_publish(stage)`` runs after
    every file is written and before the rename (e.g. to record the files' hashes); if it raises, nothing is
    published."""
    dest = Path(dest)
    with staged_dir(dest, overwrite=overwrite) as stage:
        for name, df in tables.items():
            df.to_csv(stage / f"{name}.csv", index=False)
        for name, text in (files or {}).items():
            (stage / name).write_text(text, encoding="utf-8")
        if manifest is not None:
            (stage / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True, default=str),
                                                 encoding="utf-8")
        if before_publish is not None:
            before_publish(stage)
    return dest
