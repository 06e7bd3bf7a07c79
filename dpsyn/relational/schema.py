"""A dataset of related tables: one table of persons (the privacy unit) and child tables keyed to it.

A dataset schema is YAML written from public knowledge, like a table schema (docs/privacy.md); it names the
tables, their table schemas and files, and the public bounds that make the guarantee per person::

    schema_version: 1
    kind: dataset
    name: synthea
    population: synthea-lancashire
    person: {table: patients, key: Id}
    tables:
      - {name: patients, schema: synthea_patients.yaml, file: patients.csv}
      - name: conditions
        schema: synthea_conditions.yaml
        file: conditions.csv
        foreign_key: PATIENT                 # → patients.Id
        max_rows_per_person: 100             # public contribution bound: rows beyond are dropped at random
        count_bins: [0, 1, 5, 10, 20, 40, 60, 100]   # public bins of rows per person (last edge = the bound)
        condition_on: [GENDER, BIRTHDATE, DEATHDATE] # person columns the child rows are drawn given
        select: {DESCRIPTION: {max_per_person: 20, max_values: 150}}  # a domain chosen by DP selection
        person_flags:                        # per-person summaries the persons' model carries (public patterns)
          column: DESCRIPTION
          patterns: {hypertension: "hypertension", diabetes: "(?<!pre)diabetes"}
    target: DEATHDATE                        # the persons' column a downstream task predicts (optional)

Table schema paths are relative to the dataset file (or shipped names); file paths are relative to the folder
given at run time. The key and foreign keys are identifier columns: never synthesized, regenerated as fresh ids.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from dpsyn.errors import SchemaError
from dpsyn.schema import ColumnKind, TableSchema, Tier, load_schema

__all__ = ["ChildTable", "DatasetSchema", "FlagSpec", "PersonKey", "SelectSpec", "TableRef", "load_dataset_schema",
           "modelled"]

#: Most person flags one child table may declare (each is a binary column of the persons' model).
MAX_FLAGS = 60


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PersonKey(_Strict):
    table: str = Field(min_length=1)
    key: str = Field(min_length=1)


class SelectSpec(_Strict):
    """A text column of codes whose domain is chosen by DP selection (dpsyn.privacy.selection)."""

    max_per_person: int = Field(default=5, ge=1, le=1000)
    max_values: int = Field(default=150, ge=1, le=5000)
    nullable: bool = True


class FlagSpec(_Strict):
    """Per-person summaries of a child table: for each named pattern, whether any of the person's rows has a value
    of ``column`` matching it (``re.search``, case-insensitive). Public configuration (e.g. clinical categories by
    name); the persons' model carries one binary column per pattern, and a synthetic person's child rows are drawn
    to agree with them."""

    column: str = Field(min_length=1)
    patterns: dict[str, str] = Field(min_length=1)
    #: a public value standing for the flag's category where ``column`` is selected and a matching row's own value
    #: is not in the selected domain (default: the flag's name, ``_`` read as a space); it must match the pattern
    labels: dict[str, str] = Field(default_factory=dict)

    def compiled(self) -> dict[str, re.Pattern]:
        return {k: re.compile(v, re.IGNORECASE) for k, v in self.patterns.items()}

    def label(self, name: str) -> str:
        return self.labels.get(name, name.replace("_", " "))


class TableRef(_Strict):
    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_]+$")
    schema_: str = Field(alias="schema", min_length=1)
    file: str | None = None
    # child tables only
    foreign_key: str | None = None
    max_rows_per_person: int | None = Field(default=None, ge=1, le=10_000)
    count_bins: list[int] | None = None
    condition_on: list[str] = Field(default_factory=list)
    select: dict[str, SelectSpec] = Field(default_factory=dict)
    person_flags: FlagSpec | None = None

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class ChildTable(BaseModel):
    """A child table, resolved: its reference and its table schema."""

    model_config = ConfigDict(arbitrary_types_allowed=True, frozen=True)
    ref: TableRef
    schema_: TableSchema

    @property
    def name(self) -> str:
        return self.ref.name

    @property
    def k(self) -> int:
        return int(self.ref.max_rows_per_person)

    @property
    def count_column(self) -> str:
        return f"n_{self.ref.name}"

    def flag_columns(self) -> dict[str, str]:
        """The persons' model's column per declared person flag: ``{column name: flag name}``."""
        flags = self.ref.person_flags
        return {f"{self.ref.name}__{k}": k for k in flags.patterns} if flags else {}

    def count_edges(self) -> list[float]:
        """Public bins of rows per person, 0 to the bound (closed on the right)."""
        b = self.ref.count_bins or [0, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000]
        edges = sorted({int(x) for x in b if 0 <= x < self.k} | {0})
        return [float(x) for x in edges] + [float(self.k)]


class DatasetSchema(BaseModel):
    """The dataset, resolved: the persons' table schema and the child tables' (see the module docstring)."""

    model_config = ConfigDict(arbitrary_types_allowed=True, frozen=True)
    name: str
    description: str = ""
    population: str | None = None
    person: PersonKey
    root: TableRef
    root_schema: TableSchema
    children: list[ChildTable]
    target: str | None = None
    source: str = "<string>"

    @property
    def target_known_column(self) -> str | None:
        """The persons' model's binary column 'target is known' when the target is a nullable non-categorical
        column (e.g. a date of death: the task is whether there is one), else None."""
        if self.target is None or self.root_schema.column(self.target).kind == ColumnKind.categorical:
            return None
        return f"{self.target}__known"

    @property
    def unit(self) -> str:
        return f"{self.person.table}.{self.person.key}"

    def relation(self) -> str:
        """The neighbouring relation the dataset's guarantee is stated for (public)."""
        bounds = ", ".join(f"at most {c.k} {c.name} rows" for c in self.children)
        return f"add/remove one person ({self.unit}) with all their rows in every table ({bounds})"

    def tables(self) -> list[str]:
        return [self.root.name] + [c.name for c in self.children]

    def fingerprint(self) -> str:
        import hashlib
        import json

        blob = json.dumps({"name": self.name, "target": self.target, "root": self.root.model_dump(by_alias=True),
                           "root_schema":
                           self.root_schema.fingerprint(), "children": [
                               [c.ref.model_dump(by_alias=True), c.schema_.fingerprint()] for c in self.children]},
                          sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()[:16]


class _Raw(_Strict):
    schema_version: Literal[1] = 1
    kind: Literal["dataset"] = "dataset"
    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.-]+$")
    description: str = ""
    population: str | None = None
    person: PersonKey
    tables: list[TableRef] = Field(min_length=2)
    target: str | None = None

    @model_validator(mode="after")
    def _check(self) -> _Raw:
        names = [t.name for t in self.tables]
        problems = []
        if len(set(names)) != len(names):
            problems.append("table names must be unique")
        if self.person.table not in names:
            problems.append(f"person.table '{self.person.table}' is not one of the tables")
        for t in self.tables:
            if t.name == self.person.table:
                if (t.foreign_key or t.max_rows_per_person or t.count_bins or t.condition_on or t.select
                        or t.person_flags):
                    problems.append(f"table '{t.name}' is the persons' table: it takes no foreign_key, "
                                    "max_rows_per_person, count_bins, condition_on, select or person_flags")
            elif t.foreign_key is None or t.max_rows_per_person is None:
                problems.append(f"child table '{t.name}' needs foreign_key (its column naming the person) and "
                                "max_rows_per_person (the public contribution bound)")
        if problems:
            raise ValueError("; ".join(problems))
        return self


def _load_table_schema(ref: str, base: Path | None) -> TableSchema:
    p = Path(ref)
    if base is not None and not p.is_absolute() and (base / p).exists():
        return load_schema(base / p)
    return load_schema(ref)


def _resolve(raw: _Raw, base: Path | None, source: str) -> DatasetSchema:
    root = next(t for t in raw.tables if t.name == raw.person.table)
    root_schema = _load_table_schema(root.schema_, base)
    problems = []
    if raw.person.key not in root_schema.column_names or root_schema.column(raw.person.key).kind != \
            ColumnKind.identifier:
        problems.append(f"person key '{raw.person.key}' must be an identifier column of '{root.name}'")
    if raw.target is not None:
        t = raw.target
        if t not in root_schema.column_names or not modelled(root_schema.column(t)):
            problems.append(f"target '{t}' is not a synthesizable column of '{root.name}' kept by masking")
        elif root_schema.column(t).kind != ColumnKind.categorical and not root_schema.column(t).nullable:
            problems.append(f"target '{t}' must be categorical, or nullable (the task is then whether it is known)")
        elif f"{t}__known" in root_schema.column_names:
            problems.append(f"the persons' table has a column '{t}__known', reserved for the target's presence")
        elif root_schema.target is not None and root_schema.target != t:
            problems.append(f"target '{t}' differs from the table schema's target '{root_schema.target}'")
    children = []
    for t in raw.tables:
        if t is root:
            continue
        s = _load_table_schema(t.schema_, base)
        if t.foreign_key not in s.column_names or s.column(t.foreign_key).kind != ColumnKind.identifier:
            problems.append(f"'{t.name}'.{t.foreign_key} must be an identifier column of its schema")
        for c in t.condition_on:
            if c not in root_schema.column_names or not modelled(root_schema.column(c)):
                problems.append(f"'{t.name}' conditions on '{c}', which is not a synthesizable column of "
                                f"'{root.name}' kept by masking (L1 is dropped unless it declares generalize)")
            elif c in s.column_names:
                problems.append(f"'{t.name}' has its own column '{c}': rename it or drop it from condition_on")
        for c in t.select:
            if c not in s.column_names or s.column(c).kind != ColumnKind.text:
                problems.append(f"'{t.name}'.{c} is selected: declare it kind: text in the table schema (its "
                                "domain comes from DP selection)")
            elif s.column(c).tier == Tier.L1:
                problems.append(f"'{t.name}'.{c} is selected but tier L1, which masking drops: give it tier L2 or "
                                "lower, or drop it from select")
        if f"n_{t.name}" in root_schema.column_names:
            problems.append(f"'{root.name}' has a column 'n_{t.name}', reserved for rows per person")
        problems += _flag_problems(t, s, root_schema)
        children.append(ChildTable(ref=t, schema_=s))
    if problems:
        raise SchemaError(f"malformed dataset schema {source}: {'; '.join(problems)}")
    return DatasetSchema(name=raw.name, description=raw.description, population=raw.population, person=raw.person,
                         root=root, root_schema=root_schema, children=children, target=raw.target, source=source)


def _flag_problems(t: TableRef, s: TableSchema, root_schema: TableSchema) -> list[str]:
    f = t.person_flags
    if f is None:
        return []
    problems = []
    if f.column not in s.column_names or s.column(f.column).kind not in (ColumnKind.text, ColumnKind.categorical):
        problems.append(f"'{t.name}' flags persons by '{f.column}', which is not a text or categorical column of it")
    if len(f.patterns) > MAX_FLAGS:
        problems.append(f"'{t.name}' declares {len(f.patterns)} person flags; at most {MAX_FLAGS}")
    problems += [f"'{t.name}' person flag label '{x}' names no pattern" for x in f.labels if x not in f.patterns]
    for name, pattern in f.patterns.items():
        if not re.fullmatch(r"[A-Za-z0-9_]+", name):
            problems.append(f"'{t.name}' person flag '{name}': use letters, digits and _ only")
        try:
            re.compile(pattern)
        except re.error as e:
            problems.append(f"'{t.name}' person flag '{name}': not a regular expression ({e})")
        else:
            if not re.search(pattern, f.label(name), re.IGNORECASE):
                problems.append(f"'{t.name}' person flag '{name}': its label '{f.label(name)}' does not match its "
                                "pattern; give one that does under labels")
        if f"{t.name}__{name}" in root_schema.column_names:
            problems.append(f"the persons' table has a column '{t.name}__{name}', reserved for a person flag")
    return problems


def modelled(col) -> bool:
    """Whether a column reaches the model: synthesizable and kept by masking (``dpsyn.masking.mask_table`` drops L1
    unless the column declares a generalization)."""
    return col.synthesizable and (col.tier != Tier.L1 or col.generalize is not None)


def parse_dataset_schema(text: str, *, base: Path | None = None, source: str = "<string>") -> DatasetSchema:
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError:
        raise SchemaError(f"malformed dataset schema {source}: not valid YAML") from None
    if not isinstance(raw, dict):
        raise SchemaError(f"malformed dataset schema {source}: expected a mapping with 'person' and 'tables'")
    try:
        parsed = _Raw.model_validate(raw)
    except ValidationError as e:
        msgs = "; ".join(f"{'.'.join(str(x) for x in err['loc'])}: {err['msg'].removeprefix('Value error, ')}"
                         for err in e.errors(include_url=False, include_input=False))
        raise SchemaError(f"malformed dataset schema {source}: {msgs}") from None
    return _resolve(parsed, base, source)


def load_dataset_schema(path_or_name: str | Path) -> DatasetSchema:
    """A dataset schema from a YAML file, or a shipped one by name (``synthea_dataset``)."""
    from importlib import resources

    p = Path(path_or_name)
    if not p.exists() and p.suffix == "" and "/" not in str(path_or_name):
        shipped = resources.files("dpsyn") / "schemas" / "datasets" / f"{path_or_name}.yaml"
        if shipped.is_file():
            base = Path(str(resources.files("dpsyn") / "schemas" / "datasets"))
            return parse_dataset_schema(shipped.read_text(encoding="utf-8"), base=base,
                                        source=f"builtin dataset '{path_or_name}'")
    if not p.is_file():
        raise SchemaError(f"dataset schema not found: {p} (give a YAML path or a shipped dataset name)")
    return parse_dataset_schema(p.read_text(encoding="utf-8"), base=p.parent, source=str(p))
