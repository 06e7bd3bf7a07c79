"""The release inventory: every value a run writes anywhere, and why writing it is safe.

Each entry classifies the keys of one *place* (the output folder's files, the manifest, MLflow params, metrics,
tags and artifacts, the registry, Prefect artifacts, states and logs, the lineage and budget ledgers) as

* ``public``: public configuration or knowledge (the config, the schema, file names the user gave, ids we drew
  at random, the code's own constants);
* ``dp``: a DP output charged to the run's accountant, or post-processing of DP outputs only; ``how`` names the
  mechanism (its label on the accountant) or what it is computed from;
* ``private``: a function of the private rows without noise, kept inside the trust boundary; ``how`` says where it
  lives and who may read it.

The table itself is data: ``dpsyn/privacy/inventory.yaml``, loaded here. Nothing ``private`` may reach a place that
is published (the output folder, MLflow, the registry, Prefect).
``tests/integration/test_release_inventory.py`` runs a ``synthesize`` run, a drift run and a ``validate`` run,
enumerates every key they wrote, and fails on any key that no entry matches, and on any published value that
contains the input's exact row counts or a content hash of its rows. docs/privacy.md carries the argument for
each mechanism named here.

Keys are matched with :func:`fnmatch.fnmatchcase` patterns (``*`` matches anything, ``/`` included); lists in
JSON documents are flattened with ``[]`` (``checks[].value``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from fnmatch import fnmatchcase
from importlib.resources import files
from typing import Literal

__all__ = ["INVENTORY", "PUBLISHED_PLACES", "Entry", "classify", "flatten_keys", "markdown_table", "unclassified"]

Kind = Literal["public", "dp", "private"]


@dataclass(frozen=True)
class Entry:
    place: str  # e.g. "mlflow.metric"
    pattern: str  # fnmatch pattern over the key
    kind: Kind
    how: str  # public: what it is; dp: the mechanism or what it is computed from; private: where it stays


#: Places a run publishes: a ``private`` entry may not name one of them.
PUBLISHED_PLACES = (
    "output.file", "output.manifest", "output.validation_report", "output.synthetic_column", "mlflow.param",
    "mlflow.metric", "mlflow.tag", "mlflow.artifact", "mlflow.registry_tag", "mlflow.logged_model_tag",
    "prefect.artifact", "prefect.flow_param", "prefect.state", "prefect.log", "prefect.event", "mlflow.dataset",
    "validate.output", "dataset.file", "dataset.manifest",
)

def _load() -> tuple[Entry, ...]:
    import yaml

    data = yaml.safe_load(files("dpsyn.privacy").joinpath("inventory.yaml").read_text(encoding="utf-8"))
    return tuple(Entry(place, x["key"], x["class"], x["how"]) for place, rows in data.items() for x in rows)


#: The committed inventory (dpsyn/privacy/inventory.yaml), in order.
INVENTORY: tuple[Entry, ...] = _load()


def flatten_keys(obj, prefix: str = "") -> list[str]:
    """The keys of a JSON document, nested keys joined with ``.``, list items as ``[]`` (scalars and empty
    containers are leaves)."""
    out: list[str] = []
    if isinstance(obj, dict) and obj:
        for k, v in obj.items():
            out.extend(flatten_keys(v, f"{prefix}.{k}" if prefix else str(k)))
    elif isinstance(obj, list) and obj:
        for v in obj:
            out.extend(flatten_keys(v, f"{prefix}[]"))
    else:
        out.append(prefix)
    return sorted(set(out))


def classify(place: str, key: str) -> Entry | None:
    """The first entry of :data:`INVENTORY` for ``place`` whose pattern matches ``key`` (None: unclassified)."""
    key = key.replace("[]", "\x01")  # "[]" marks list items, not an fnmatch character set
    for e in INVENTORY:
        if e.place == place and fnmatchcase(key, e.pattern.replace("[]", "\x01")):
            return e
    return None


def unclassified(items: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """The (place, key) pairs that no entry classifies, and those classified ``private`` in a published place."""
    bad = []
    for place, key in items:
        e = classify(place, key)
        if e is None or (e.kind == "private" and place in PUBLISHED_PLACES):
            bad.append((place, key))
    return sorted(set(bad))


def markdown_table() -> str:
    """The inventory as the Markdown table docs/privacy.md carries (a unit test keeps the two equal)."""
    kinds = {"public": "public", "dp": "DP", "private": "**private**"}
    rows = ["| place | key | class | mechanism, source or where it stays |", "|---|---|---|---|"]
    for e in INVENTORY:
        key = e.pattern.replace("|", "\\|")
        rows.append(f"| {e.place} | `{key}` | {kinds[e.kind]} | {e.how} |")
    return "\n".join(rows)
