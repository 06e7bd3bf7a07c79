"""Structured (non-text) columns: classify each one, then scrub it column-wise.

A column is classified from two sources:

* its **header**: tokens of the column name matched against hints such as
  ``email``, ``phone``, ``ssn``, ``mrn``, ``dob``, ``first_name``, ``address``,
  ``*_id`` (:func:`header_hint`);
* a **bounded sample** of its values (at most ``ScrubConfig.sample_size``
  non-missing values, spread evenly over the column), joined into one text and
  analyzed in one Presidio call (:func:`classify_sample`). A value counts as
  an entity when a detection covers at least half of its characters.

The operator then runs on the whole column at once (:func:`apply_operator`):
``drop`` removes it, ``replace``/``redact`` write one constant, ``hash`` and
``pseudonym`` are computed once per distinct value. Nothing here logs or
returns a value: only column names, entity types, counts and fractions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dpsyn.pii.operators import get_operator, tag

if TYPE_CHECKING:
    import pandas as pd

    from dpsyn.pii.config import ScrubConfig
    from dpsyn.pii.engine import PIIEngine

__all__ = [
    "DETECTABLE_ENTITIES",
    "ColumnClass",
    "apply_operator",
    "classify_sample",
    "column_tokens",
    "header_hint",
    "sample_values",
]

# Entities whose presence in a column's values is checked (a column declared pii: none
# that is mostly one of these fails closed). PERSON only with an NER model.
DETECTABLE_ENTITIES: tuple[str, ...] = (
    "EMAIL_ADDRESS",
    "PHONE_NUMBER",
    "US_SSN",
    "CREDIT_CARD",
    "CN_RESIDENT_ID",
    "IBAN_CODE",
    "IP_ADDRESS",
    "MEDICAL_RECORD_NUMBER",
    "US_PASSPORT",
    "PERSON",
)
MIN_VALUE_COVERAGE = 0.5  # share of a value's characters a detection must cover

# Header hints: (entity, tokens that must all occur). Checked in order; the first match wins.
_NAME_QUALIFIERS = ("first", "last", "full", "given", "family", "middle", "maiden", "patient", "person", "customer",
                    "client", "member", "contact", "sur", "nick", "legal", "mother", "father", "doctor", "physician")  # fmt: skip
_HINTS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("EMAIL_ADDRESS", ("email",)),
    ("EMAIL_ADDRESS", ("e", "mail")),
    ("EMAIL_ADDRESS", ("mail",)),
    ("US_SSN", ("ssn",)),
    ("US_SSN", ("social", "security")),
    ("MEDICAL_RECORD_NUMBER", ("mrn",)),
    ("MEDICAL_RECORD_NUMBER", ("medical", "record")),
    ("MEDICAL_RECORD_NUMBER", ("chart", "number")),
    ("CREDIT_CARD", ("credit", "card")),
    ("CREDIT_CARD", ("card", "number")),
    ("CN_RESIDENT_ID", ("resident", "id")),
    ("NATIONAL_ID", ("national", "id")),
    ("NATIONAL_ID", ("passport",)),
    ("NATIONAL_ID", ("id", "card")),
    ("DATE_OF_BIRTH", ("dob",)),
    ("DATE_OF_BIRTH", ("birth",)),
    ("DATE_OF_BIRTH", ("birthdate",)),
    ("DATE_OF_BIRTH", ("birthday",)),
    ("PHONE_NUMBER", ("phone",)),
    ("PHONE_NUMBER", ("telephone",)),
    ("PHONE_NUMBER", ("tel",)),
    ("PHONE_NUMBER", ("mobile",)),
    ("PHONE_NUMBER", ("cell",)),
    ("PHONE_NUMBER", ("fax",)),
    ("IP_ADDRESS", ("ip",)),
    ("ADDRESS", ("address",)),
    ("ADDRESS", ("street",)),
    ("ADDRESS", ("addr",)),
    ("LOCATION", ("zip",)),
    ("LOCATION", ("postcode",)),
    ("LOCATION", ("postal",)),
    ("PERSON", ("surname",)),
    ("PERSON", ("firstname",)),
    ("PERSON", ("lastname",)),
    ("PERSON", ("fullname",)),
    ("PERSON", ("forename",)),
)
_IDENTIFIER_TOKENS = frozenset({"id", "uuid", "guid", "identifier", "nbr"})


def column_tokens(name: str) -> list[str]:
    """Lower-case word tokens of a column name (``patientFirstName`` -> patient, first, name)."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", str(name))
    return [t for t in re.split(r"[^a-z0-9]+", spaced.lower()) if t]


def header_hint(name: str, *, bare_name_is_person: bool = True) -> str | None:
    """The entity a column's name suggests, or ``None``.

    ``name`` alone counts as a person's name only with ``bare_name_is_person``
    (true for a data table; false for the tables of tools, where ``name`` is a
    run's or a flow's name). ``*_id``-style names give ``IDENTIFIER``.
    """
    toks = column_tokens(name)
    if not toks:
        return None
    tokset = set(toks)
    for entity, needed in _HINTS:
        if all(t in tokset for t in needed):
            return entity
    if "name" in tokset:
        if tokset & set(_NAME_QUALIFIERS) or (bare_name_is_person and toks == ["name"]):
            return "PERSON"
    if tokset & _IDENTIFIER_TOKENS and toks[-1] in _IDENTIFIER_TOKENS:
        return "IDENTIFIER"
    return None


@dataclass(frozen=True)
class ColumnClass:
    """How a column was classified (no values): header hint, sampled entity and its share."""

    hint: str | None
    detected: str | None
    fraction: float
    sampled: int

    def to_dict(self) -> dict[str, Any]:
        return {"hint": self.hint, "detected": self.detected, "fraction": round(self.fraction, 3), "sampled": self.sampled}


def _as_text(v: Any) -> str:
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return " ".join(str(v).split())


def sample_values(s: pd.Series, n: int) -> list[str]:
    """At most ``n`` non-missing values of ``s``, spread evenly over it, as one-line strings."""
    import numpy as np

    nn = s.dropna()
    if len(nn) > n:
        nn = nn.iloc[np.unique(np.linspace(0, len(nn) - 1, n).astype(np.int64))]
    return [t for t in (_as_text(v) for v in nn.tolist()) if t]


def classify_sample(
    values: list[str],
    *,
    engine: PIIEngine,
    config: ScrubConfig,
    context: list[str] | None = None,
    use_ner: bool = True,
) -> tuple[str | None, float]:
    """The entity most of ``values`` look like and its share (``(None, 0.0)`` when none).

    All values are analyzed in one Presidio call on the newline-joined text;
    detections are clipped to each value. ``context`` (e.g. the column name's
    tokens) may raise the score of weak patterns.
    """
    if not values:
        return None, 0.0
    entities = [e for e in DETECTABLE_ENTITIES if e in engine.supported_entities and (use_ner or e != "PERSON")]
    if not entities:
        return None, 0.0
    text = "\n".join(values)
    bounds, pos = [], 0
    for v in values:
        bounds.append((pos, pos + len(v)))
        pos += len(v) + 1
    nlp = engine.analyzer.nlp_engine
    if use_ner:
        artifacts = nlp.process_text(text, engine.language)
    else:  # tokens only: the tokenizer of the loaded pipeline, no NER
        doc = nlp.nlp[engine.language].make_doc(text)
        artifacts = nlp._doc_to_nlp_artifact(doc, engine.language)
        artifacts.entities = []
    results = engine.analyzer.analyze(
        text=text,
        language=engine.language,
        entities=entities,
        score_threshold=config.score_threshold,
        nlp_artifacts=artifacts,
        context=context or None,
    )
    import bisect

    starts = [b[0] for b in bounds]
    best: list[tuple[float, str] | None] = [None] * len(values)
    for r in results:
        i = bisect.bisect_right(starts, r.start) - 1
        while 0 <= i < len(bounds) and bounds[i][0] < r.end:
            lo, hi = bounds[i]
            covered = max(0, min(hi, r.end) - max(lo, r.start))
            share = covered / max(1, hi - lo)
            if share >= MIN_VALUE_COVERAGE and (best[i] is None or share > best[i][0]):
                best[i] = (share, r.entity_type)
            i += 1
    counts: dict[str, int] = {}
    for b in best:
        if b is not None:
            counts[b[1]] = counts.get(b[1], 0) + 1
    if not counts:
        return None, 0.0
    entity, n = max(sorted(counts.items()), key=lambda kv: kv[1])
    return entity, n / len(values)


def apply_operator(s: pd.Series, *, operator: str, entity: str) -> pd.Series | None:
    """The column after ``operator`` (``None`` when the column is dropped); missing values stay missing."""
    import pandas as pd

    op = get_operator(operator)
    if op.drops_column:
        return None
    present = s.notna()
    if operator in ("replace", "redact"):
        value = tag(entity) if operator == "replace" else ""
        out = pd.Series(pd.NA, index=s.index, dtype="string")
        out[present] = value
        return out
    fn = op.bind(entity)
    codes, uniques = pd.factorize(s, use_na_sentinel=True)
    mapped = [fn(_as_text(u)) for u in uniques.tolist()]
    import numpy as np

    arr = np.array([*mapped, None], dtype=object)
    return pd.Series(arr[codes], index=s.index, dtype="string")
