"""The declared, versioned table schema.

A schema says, for every column of a sensitive table, what kind it is, its
*public* bounds or category domain, its PII class and sensitivity tier, and
how the original file is read. It is written by a person from public
knowledge (data dictionaries, coding standards, census conventions) and is
never inferred from the private rows: bounds, domains and bins taken from the
data would leak it (see docs/privacy.md).

Schemas are YAML files loaded into pydantic models::

    schema_version: 1
    name: adult
    version: "1.0"
    target: income
    read: {header: false, sep: ",", skipinitialspace: true, na_values: ["?"]}
    columns:
      - {name: age, kind: numeric, bounds: [17, 90], integer: true, tier: L3}
      - {name: sex, kind: categorical, domain: [Female, Male], tier: L3}

Shipped schemas (``adult``, ``adult_demo``, ``diabetes130``) can be loaded
by name with :func:`load_schema`.
"""

from __future__ import annotations

import math
from datetime import date, datetime
from enum import StrEnum
from importlib import resources
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from dpsyn.errors import SchemaError

__all__ = [
    "Column",
    "ColumnKind",
    "PIIClass",
    "PrivacyUnit",
    "ReadOptions",
    "TableSchema",
    "Tier",
    "list_builtin_schemas",
    "load_schema",
]

SCHEMA_FORMAT_VERSION = 1
DEFAULT_N_BINS = 16
MAX_UNIT_BINS = 32  # integer columns with at most this many values get one bin per value


class ColumnKind(StrEnum):
    numeric = "numeric"
    categorical = "categorical"
    datetime = "datetime"
    text = "text"
    identifier = "identifier"


class Tier(StrEnum):
    """Sensitivity tier (the seed's L1/L2/L3; ``L4`` for low-sensitivity fields)."""

    L1 = "L1"  # very high: IDs, biometrics, exact location -> dropped or generalized
    L2 = "L2"  # high: diagnoses, procedures, doses
    L3 = "L3"  # medium: age, sex, department
    L4 = "L4"  # low: everything else


class PIIClass(StrEnum):
    none = "none"
    person = "person"
    email = "email"
    phone = "phone"
    ssn = "ssn"
    national_id = "national_id"
    medical_record = "medical_record"
    credit_card = "credit_card"
    address = "address"
    location = "location"
    date_of_birth = "date_of_birth"
    ip_address = "ip_address"
    free_text = "free_text"  # may contain any of the above


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ReadOptions(_Strict):
    """How the original file is read, so files load as distributed."""

    format: Literal["csv", "parquet", "auto"] = "auto"
    header: bool = True
    sep: str = Field(default=",", min_length=1, max_length=1)
    skipinitialspace: bool = False
    na_values: list[str] = Field(default_factory=list)
    comment: str | None = None  # lines starting with this are skipped (adult.test's "|1x3 ...")
    label_suffixes: list[str] = Field(default_factory=list)  # stripped from target labels ("<=50K.")


class Column(_Strict):
    name: str = Field(min_length=1)
    kind: ColumnKind
    description: str = ""
    # numeric / datetime: public bounds; values outside are clipped to them
    bounds: tuple[float, float] | tuple[date, date] | tuple[str, str] | None = None
    integer: bool = False
    # numeric: the public resolution of the values (decimal places); synthetic values are drawn on that grid
    decimals: int | None = Field(default=None, ge=0, le=9)
    bins: list[float] | None = None  # explicit public bin edges, from bounds[0] to bounds[1]
    n_bins: int | None = Field(default=None, ge=2, le=1000)
    # categorical: the public domain
    domain: list[str] | None = None
    nullable: bool = False
    # privacy
    pii: PIIClass = PIIClass.none
    tier: Tier = Tier.L4
    quasi_identifier: bool = False
    # masking: a public generalization hierarchy applied before the domain check
    # (e.g. icd9_category: "250.83" -> "250"); see dpsyn.masking
    generalize: str | None = None
    # text: a public template used to write synthetic text from synthetic columns
    template: str | None = None

    @model_validator(mode="after")
    def _check_kind_fields(self) -> Column:
        problems: list[str] = []
        k = self.kind
        if k in (ColumnKind.numeric, ColumnKind.datetime) and self.bounds is None:
            problems.append(f"column '{self.name}': {k.value} columns need public 'bounds: [low, high]'")
        if k == ColumnKind.numeric and self.bounds is not None:
            lo, hi = self.bounds
            if not all(isinstance(b, (int, float)) for b in (lo, hi)):
                problems.append(f"column '{self.name}': numeric bounds must be numbers")
            elif not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
                problems.append(f"column '{self.name}': bounds must be finite with low < high")
            elif self.bins is not None:
                b = self.bins
                if len(b) < 3 or any(x >= y for x, y in zip(b, b[1:], strict=False)):
                    problems.append(f"column '{self.name}': bins must be at least 3 strictly increasing edges")
                elif b[0] != lo or b[-1] != hi:
                    problems.append(f"column '{self.name}': bins must start at bounds[0] and end at bounds[1]")
        if k == ColumnKind.datetime and self.bounds is not None:
            try:
                lo_ts, hi_ts = (_parse_date(b) for b in self.bounds)
                if not lo_ts < hi_ts:
                    problems.append(f"column '{self.name}': datetime bounds must have low < high")
            except ValueError:
                problems.append(f"column '{self.name}': datetime bounds must be ISO dates (YYYY-MM-DD)")
        if k == ColumnKind.categorical:
            if not self.domain:
                problems.append(f"column '{self.name}': categorical columns need a public 'domain' list")
            elif len(set(self.domain)) != len(self.domain):
                problems.append(f"column '{self.name}': domain has duplicate categories")
        if k != ColumnKind.categorical and self.domain is not None:
            problems.append(f"column '{self.name}': 'domain' is only for categorical columns")
        if k not in (ColumnKind.numeric, ColumnKind.datetime) and (self.bins or self.bounds):
            problems.append(f"column '{self.name}': 'bounds'/'bins' are only for numeric or datetime columns")
        if self.decimals is not None and (k != ColumnKind.numeric or self.integer):
            problems.append(f"column '{self.name}': 'decimals' is only for non-integer numeric columns")
        if self.template is not None and k != ColumnKind.text:
            problems.append(f"column '{self.name}': 'template' is only for text columns")
        if problems:
            raise ValueError("; ".join(problems))
        return self

    # -- derived, public-only helpers -------------------------------------------------
    @property
    def synthesizable(self) -> bool:
        """Whether the synthesizers model this column (identifiers and text are not)."""
        return self.kind in (ColumnKind.numeric, ColumnKind.categorical, ColumnKind.datetime)

    def numeric_bounds(self) -> tuple[float, float]:
        """Bounds as floats (datetimes as days since 1970-01-01)."""
        if self.bounds is None:
            raise SchemaError(f"column '{self.name}' has no bounds")
        if self.kind == ColumnKind.datetime:
            lo, hi = (_parse_date(b) for b in self.bounds)
            return float(lo), float(hi)
        return float(self.bounds[0]), float(self.bounds[1])

    def bin_edges(self) -> list[float]:
        """Public bin edges for a numeric or datetime column.

        Explicit ``bins`` win; an integer column with at most ``MAX_UNIT_BINS``
        values gets one bin per value; otherwise ``n_bins`` equal-width bins.
        The last bin is closed on the right.
        """
        lo, hi = self.numeric_bounds()
        if self.bins is not None:
            return [float(x) for x in self.bins]
        if self.integer and self.n_bins is None and (hi - lo + 1) <= MAX_UNIT_BINS:
            return [lo + i for i in range(int(hi - lo) + 1)] + [hi + 1.0]
        n = self.n_bins or DEFAULT_N_BINS
        return [lo + (hi - lo) * i / n for i in range(n + 1)]


class PrivacyUnit(_Strict):
    """The person a row belongs to: the guarantee is for adding or removing one person with all their rows.

    ``column`` is an identifier column of the table (never synthesized: a synthetic table gets fresh ids);
    ``max_rows_per_person`` is the public contribution bound: a person's rows beyond it are dropped before any
    mechanism reads them, by a random rule that looks at that person's rows only (docs/privacy.md)."""

    column: str = Field(min_length=1)
    max_rows_per_person: int = Field(ge=1, le=10_000)


class TableSchema(_Strict):
    schema_version: Literal[1] = 1
    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.-]+$")
    version: str = "1"
    description: str = ""
    source: str = ""
    target: str | None = None
    population: str | None = Field(
        default=None, min_length=1,
        description="The data owner's name for the population (set of people) this table is drawn from: runs on "
        "any table of the same people share its lifetime privacy budget, whatever the schema is called.")
    population_size: int | None = Field(
        default=None, ge=1,
        description="Public upper bound on the number of rows (privacy units) a table of this kind holds, from "
        "public documentation; sets the default δ. Never computed from the private rows.")
    privacy_unit: PrivacyUnit | None = Field(
        default=None,
        description="The person column and the public bound on rows per person; None: the unit is one row.")
    extends: str | None = Field(
        default=None,
        description="The shipped schema this one is written on top of: its top-level keys replace the base's "
        "(``columns`` as a whole), and the base's shipped rules apply when it has none of its own.")
    read: ReadOptions = Field(default_factory=ReadOptions)
    columns: list[Column] = Field(min_length=1)

    @model_validator(mode="after")
    def _check_table(self) -> TableSchema:
        names = [c.name for c in self.columns]
        dupes = sorted({n for n in names if names.count(n) > 1})
        problems = []
        if dupes:
            problems.append(f"duplicate column names: {', '.join(dupes)}")
        if "_person" in names:
            problems.append("'_person' is reserved (the prepared table's person codes): rename that column")
        if self.target is not None:
            if self.target not in names:
                problems.append(f"target '{self.target}' is not a column")
            elif self.column(self.target).kind != ColumnKind.categorical:
                problems.append(f"target '{self.target}' must be categorical")
        unit = self.privacy_unit
        if unit is not None:
            if unit.column not in names:
                problems.append(f"privacy_unit.column '{unit.column}' is not a column")
            elif self.column(unit.column).kind != ColumnKind.identifier:
                problems.append(f"privacy_unit.column '{unit.column}' must be an identifier column (kind: "
                                "identifier): the person's id is never synthesized")
        if problems:
            raise ValueError("; ".join(problems))
        return self

    @property
    def column_names(self) -> list[str]:
        return [c.name for c in self.columns]

    def column(self, name: str) -> Column:
        for c in self.columns:
            if c.name == name:
                return c
        raise SchemaError(f"schema '{self.name}' has no column '{name}'")

    def require_synthesizable(self) -> None:
        """Raise :class:`SchemaError` unless a column can be synthesized (scrubbing alone needs none)."""
        if not any(c.synthesizable for c in self.columns):
            raise SchemaError(
                f"schema '{self.name}' has no numeric, categorical or datetime column to synthesize; "
                "declare one, or only scrub the table (dpsyn scrub)"
            )

    def synthesizable_columns(self) -> list[Column]:
        """Columns the synthesizers model, target last (if any)."""
        cols = [c for c in self.columns if c.synthesizable and c.tier != Tier.L1]
        if self.target is not None:
            cols = [c for c in cols if c.name != self.target] + [self.column(self.target)]
        return cols

    def output_columns(self) -> list[str]:
        """Columns of a synthetic table: the synthesized ones, templated text and the privacy unit's column (fresh
        ids), in schema order."""
        keep = {c.name for c in self.synthesizable_columns()}
        keep |= {c.name for c in self.columns if c.kind == ColumnKind.text and c.template}
        if self.privacy_unit is not None:
            keep.add(self.privacy_unit.column)
        return [c.name for c in self.columns if c.name in keep]

    def unit_kwargs(self) -> dict:
        """The privacy unit as :class:`~dpsyn.privacy.PrivacyAccountant` takes it (``unit``, ``rows_per_unit``);
        empty when the unit is one row."""
        u = self.privacy_unit
        return {} if u is None else {"unit": u.column, "rows_per_unit": u.max_rows_per_person}

    def fingerprint(self) -> str:
        """A stable hash of the schema's content (for lineage and MLflow)."""
        import hashlib
        import json

        # a schema that extends none hashes as before the field existed (lineage keeps its fingerprints)
        blob = json.dumps(self.model_dump(mode="json", exclude={"extends"} if self.extends is None else None),
                          sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()[:16]


def _extend(raw: dict, source: str, *, seen: tuple[str, ...]) -> dict:
    """``raw`` on top of the shipped schema it names in ``extends`` (resolved the same way if that one extends
    another): the top-level keys of ``raw`` replace the base's; ``name`` must be its own."""
    base = raw["extends"]
    if not isinstance(base, str) or base not in list_builtin_schemas():
        raise SchemaError(f"malformed schema {source}: extends: {base!r} is not a shipped schema (one of: "
                          f"{', '.join(list_builtin_schemas())})")
    if base in seen:
        raise SchemaError(f"malformed schema {source}: extends: {' -> '.join((*seen, base))} is a cycle")
    if not raw.get("name") or raw.get("name") == base:
        raise SchemaError(f"malformed schema {source}: a schema that extends '{base}' needs a name of its own "
                          "(models, rules and lineage are kept by name)")
    base_raw = yaml.safe_load((_builtin_dir() / f"{base}.yaml").read_text(encoding="utf-8"))
    if "extends" in base_raw:
        base_raw = _extend(base_raw, f"builtin schema '{base}'", seen=(*seen, base))
    return {**base_raw, **raw}


def _parse_date(value: str | float | date) -> float:
    """ISO date to days since 1970-01-01 (floats pass through)."""
    if isinstance(value, (int, float)):
        return float(value)
    d = value if isinstance(value, date) else datetime.fromisoformat(str(value))
    if isinstance(d, datetime):
        d = d.date()
    return float(d.toordinal() - date(1970, 1, 1).toordinal())


def _builtin_dir():
    return resources.files("dpsyn") / "schemas"


def list_builtin_schemas() -> list[str]:
    """Names of the schemas shipped with dpsyn."""
    return sorted(p.name[: -len(".yaml")] for p in _builtin_dir().iterdir() if p.name.endswith(".yaml"))


def load_schema(path_or_name: str | Path) -> TableSchema:
    """Load a schema from a YAML file, or a shipped schema by name.

    Raises :class:`SchemaError` with one line listing every problem.
    """
    p = Path(path_or_name)
    name = str(path_or_name)
    # a shipped name always means the shipped schema: a file of that name in the working folder never replaces it
    # (a path must look like one: a folder part or a .yaml/.yml suffix)
    if not isinstance(path_or_name, Path) and p.suffix.lower() not in (".yaml", ".yml") and "/" not in name \
            and name in list_builtin_schemas():
        text = (_builtin_dir() / f"{name}.yaml").read_text(encoding="utf-8")
        return parse_schema(text, source=f"builtin schema '{name}'")
    if not p.exists():
        raise SchemaError(
            f"schema file not found: {p} (give a YAML path or one of: {', '.join(list_builtin_schemas())})"
        )
    if p.is_dir():
        raise SchemaError(f"schema path is a folder, not a YAML file: {p}")
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise SchemaError(f"schema file is not UTF-8 text: {p}") from None
    return parse_schema(text, source=str(p))


def parse_schema(text: str, *, source: str = "<string>") -> TableSchema:
    """Parse schema YAML text into a :class:`TableSchema`."""
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise SchemaError(f"malformed schema {source}: not valid YAML{where}") from None
    if not isinstance(raw, dict):
        raise SchemaError(f"malformed schema {source}: expected a mapping with 'name' and 'columns'")
    if "extends" in raw:
        raw = _extend(raw, source, seen=())
    try:
        return TableSchema.model_validate(raw)
    except ValidationError as e:
        raise SchemaError(f"malformed schema {source}: {_summarize(e, raw)}") from None


def _summarize(err: ValidationError, raw: dict) -> str:
    parts = []
    cols = raw.get("columns") if isinstance(raw.get("columns"), list) else []
    for item in err.errors(include_url=False, include_input=False):
        loc = list(item["loc"])
        if len(loc) >= 2 and loc[0] == "columns" and isinstance(loc[1], int):
            idx = loc[1]
            name = cols[idx].get("name") if idx < len(cols) and isinstance(cols[idx], dict) else None
            loc = [f"columns[{name or idx}]"] + [str(x) for x in loc[2:]]
        where = ".".join(str(x) for x in loc if not str(x).startswith(("function-after", "tuple[")))
        msg = item["msg"].removeprefix("Value error, ")
        if "domain" in loc and msg == "Input should be a valid string":
            msg += " (quote words such as Yes/No/On/Off/None in YAML, or they load as booleans/null)"
        parts.append(f"{where}: {msg}" if where else msg)
    return "; ".join(parts)
