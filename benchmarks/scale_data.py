"""Tables for the scale benchmark: UCI Adult resampled with jitter, plus a short fake free-text note.

``make_table(n, dest)`` draws ``n`` rows with replacement from adult.data
(``../shared/data/adult/adult.data``; the shipped 4,000-row sample if absent),
jitters the numeric columns within their public bounds, adds a ``note`` column
of short fake notes (Faker names from a seeded pool, fictional 555-01xx phone
numbers, reserved example.* email domains: no real person), and writes Parquet
in row groups of ``row_group_rows``, generated chunk by chunk (so a 1,000,000-row
table never sits in memory whole). ``make_schema(dest)`` writes the schema:
the Adult columns of ``adult_demo`` plus ``note`` (kind text), without the
demo's identifier columns. The same seed gives the same table.
"""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from dpsyn.demo import _AREA_CODES  # geographic NANP area codes (public); lines are the fictional 555-01xx

REPO = Path(__file__).resolve().parents[1]
ADULT = REPO.parent / "shared" / "data" / "adult" / "adult.data"
SCHEMA_NAME = "adult_scale"
_POOL = 400  # fake first and last names each
_TEMPLATES = (
    "Seen {name}, {age}.",
    "Call {name} at {phone}.",
    "{name} sent results to {email}.",
    "Follow-up for {name}; stable.",
    "No change since last visit.",
)
_JITTER = {  # column: (kind, scale): integer steps or a multiplicative log-normal factor
    "age": ("step", 2), "hours-per-week": ("step", 2), "fnlwgt": ("mult", 0.1),
    "capital-gain": ("mult", 0.05), "capital-loss": ("mult", 0.05),
}


def make_schema(dest: Path) -> Path:
    """Write ``adult_scale.yaml`` (Adult columns + ``note``) into ``dest``; returns its path."""
    spec = yaml.safe_load((resources.files("dpsyn") / "schemas" / "adult_demo.yaml").read_text(encoding="utf-8"))
    spec["name"] = SCHEMA_NAME
    spec["description"] = "UCI Adult resampled with jitter plus a short fake note (benchmarks/scale_data.py)."
    spec["columns"] = [c for c in spec["columns"] if c.get("kind") != "identifier"]
    dest.mkdir(parents=True, exist_ok=True)
    path = dest / f"{SCHEMA_NAME}.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return path


def _adult() -> pd.DataFrame:
    from dpsyn.io import read_table
    from dpsyn.schema import load_schema

    schema = load_schema("adult")
    if ADULT.exists():
        return read_table(ADULT, schema)
    with resources.as_file(resources.files("dpsyn") / "data" / "adult_sample.data") as p:
        return read_table(p, schema)


def _name_pool(seed: int) -> tuple[list[str], list[str]]:
    from faker import Faker

    fake = Faker("en_US")
    fake.seed_instance(seed)
    first, last = set(), set()
    while len(first) < _POOL:
        w = fake.first_name()
        if w.isalpha() and len(w) >= 3:
            first.add(w)
    while len(last) < _POOL:
        w = fake.last_name()
        if w.isalpha() and len(w) >= 3:
            last.add(w)
    return sorted(first), sorted(last)


def _notes(rng: np.random.Generator, ages: pd.Series, first: list[str], last: list[str]) -> list[str]:
    n = len(ages)
    fi, la = rng.integers(0, len(first), n), rng.integers(0, len(last), n)
    tpl = rng.integers(0, len(_TEMPLATES), n)
    line = rng.integers(100, 200, n)
    area = rng.integers(0, len(_AREA_CODES), n)
    out = []
    for i, age in enumerate(ages.tolist()):
        name = f"{first[fi[i]]} {last[la[i]]}"
        email = f"{first[fi[i]].lower()}.{last[la[i]].lower()}@example.{('com', 'org', 'net')[i % 3]}"
        out.append(_TEMPLATES[tpl[i]].format(name=name, age="age unknown" if age != age else int(age),
                                             phone=f"({_AREA_CODES[area[i]]}) 555-01{line[i] % 100:02d}", email=email))
    return out


def make_table(n: int, dest: Path, *, seed: int = 0, row_group_rows: int = 50_000, chunk: int = 100_000) -> Path:
    """Write an ``n``-row table to ``dest`` (Parquet, row groups of ``row_group_rows``); returns ``dest``."""
    import pyarrow as pa

    from dpsyn.io import write_parquet_stream
    from dpsyn.schema import load_schema

    base = _adult()
    bounds = {c.name: c.numeric_bounds() for c in load_schema("adult").columns if c.kind.value == "numeric"}
    first, last = _name_pool(seed)
    rng = np.random.default_rng(seed)
    dest.parent.mkdir(parents=True, exist_ok=True)

    def chunks():
        for start in range(0, n, chunk):
            m = min(chunk, n - start)
            df = base.iloc[rng.integers(0, len(base), m)].reset_index(drop=True)
            for col, (kind, scale) in _JITTER.items():
                x = df[col].to_numpy(dtype=float)
                if kind == "step":
                    x = x + rng.integers(-scale, scale + 1, m)
                else:
                    x = np.round(x * np.exp(rng.normal(0.0, scale, m)))
                lo, hi = bounds[col]
                df[col] = np.clip(x, lo, hi)
            df["note"] = _notes(rng, df["age"], first, last)
            # as a data owner would store it: categories as text, numbers as numbers, missing as null
            yield pa.Table.from_pandas(df, preserve_index=False)

    write_parquet_stream(chunks(), dest, row_group_rows=row_group_rows)
    return dest


def note_words() -> set[str]:
    """Words of the note templates (public)."""
    return {w.lower() for t in _TEMPLATES for w in re.findall(r"[A-Za-z]+", t)}
