"""Read a bounded sample and propose, per column, a kind, a PII class, a tier and a quasi-identifier flag."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from dpsyn.errors import InputError
from dpsyn.schema import ColumnKind, PIIClass, Tier
from dpsyn.schema_suggest.hints import (
    _CLINICAL,
    _COUNT_WORDS,
    _DATE,
    _DEMOGRAPHIC,
    _DIRECT,
    _ICD9,
    _ICD10,
    _ID_WORDS,
    _INLINE,
    _PARQUET,
    _PERSON_NAME,
    _PII_HINTS,
    _POSTCODE,
    _TEXT,
    _VALUE_CHECKS,
    DEFAULT_ROWS,
    DISTINCT_SHARE,
    MATCH_SHARE,
    MAX_ROWS,
    MIN_FOR_DISTINCT,
    NA_MARKERS,
    NUMERIC_SHARE,
    _hint,
    _snake,
    _words,
)

__all__ = ["ColumnSuggestion", "read_sample", "suggest_column", "suggest_columns"]


@dataclass
class ColumnSuggestion:
    """A reviewed-by-a-person proposal for one column: no value of the data, only kinds and reasons."""

    name: str
    kind: ColumnKind
    pii: PIIClass = PIIClass.none
    tier: Tier = Tier.L4
    quasi_identifier: bool = False
    integer: bool = False
    nullable: bool = False
    generalize_hint: str | None = None  # a hierarchy worth considering, written as a comment
    reasons: list[str] = field(default_factory=list)


# -- reading --------------------------------------------------------------------------------


def read_sample(path: str | Path, *, header: bool = True, sep: str = ",", rows: int = DEFAULT_ROWS) -> pd.DataFrame:
    """The first ``rows`` rows of a CSV or Parquet file, every cell as text (or missing).

    Raises :class:`InputError` for a missing, empty or unreadable file, and when
    the header row looks like data (never echoing it).
    """
    p = Path(path)
    if not isinstance(rows, int) or not 1 <= rows <= MAX_ROWS:
        raise InputError(f"--rows must be from 1 to {MAX_ROWS}")
    if len(sep) != 1:
        raise InputError("--sep must be a single character")
    if not p.exists():
        raise InputError(f"data file not found: {p}")
    if p.is_dir():
        raise InputError(f"data path is a folder, not a file: {p}")
    if p.stat().st_size == 0:
        raise InputError(f"data file is empty: {p}")
    if p.suffix.lower() in _PARQUET:
        df = _read_parquet_head(p, rows)
    else:
        try:
            df = pd.read_csv(
                p, sep=sep, header=0 if header else None, nrows=rows, dtype=str, keep_default_na=False,
                na_filter=False, encoding="utf-8", engine="c", skip_blank_lines=True,
            )
        except UnicodeDecodeError:
            raise InputError(f"data file is not UTF-8 text: {p}; re-encode it as UTF-8") from None
        except pd.errors.EmptyDataError:
            raise InputError(f"data file has no rows: {p}") from None
        except Exception as e:  # parser errors name lines and field counts; never echo their text anyway
            raise InputError(f"cannot read {p.name} as CSV separated by {sep!r} ({type(e).__name__})") from None
    names = [str(c).strip() for c in df.columns] if header else [f"column_{i + 1}" for i in range(df.shape[1])]
    names = [n if n and not n.startswith("Unnamed: ") else f"column_{i + 1}" for i, n in enumerate(names)]
    if header and p.suffix.lower() not in _PARQUET:
        _check_header(names, df, p)
    df.columns = names
    return df


def _read_parquet_head(p: Path, rows: int) -> pd.DataFrame:
    try:
        import pyarrow.parquet as pq

        pf = pq.ParquetFile(p)
        batch = next(pf.iter_batches(batch_size=rows), None)
        df = batch.to_pandas() if batch is not None else pf.schema_arrow.empty_table().to_pandas()
    except Exception as e:  # pyarrow raises many types; none carry cell values, but never echo them
        raise InputError(f"cannot read {p.name} as Parquet ({type(e).__name__})") from None
    return df.head(rows).apply(lambda s: s.map(lambda v: None if _is_missing(v) else str(v)))


def _is_missing(v) -> bool:
    try:
        return bool(pd.isna(v))
    except (TypeError, ValueError):  # arrays and other containers
        return False


def _check_header(names: list[str], df: pd.DataFrame, p: Path) -> None:
    """Refuse a first row that looks like a record: its "names" would be printed as data values.

    A name counts as data-like if it is a number, a date or an identifier, if
    it reads like a sentence (over 64 characters or 6 words), or if it also
    occurs as a value of its own column (adult.data's "Private"). One such name
    is enough: a wrong refusal costs a rerun, a wrong pass leaks a row. The check
    is a heuristic (a first row of plain names would pass): read the draft before
    sharing it.
    """
    data_like = 0
    for i, name in enumerate(names):
        col = df.iloc[:, i].astype("string").str.strip()
        if (
            len(name) > 64
            or len(name.split()) >= 6
            or _is_number(name)
            or _DATE.fullmatch(name)
            or any(check(name) for _, _, check in _VALUE_CHECKS)
            or bool(col.eq(name).fillna(False).any())
        ):
            data_like += 1
    if data_like:
        raise InputError(
            f"the first row of {p.name} looks like data, not a header ({data_like} of {len(names)} names are "
            "numbers, dates, identifiers, sentences or values of their own column); rerun with --no-header "
            "(names are then column_1, column_2, ...)"
        )


def _is_number(v: str) -> bool:
    try:
        float(v)
    except ValueError:
        return False
    return True


# -- guessing -------------------------------------------------------------------------------


def _share(values: list[str], check) -> float:
    return sum(1 for v in values if check(v)) / len(values) if values else 0.0


def suggest_column(name: str, raw: pd.Series) -> ColumnSuggestion:
    """Propose kind, PII class, tier and QI flag for one column from its name and sampled cells."""
    cells = raw.astype("string").str.strip()
    present = cells[~cells.isna() & ~cells.isin(NA_MARKERS)]
    values = present.tolist()
    n = len(values)
    tokens, compact = _words(name)
    sug = ColumnSuggestion(name=name, kind=ColumnKind.categorical, nullable=n < len(cells))
    why = sug.reasons

    pii_hint = next((cls for cls, h in _PII_HINTS if _hint(tokens, compact, **h)), None)
    if pii_hint is None and _PERSON_NAME.fullmatch(_snake(name)):
        pii_hint = PIIClass.person
    value_pii = next(((cls, what) for cls, what, check in _VALUE_CHECKS if n and _share(values, check) >= MATCH_SHARE), None)
    postcode = _hint(tokens, compact, **_POSTCODE)
    demographic = _hint(tokens, compact, **_DEMOGRAPHIC)
    clinical = _hint(tokens, compact, **_CLINICAL)
    text_hint = _hint(tokens, compact, **_TEXT)
    id_hint = _hint(tokens, compact, words=_ID_WORDS)
    icd_hint = ("diag" in compact or "icd" in compact or "dx" in tokens) and not tokens & _COUNT_WORDS
    distinct = n >= MIN_FOR_DISTINCT and present.nunique() >= DISTINCT_SHARE * n
    numeric = n > 0 and pd.to_numeric(present, errors="coerce").notna().mean() >= NUMERIC_SHARE
    dates = n > 0 and _share(values, _DATE.fullmatch) >= MATCH_SHARE
    long_text = n > 0 and present.str.len().mean() >= 40 and present.str.count(r"\s+").mean() >= 4
    if n == 0:
        why.append("no value in the sample: guessed from the name only")

    if value_pii is not None:
        sug.kind, sug.pii = ColumnKind.identifier, value_pii[0]
        why.append(f"sampled values look like {value_pii[1]}")
    elif pii_hint is not None and pii_hint not in (PIIClass.location, PIIClass.date_of_birth):
        sug.kind, sug.pii = ColumnKind.identifier, pii_hint
        why.append(f"name suggests {pii_hint.value.replace('_', ' ')}")
    elif pii_hint is PIIClass.date_of_birth:
        sug.kind, sug.pii, sug.generalize_hint = ColumnKind.datetime, PIIClass.date_of_birth, "year"
        why.append("name suggests a date of birth")
    elif postcode is not None:
        sug.kind, sug.pii, sug.generalize_hint = ColumnKind.categorical, PIIClass.location, "zip3 or postcode_prefix:N"
        why.append("name suggests a postcode (a quasi-identifier; keep it as text for its leading zeros)")
    elif icd_hint and n and _share(values, _ICD9.fullmatch) >= MATCH_SHARE:
        sug.kind, sug.generalize_hint = ColumnKind.categorical, "icd9_category (or icd9_chapter)"
        why.append("name and sampled values look like ICD-9 codes")
    elif icd_hint and n and _share(values, _ICD10.fullmatch) >= MATCH_SHARE:
        sug.kind, sug.generalize_hint = ColumnKind.categorical, "icd10_category"
        why.append("name and sampled values look like ICD-10 codes")
    elif dates:
        sug.kind = ColumnKind.datetime
        why.append("sampled values look like dates")
    elif long_text or (text_hint and n and not numeric):
        sug.kind, sug.pii = ColumnKind.text, PIIClass.free_text
        why.append("name suggests free text" if text_hint else "sampled values look like free text")
        if any(any(p.search(v) for p in _INLINE) for v in values):
            why.append("identifiers seen inside the text: the scrubber must run on it")
    elif id_hint and (distinct or id_hint in ("uuid", "guid", "identifier") or n == 0):
        sug.kind = ColumnKind.identifier
        why.append("name suggests an identifier" + (" and nearly every sampled value is distinct" if distinct else ""))
    elif numeric and id_hint:
        sug.kind = ColumnKind.categorical
        why.append("name suggests a code and sampled values repeat: list its public code table as the domain")
    elif numeric:
        sug.kind = ColumnKind.numeric
        sug.integer = bool((pd.to_numeric(present, errors="coerce").dropna() % 1 == 0).all())
        why.append("sampled values are numbers")
        if distinct and sug.integer:
            why.append("every sampled value is distinct: if this is a record number, make it kind: identifier")
    elif distinct and not (demographic or clinical):
        sug.kind = ColumnKind.identifier
        why.append("nearly every sampled value is distinct text (a name, code or identifier?)")
    else:
        sug.kind = ColumnKind.categorical
        why.append("sampled values are short text" if n else "kind not known: categorical by default")
        if id_hint:
            why.append("name suggests a code and sampled values repeat: list its public code table as the domain")
    if pii_hint is PIIClass.location and sug.pii is PIIClass.none:
        sug.pii = PIIClass.location
        why.append("name suggests a location")

    # tier and quasi-identifier flag
    if sug.kind == ColumnKind.identifier or sug.pii in _DIRECT:
        sug.tier = Tier.L1
        why.append("tier L1: identifier or direct PII (dropped, or generalized if you add 'generalize')")
    elif clinical or sug.kind == ColumnKind.text:
        sug.tier = Tier.L2
        why.append(f"tier L2: {'clinical-looking name' if clinical else 'free text'}")
    elif demographic or postcode or sug.pii is PIIClass.location or sug.kind == ColumnKind.datetime:
        sug.tier = Tier.L3
        why.append("tier L3: a demographic, location or date")
    if sug.tier != Tier.L1 and (demographic or postcode or sug.pii is PIIClass.location or sug.kind == ColumnKind.datetime):
        sug.quasi_identifier = True
        why.append("quasi-identifier: demographics, locations and dates can single people out in combination")
    if sug.kind == ColumnKind.datetime and sug.generalize_hint is None:
        sug.generalize_hint = "month or year (HIPAA Safe Harbor keeps only the year)"
    if demographic == "age" and sug.kind == ColumnKind.numeric:
        sug.generalize_hint = "age_band_5 / age_band_10 (as a k-anonymity ladder)"
    return sug


def suggest_columns(df: pd.DataFrame) -> list[ColumnSuggestion]:
    """One suggestion per column of a sample frame (see :func:`read_sample`)."""
    return [suggest_column(str(c), df[c]) for c in df.columns]


# -- the draft ------------------------------------------------------------------------------
