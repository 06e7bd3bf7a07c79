"""Draft a table schema for a person to review (``dpsyn schema suggest``).

From the column names and a bounded sample of rows (at most ``rows``, read
once, kept nowhere), propose for each column a kind, a PII class, a sensitivity
tier and a quasi-identifier flag, and write them as a YAML draft.

The draft never holds anything read from the data: no bounds, bins, domains,
example values or counts. Those must come from public documentation (a data
dictionary, a coding standard); taken from the rows they would leak them into
a file people share (docs/privacy.md). The draft writes placeholders instead
(``bounds: [TODO_low, TODO_high]``, ``domain: TODO_categories``), so it does
not load as a schema until a person has filled them in.

Guesses come from header hints (``email``, ``dob``, ``diag``, ``age``, ...)
and from light patterns over the sampled values (email addresses, US SSNs,
phone numbers, card numbers with a Luhn check, Chinese resident IDs with their
check digit, IPv4 addresses, dates). No NER model is loaded, so person names
are found by header only: a column that is nearly all distinct text is
proposed as an identifier.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from dpsyn.errors import InputError
from dpsyn.schema import ColumnKind, PIIClass, Tier

__all__ = ["DEFAULT_ROWS", "MAX_ROWS", "ColumnSuggestion", "read_sample", "render_yaml", "suggest_columns", "suggest_schema"]

DEFAULT_ROWS = 200
MAX_ROWS = 100_000
_PARQUET = (".parquet", ".pq")

# Cells read as missing when guessing (a fixed list of common markers, never taken from the data).
NA_MARKERS = ("", "?", "NA", "N/A", "n/a", "NaN", "nan", "NULL", "null", "-")
_SHOWN_MARKERS = ("?", "NA", "N/A", "n/a", "NULL", "null", "-")  # suggested as read.na_values when seen

MATCH_SHARE = 0.8  # share of non-missing sampled values that must match a pattern
NUMERIC_SHARE = 0.95
DISTINCT_SHARE = 0.9  # "nearly every value distinct"
MIN_FOR_DISTINCT = 20  # below this many sampled values, distinctness says nothing

# -- value patterns -----------------------------------------------------------------------

_EMAIL = re.compile(r"[A-Za-z0-9._%+'-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}")
_SSN = re.compile(r"(?!000|666|9\d\d)\d{3}-(?!00)\d{2}-(?!0000)\d{4}")
_PHONE = re.compile(
    r"(?:\+?1[\s.-]?)?(?:\(\d{3}\)\s?|\d{3}[\s.-])\d{3}[\s.-]\d{4}(?:\s*(?:x|ext\.?)\s*\d{1,5})?"  # NANP, separated
    r"|\+\d{1,3}[\s.-]?\d[\d\s.-]{6,14}\d"  # international, with +
    r"|1[3-9]\d{9}"  # CN mobile
)
_CARD = re.compile(r"\d(?:[ -]?\d){12,18}")
_IPV4 = re.compile(r"(?:(?:25[0-5]|2[0-4]\d|1?\d?\d)\.){3}(?:25[0-5]|2[0-4]\d|1?\d?\d)")
_CN_ID = re.compile(r"\d{17}[\dXx]")
_DATE = re.compile(
    r"\d{4}-\d{1,2}-\d{1,2}(?:[ T]\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?)?(?:Z|[+-]\d{2}:?\d{2})?"
    r"|\d{1,2}/\d{1,2}/\d{4}|\d{1,2}\.\d{1,2}\.\d{4}|\d{4}/\d{1,2}/\d{1,2}"
)
_ICD10 = re.compile(r"[A-Za-z]\d[0-9A-Za-z](?:\.?[0-9A-Za-z]{1,4})?")
_ICD9 = re.compile(r"(?:\d{1,3}|[Vv]\d{1,2}|[Ee]\d{1,3})(?:\.\d{1,2})?")


def _luhn(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def _is_card(v: str) -> bool:
    if not _CARD.fullmatch(v):
        return False
    digits = re.sub(r"\D", "", v)
    return 13 <= len(digits) <= 19 and _luhn(digits)


_CN_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)


def _is_cn_id(v: str) -> bool:  # ISO 7064 MOD 11-2 check digit
    if not _CN_ID.fullmatch(v):
        return False
    s = sum(int(c) * w for c, w in zip(v[:17], _CN_WEIGHTS, strict=True))
    return "10X98765432"[s % 11] == v[17].upper()


_VALUE_CHECKS: tuple[tuple[PIIClass, str, object], ...] = (
    (PIIClass.email, "email addresses", _EMAIL.fullmatch),
    (PIIClass.ssn, "US social security numbers", _SSN.fullmatch),
    (PIIClass.national_id, "resident ID numbers with a valid check digit", _is_cn_id),
    (PIIClass.credit_card, "card numbers with a valid Luhn check", _is_card),
    (PIIClass.ip_address, "IPv4 addresses", _IPV4.fullmatch),
    (PIIClass.phone, "phone numbers", _PHONE.fullmatch),
)
_INLINE = (_EMAIL, _SSN, re.compile(r"(?:\(\d{3}\)\s?|\b\d{3}[\s.-])\d{3}[\s.-]\d{4}\b"))  # identifiers inside text

# -- header hints -------------------------------------------------------------------------


def _snake(name: str) -> str:
    """``"Full Name"`` -> ``"full_name"``, ``"patientNbr"`` -> ``"patient_nbr"``."""
    return re.sub(r"[^a-z0-9]+", "_", re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()).strip("_")


def _words(name: str) -> tuple[set[str], str]:
    tokens = {t for t in _snake(name).split("_") if t}
    compact = re.sub(r"[^a-z0-9]", "", name.lower())
    return tokens, compact


def _hint(tokens: set[str], compact: str, *, words: Iterable[str] = (), parts: Iterable[str] = ()) -> str | None:
    for w in words:
        if w in tokens:
            return w
    for p in parts:
        if p in compact:
            return p
    return None


_PII_HINTS: tuple[tuple[PIIClass, dict], ...] = (
    (PIIClass.email, {"words": ("email", "mail"), "parts": ("email",)}),
    (PIIClass.ssn, {"words": ("ssn",), "parts": ("socialsecurity",)}),
    (PIIClass.ip_address, {"words": ("ip",), "parts": ("ipaddress", "ipaddr")}),
    (PIIClass.phone, {"words": ("phone", "tel", "telephone", "mobile", "cell", "fax"), "parts": ("phone",)}),
    (PIIClass.credit_card, {"words": ("pan",), "parts": ("creditcard", "cardnumber", "ccnum", "cardno")}),
    (PIIClass.date_of_birth, {"words": ("dob",), "parts": ("birthdate", "dateofbirth", "birthday")}),
    (PIIClass.medical_record, {
        "words": ("mrn",),
        "parts": ("medicalrecord", "patientid", "patientnbr", "patientnumber", "patientno", "encounterid", "chartnumber"),
    }),
    (PIIClass.national_id, {
        "words": ("nino", "nhs", "sin"),
        "parts": ("nationalid", "passport", "idcard", "idnumber", "citizenid", "residentid", "driverslicense", "licence"),
    }),
    (PIIClass.address, {"words": ("addr",), "parts": ("address", "street")}),
    (PIIClass.location, {"words": ("lat", "lon", "lng", "latitude", "longitude", "gps", "city", "town", "geo"), "parts": ()}),
)
_PERSON_NAME = re.compile(r"(?:full|first|last|given|family|middle|maiden|patient|person|sur|nick|user|contact)?_?name")
_COUNT_WORDS = {"number", "num", "n", "count", "cnt", "total"}  # "number_diagnoses" counts codes, it is not one
_ID_WORDS = ("id", "uuid", "guid", "nbr", "key", "identifier", "record")
_POSTCODE = {"words": ("zip", "zipcode", "postcode", "postal", "plz"), "parts": ("zipcode", "postcode", "postalcode")}
_DEMOGRAPHIC = {
    "words": ("age", "sex", "gender", "race", "ethnicity", "ethnic", "marital", "education", "occupation",
              "nationality", "country", "religion", "yob", "birthyear", "language"),
    "parts": ("maritalstatus", "nativecountry", "ethnic", "birthyear", "countryoforigin"),
}
_CLINICAL = {
    "words": ("dx", "lab", "labs", "test", "result", "results", "bmi", "bp", "cpt", "loinc", "snomed", "rx", "glu",
              "med", "meds", "diabetes"),
    "parts": ("diag", "icd", "drug", "dose", "dosage", "medication", "procedure", "treatment", "therapy", "prescri",
              "condition", "disease", "symptom", "a1c", "glucose", "insulin", "cholesterol", "pressure",
              "readmi", "admission", "admit", "discharge", "clinical", "pathology", "allergy", "vaccin", "surgery"),
}
_TEXT = {"words": ("note", "notes", "comment", "comments", "text", "narrative", "remarks", "summary", "memo"), "parts": ()}

_DIRECT = {PIIClass.person, PIIClass.email, PIIClass.phone, PIIClass.ssn, PIIClass.national_id,
           PIIClass.medical_record, PIIClass.credit_card, PIIClass.address, PIIClass.ip_address,
           PIIClass.date_of_birth}


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


def _q(text: str) -> str:
    """A YAML double-quoted scalar (JSON strings are valid YAML)."""
    return json.dumps(text, ensure_ascii=False)


def render_yaml(
    suggestions: list[ColumnSuggestion],
    *,
    name: str,
    source: str,
    header: bool,
    sep: str,
    rows: int,
    na_markers: list[str] | None = None,
    skipinitialspace: bool = False,
) -> str:
    """The YAML draft: guesses, reasons and placeholders; nothing read from the data."""
    table = re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_.-") or "table"
    lines = [
        f"# Draft schema written by `dpsyn schema suggest` from the column names and at most {rows} rows",
        f"# of {source}. Every line is a guess: review it. Nothing read from the data is written here.",
        "# Replace each TODO with PUBLIC knowledge (a data dictionary, a coding standard, census",
        "# conventions), never with the min/max or categories of the rows (docs/privacy.md); the",
        "# schema does not load until every TODO is filled.",
        "schema_version: 1",
        f"name: {_q(table)}",
        'version: "1"',
        'description: ""',
        "# target: a categorical column to predict (optional)",
        "read:",
        f"  header: {'true' if header else 'false'}",
        f"  sep: {_q(sep)}",
    ]
    if skipinitialspace:
        lines.append("  skipinitialspace: true   # cells start with a space")
    if na_markers:
        lines.append(f"  na_values: [{', '.join(_q(m) for m in na_markers)}]   # missing-value markers seen; check")
    lines.append("columns:")
    for s in suggestions:
        lines.append(f"  - name: {_q(s.name)}")
        lines.append(f"    kind: {s.kind.value}")
        if s.kind == ColumnKind.numeric:
            if s.integer:
                lines.append("    integer: true")
            lines.append("    bounds: [TODO_low, TODO_high]   # public range (e.g. a code book or top-code), not the data's")
            lines.append("    # bins: [...]   # optional public bin edges from bounds[0] to bounds[1]")
        elif s.kind == ColumnKind.datetime:
            lines.append("    bounds: [TODO_first_date, TODO_last_date]   # ISO dates (YYYY-MM-DD) from public documentation")
        elif s.kind == ColumnKind.categorical:
            lines.append("    domain: TODO_categories   # a list, e.g. [A, B]: every public category (code book), not only those seen")
        if s.nullable and s.kind in (ColumnKind.numeric, ColumnKind.datetime, ColumnKind.categorical):
            lines.append("    nullable: true")
        if s.pii is not PIIClass.none:
            lines.append(f"    pii: {s.pii.value}")
        lines.append(f"    tier: {s.tier.value}")
        if s.quasi_identifier:
            lines.append("    quasi_identifier: true")
        if s.generalize_hint:
            lines.append(f"    # generalize: consider {s.generalize_hint} (docs/masking.md)")
        if s.kind == ColumnKind.text:
            lines.append('    # template: "..."   # optional public template for synthetic text, from synthetic columns')
        for r in s.reasons:
            lines.append(f"    # why: {r}")
    return "\n".join(lines) + "\n"


def suggest_schema(
    path: str | Path, *, header: bool = True, sep: str = ",", rows: int = DEFAULT_ROWS
) -> str:
    """Read at most ``rows`` rows of ``path`` and return a YAML schema draft (nothing is stored)."""
    p = Path(path)
    df = read_sample(p, header=header, sep=sep, rows=rows)
    if df.shape[1] == 0:
        raise InputError(f"no columns found in {p.name} (check --sep)")
    cells = df.astype("string")
    leading = cells.apply(lambda s: s.str.match(r"^\s+\S").fillna(False)).to_numpy().mean() if len(df) else 0.0
    stripped = cells.apply(lambda s: s.str.strip())
    seen = {m for m in _SHOWN_MARKERS if stripped.isin([m]).to_numpy().any()}
    return render_yaml(
        suggest_columns(stripped),
        name=p.stem,
        source=p.name,
        header=header,
        sep=sep,
        rows=rows,
        na_markers=[m for m in _SHOWN_MARKERS if m in seen],
        skipinitialspace=leading >= 0.5,
    )
