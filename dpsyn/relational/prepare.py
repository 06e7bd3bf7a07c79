"""Scrub and mask every table of a dataset before anything is fitted: the related tables' scrub → mask stage.

The single-table pipeline scrubs (``dpsyn.pii``) and masks (``dpsyn.masking``) its one table; a dataset runs the
same stages per table, with what only a dataset has:

* **keys stay for linking, not for release**: the persons' key and each child's foreign key are kept aside
  through masking (which drops identifier columns) and re-attached, so the synthesizer can bound each person's
  rows; they never reach a model (codes replace them) and the output carries fresh ids;
* **coded text is scrubbed with the person's own identifiers**: a child's text columns that the model reads (the
  dataset's ``select`` columns: diagnosis and drug descriptions, values of a terminology) go through Presidio's
  checked pattern recognizers (SSNs, NHS and card numbers, e-mails, URLs, MRNs: :data:`CODED_TEXT_ENTITIES`),
  and each row through a deny-list of its person's names, numbers and address taken from the persons' table
  through the foreign key (a name in a row of that patient is replaced). The language model's names, places and
  organisations and the looser number patterns are not looked for: on a terminology they fire on drug and
  disease words and on doses (on the Synthea export "Acetaminophen 325 MG Oral Tablet" became "[LOCATION] 325 MG
  Oral Tablet" and "Childhood asthma" "[ORGANIZATION] asthma"), and a value is released only if many persons
  share it (DP selection), which a person's own name or number is not. Presidio runs once per distinct text,
  the deny-list once per row whose text holds one of its person's terms;
* **masking by tier**: identifier columns and L1 columns without a ``generalize`` hierarchy are dropped, declared
  generalizations applied, and the result must conform to the table's schema (``mask_table``). k-anonymity
  (``mask.k``) has no DP bound and no per-person meaning across tables: refused.

Nothing here is released: the scrubbed and masked tables stay inside the trust boundary (what was found and
replaced is a statistic of the rows; it is neither logged nor returned).
"""

from __future__ import annotations

import logging

import pandas as pd

from dpsyn.errors import ConfigError
from dpsyn.masking import MaskConfig, mask_table
from dpsyn.pii import DENY_LIST_CLASSES, PII_CLASS_ENTITY, ScrubConfig, build_engine, deny_spans, row_terms, scrub_texts
from dpsyn.relational.schema import DatasetSchema
from dpsyn.schema import ColumnKind, TableSchema

__all__ = ["CODED_TEXT_ENTITIES", "check_mask", "coded_text_config", "prepare_dataset"]

logger = logging.getLogger(__name__)

def prepare_dataset(dataset: DatasetSchema, tables: dict[str, pd.DataFrame], *, scrub: ScrubConfig | None = None,
                    mask: MaskConfig | None = None, engine=None) -> dict[str, pd.DataFrame]:
    """Every table scrubbed and masked (new frames; the inputs are not modified). ``engine``: a Presidio engine
    to reuse (default: the cached engine of ``scrub``, built on first use)."""
    scrub = coded_text_config(scrub or ScrubConfig())
    mask = mask or MaskConfig()
    check_mask(mask)
    root, key = dataset.root.name, dataset.person.key
    terms = _person_terms(dataset.root_schema, tables[root], key)
    schemas = {root: dataset.root_schema} | {c.name: c.schema_ for c in dataset.children}
    keys = {root: key} | {c.name: c.ref.foreign_key for c in dataset.children}
    texts = {c.name: list(c.ref.select) for c in dataset.children}
    out = {}
    for name, df in tables.items():
        schema = schemas[name]
        frame = df.copy()
        cols = [c for c in texts.get(name, []) if c in frame.columns]
        if cols:
            engine = engine or build_engine(scrub)
            persons = frame[keys[name]]
            for col in cols:
                frame[col] = _scrub_column(frame[col], persons, terms, scrub=scrub, engine=engine)
        masked, _ = mask_table(frame.drop(columns=[keys[name]]), _without(schema, keys[name]), mask)
        masked.insert(0, keys[name], frame[keys[name]])
        out[name] = masked
        logger.info("dataset: table %s scrubbed and masked", name)
    return out


#: The entities looked for in coded text: the pattern recognizers whose match is checked (a checksum, a fixed
#: format or a label such as "MRN"). Doses and strengths are numbers, so the looser ones fire on a terminology (on
#: the Synthea export "Levora 0.15/30 28 Day Pack" read as a PHONE_NUMBER, "vancomycin 1000 MG" as a ZIP code,
#: NDA numbers as ID_NUMBER), as the language model's names and places do on drug and disease words.
CODED_TEXT_ENTITIES: tuple[str, ...] = ("CREDIT_CARD", "CRYPTO", "EMAIL_ADDRESS", "IBAN_CODE", "IP_ADDRESS",
                                        "MAC_ADDRESS", "MEDICAL_RECORD_NUMBER", "UK_NHS", "URL", "US_SSN", "UUID")


def coded_text_config(scrub: ScrubConfig) -> ScrubConfig:
    """``scrub`` for coded text: pattern mode (no language model), the entities of :data:`CODED_TEXT_ENTITIES`
    (within the configured ones, when ``scrub.entities`` names any)."""
    entities = [e for e in CODED_TEXT_ENTITIES if scrub.entities is None or e in scrub.entities]
    return scrub.model_copy(update={"mode": "pattern", "entities": entities})


def check_mask(mask: MaskConfig) -> None:
    """Refuse what masking cannot do for a dataset (before any budget is reserved)."""
    if mask.k is not None:
        raise ConfigError("mask.k (k-anonymity) is not available for a dataset: it recodes rows by a data-dependent "
                          "rule with no DP bound and no meaning per person across tables; drop mask.k")


def _without(schema: TableSchema, column: str) -> TableSchema:
    return schema.model_copy(update={"columns": [c for c in schema.columns if c.name != column]})


def _person_terms(schema: TableSchema, persons: pd.DataFrame, key: str) -> dict[str, list[tuple[str, str]]]:
    """Per person key: ``(entity, value)`` of the persons' table's identifying columns, as the single-table
    scrubber's same-row deny-list takes them (``dpsyn.pii``: names also by their tokens, numbers by their digits)."""
    cols = [c for c in schema.columns if c.name in persons.columns and c.name != key
            and (c.pii in DENY_LIST_CLASSES or c.kind == ColumnKind.identifier)]
    out: dict[str, list[tuple[str, str]]] = {}
    for row in persons[[key] + [c.name for c in cols]].itertuples(index=False, name=None):
        if pd.isna(row[0]):
            continue
        items = [(PII_CLASS_ENTITY[c.pii], str(v)) for c, v in zip(cols, row[1:], strict=True)
                 if not pd.isna(v) and str(v).strip()]
        out.setdefault(str(row[0]), []).extend(items)
    return out


def _scrub_column(values: pd.Series, persons: pd.Series, terms: dict[str, list[tuple[str, str]]], *,
                  scrub: ScrubConfig, engine) -> pd.Series:
    """Presidio over each distinct text, then the person's deny-list on the rows where it matches (the pii
    package's own matcher decides, so no row it would change is skipped)."""
    text = values.astype("string")
    distinct = text.dropna().unique().tolist()
    clean, _ = scrub_texts(distinct, engine=engine, config=scrub)
    out = text.map(dict(zip(distinct, clean, strict=True)))
    compiled: dict[str, list] = {}
    redo = []
    for i, (v, p) in enumerate(zip(text.tolist(), persons.tolist(), strict=True)):
        if pd.isna(v) or pd.isna(p) or str(p) not in terms:
            continue
        if str(p) not in compiled:
            compiled[str(p)] = row_terms(terms[str(p)])
        if deny_spans(compiled[str(p)], v):
            redo.append(i)
    if redo:
        fixed, _ = scrub_texts([text.iloc[i] for i in redo], engine=engine, config=scrub,
                               deny_lists=[terms[str(persons.iloc[i])] for i in redo])
        out.iloc[redo] = fixed
    return out.astype(values.dtype) if values.dtype == "string" else out.astype(object).where(out.notna(), None)
