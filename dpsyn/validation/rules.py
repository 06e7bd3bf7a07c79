"""Clinical-logic rules: a small YAML language compiled into a Great Expectations 1.x suite.

A rules file::

    version: 1
    name: diabetes130-clinical
    rules:
      - name: time_in_hospital_1_14            # value range (numeric)
        range: {column: time_in_hospital, min: 1, max: 14}
      - name: gender_known_values              # allowed values
        allowed: {column: gender, in: [Female, Male, Unknown/Invalid]}
      - name: discharge_after_admission        # ordered column pair (left op right)
        order: {left: discharge_date, op: ">=", right: admission_date}
      - name: pregnancy_only_female            # conditional implication
        if: {columns: [diag_1, diag_2, diag_3], icd9: ["630-679"]}
        then: {column: gender, in: [Female]}
      - name: zip_has_five_digits              # any Great Expectations row-by-row expectation
        expect:
          type: expect_column_values_to_match_regex
          kwargs: {column: zip3, regex: "^[0-9]{3}$"}

``expect`` takes any column-map, column-pair-map or multicolumn-map expectation of Great Expectations 1.x by
its name, with its keyword arguments: each has one unexpected count, which is what the gate releases (with
noise, for a soft rule) or judges on the synthetic table alone (a hard rule).

A condition names one ``column`` or several ``columns`` (any of them), and
either ``in`` (values), ``not_in`` or ``icd9`` (code ranges such as
``"630-679"``, ``"174"``, ``"V22-V24"``, expanded against the column's
declared domain, so a rule never depends on which codes happen to occur).

Each rule becomes one expectation (a conditional one checks its ``then``
column under a row condition that ORs its ``if`` columns), so every rule has
one violation count: the rows that break it. Missing values violate nothing (Great Expectations' default).
Only counts leave :func:`violation_counts`: the result format asks for no
unexpected values, which GE would otherwise echo (a PII leak if stored).
"""

from __future__ import annotations

import logging
import re
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

import pandas as pd
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from dpsyn.errors import ConfigError, SchemaError
from dpsyn.schema import ColumnKind, TableSchema

__all__ = [
    "Expect", "Rule", "RuleSet", "compile_suite", "conditional_checks", "data_docs", "expectation_mask", "load_rules",
    "rule_counts", "violation_counts",
]

logger = logging.getLogger(__name__)

_ICD9_RANGE = re.compile(r"^(?P<a>[VE]?\d{1,3})(?:-(?P<b>[VE]?\d{1,3}))?$")
_SHIPPED = Path(__file__).resolve().parents[1] / "schemas" / "rules"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class Condition(_Strict):
    column: str | None = None
    columns: list[str] | None = None
    in_: list[Any] | None = Field(default=None, alias="in")
    not_in: list[Any] | None = None
    icd9: list[str] | None = None

    @model_validator(mode="after")
    def _one_of_each(self):
        if (self.column is None) == (self.columns is None):
            raise ValueError("give exactly one of column, columns")
        if sum(x is not None for x in (self.in_, self.not_in, self.icd9)) != 1:
            raise ValueError("give exactly one of in, not_in, icd9")
        for r in self.icd9 or []:
            if not _ICD9_RANGE.match(str(r)):
                raise ValueError(f"'{r}' is not an ICD-9 code or range such as 630-679, V22-V24 or 174")
        return self

    @property
    def names(self) -> list[str]:
        return [self.column] if self.column else list(self.columns or [])


class Range(_Strict):
    column: str
    min: float | None = None
    max: float | None = None


class Allowed(_Strict):
    column: str
    in_: list[Any] = Field(alias="in", min_length=1)


class Order(_Strict):
    left: str
    op: Literal[">=", ">", "<=", "<"]
    right: str


class Expect(_Strict):
    """Any row-by-row Great Expectations expectation, by name (``expect_column_values_to_match_regex``)."""

    type: str = Field(pattern=r"^expect_[a-z0-9_]+$")
    kwargs: dict[str, Any] = Field(default_factory=dict)

    @property
    def columns(self) -> list[str]:
        k = self.kwargs
        named = [k.get(x) for x in ("column", "column_A", "column_B")]
        return [str(c) for c in named if c is not None] + [str(c) for c in k.get("column_list") or []]


class Rule(_Strict):
    name: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    description: str = ""
    range: Range | None = None
    allowed: Allowed | None = None
    order: Order | None = None
    expect: Expect | None = None
    if_: Condition | None = Field(default=None, alias="if")
    then: Condition | None = None
    hard: bool = Field(
        default=False,
        description="Impossible by definition (male ⇒ not pregnant, a documented range): checked on the synthetic "
        "table alone against the rule set's hard_tolerance, with no real statistic and no ε. A soft rule "
        "compares the synthetic violation rate with the real one (released with DP noise).")

    @model_validator(mode="after")
    def _one_kind(self):
        kinds = [k for k in ("range", "allowed", "order", "expect") if getattr(self, k) is not None]
        if self.if_ is not None or self.then is not None:
            if self.if_ is None or self.then is None:
                raise ValueError("a conditional rule needs both 'if' and 'then'")
            if self.then.columns and len(self.then.columns) > 1:
                raise ValueError("'then' names one column")
            kinds.append("if/then")
        if len(kinds) != 1:
            raise ValueError(f"give exactly one of range, allowed, order, expect, if/then (got {kinds or 'none'})")
        return self

    @property
    def columns(self) -> list[str]:
        if self.range:
            return [self.range.column]
        if self.allowed:
            return [self.allowed.column]
        if self.order:
            return [self.order.left, self.order.right]
        if self.expect:
            return self.expect.columns
        return [*self.if_.names, *self.then.names]


class RuleSet(_Strict):
    version: Literal[1] = 1
    name: str
    description: str = ""
    tolerance: float = Field(default=0.005, ge=0, le=1,
                             description="Soft rules: the synthetic violation rate may exceed the real rate by this.")
    hard_tolerance: float = Field(default=0.0, ge=0, le=1,
                                  description="Hard rules: the largest share of synthetic rows that may break one.")
    rules: list[Rule] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique(self):
        seen = [r.name for r in self.rules]
        dup = sorted({n for n in seen if seen.count(n) > 1})
        if dup:
            raise ValueError(f"rule names must be unique: {', '.join(dup)}")
        return self

    def part(self, *, hard: bool) -> RuleSet | None:
        """The hard (or the soft) rules alone; None if there are none."""
        rules = [r for r in self.rules if r.hard == hard]
        return self.model_copy(update={"rules": rules}) if rules else None

    def check_against(self, schema: TableSchema) -> None:
        """Every column a rule names must be in the schema; raises one SchemaError listing all that are not."""
        known = {c.name for c in schema.columns}
        missing = sorted({f"{r.name}: {c}" for r in self.rules for c in r.columns if c not in known})
        if missing:
            raise SchemaError(f"rules '{self.name}' name columns not in schema '{schema.name}': {'; '.join(missing)}")


def load_rules(source: str | Path) -> RuleSet:
    """A rules file (YAML path) or the name of a shipped one (``diabetes130``; a related table's component is named
    ``<dataset>.<table>``, e.g. ``synthea.conditions``: its dot is not a file suffix)."""
    p = Path(source)
    if p.suffix.lower() not in (".yaml", ".yml") and (_SHIPPED / f"{source}.yaml").exists():
        p = _SHIPPED / f"{source}.yaml"
    if not p.exists():
        shipped = sorted(x.stem for x in _SHIPPED.glob("*.yaml"))
        raise ConfigError(f"rules file not found: {source} (shipped rules: {', '.join(shipped)})")
    try:
        raw = yaml.safe_load(p.read_text(encoding="utf-8"))
    except yaml.YAMLError as e:
        raise ConfigError(f"rules file {p.name} is not valid YAML ({type(e).__name__})") from None
    try:
        return RuleSet.model_validate(raw)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(x) for x in first["loc"])
        raise ConfigError(f"malformed rules file {p.name}: {where}: {first['msg']} ({e.error_count()} problem(s))") from None


# -- ICD-9 ranges --------------------------------------------------------------------------


def _icd9_key(code: str) -> tuple[str, int] | None:
    m = re.match(r"^([VE]?)(\d{1,3})", str(code).strip())
    return (m.group(1), int(m.group(2))) if m else None


def expand_icd9(ranges: list[str], domain: list[str]) -> list[str]:
    """Codes of ``domain`` inside any of the ICD-9 ``ranges`` (category level: 3 digits, V/E prefixed)."""
    out = []
    for code in domain:
        k = _icd9_key(code)
        if k is None:
            continue
        for r in ranges:
            m = _ICD9_RANGE.match(r)
            a, b = _icd9_key(m["a"]), _icd9_key(m["b"] or m["a"])
            if a[0] == b[0] == k[0] and a[1] <= k[1] <= b[1]:
                out.append(code)
                break
    return out


# -- compilation -----------------------------------------------------------------------------


class _Compiled(BaseModel):
    """One expectation of a rule: its check name and GE configuration."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    check: str
    rule: str
    expectation: Any


def _values(cond: Condition, column: str, schema: TableSchema) -> tuple[str, list]:
    """('in' | 'not_in', values) of a condition on ``column``."""
    col = schema.column(column)
    if cond.icd9 is not None:
        if col.kind != ColumnKind.categorical or not col.domain:
            raise SchemaError(f"ICD-9 ranges need a categorical column with a declared domain: {column}")
        return "in", expand_icd9(cond.icd9, col.domain)
    return ("in", list(cond.in_)) if cond.in_ is not None else ("not_in", list(cond.not_in))


def _expectation_class(rule: Rule):
    """The Great Expectations class an ``expect`` rule names; refused unless it is row-by-row (one unexpected
    count)."""
    import great_expectations as gx
    from great_expectations.expectations.expectation import (
        ColumnMapExpectation,
        ColumnPairMapExpectation,
        MulticolumnMapExpectation,
    )

    name = rule.expect.type
    cls = getattr(gx.expectations, "".join(p.capitalize() for p in name.split("_")), None)
    if not isinstance(cls, type):
        raise ConfigError(f"rule {rule.name}: no Great Expectations expectation is called {name} (see "
                          "https://greatexpectations.io/expectations)")
    if not issubclass(cls, (ColumnMapExpectation, ColumnPairMapExpectation, MulticolumnMapExpectation)):
        raise ConfigError(f"rule {rule.name}: {name} is not a row-by-row (map) expectation: the gate needs the "
                          "count of rows that break a rule; use a column-map, column-pair-map or multicolumn-map "
                          "expectation")
    if not rule.expect.columns:
        raise ConfigError(f"rule {rule.name}: {name} needs its column(s) in kwargs (column, column_A/column_B or "
                          "column_list)")
    return cls


def _expectation(rule: Rule):
    cls = _expectation_class(rule)
    from pydantic.v1 import ValidationError as V1ValidationError  # GX 1.x models are pydantic v1's

    try:
        return cls(**rule.expect.kwargs)
    except (ValidationError, V1ValidationError) as e:
        problems = "; ".join(f"{'.'.join(str(x) for x in err['loc']) or 'kwargs'}: {err['msg']}" for err in e.errors())
        raise ConfigError(f"rule {rule.name}: {rule.expect.type} does not take these kwargs ({problems})") from None


def _compile(rules: RuleSet, schema: TableSchema) -> list[_Compiled]:
    import great_expectations as gx
    from great_expectations.expectations.row_conditions import Column, OrCondition

    rules.check_against(schema)
    out = []
    for r in rules.rules:
        if r.range:
            out.append(_Compiled(check=f"rule:{r.name}", rule=r.name, expectation=gx.expectations.ExpectColumnValuesToBeBetween(
                column=r.range.column, min_value=r.range.min, max_value=r.range.max)))
        elif r.allowed:
            out.append(_Compiled(check=f"rule:{r.name}", rule=r.name, expectation=gx.expectations.ExpectColumnValuesToBeInSet(
                column=r.allowed.column, value_set=list(r.allowed.in_))))
        elif r.expect:
            out.append(_Compiled(check=f"rule:{r.name}", rule=r.name, expectation=_expectation(r)))
        elif r.order:
            o = r.order
            a, b = (o.left, o.right) if o.op in (">=", ">") else (o.right, o.left)
            out.append(_Compiled(check=f"rule:{r.name}", rule=r.name,
                                 expectation=gx.expectations.ExpectColumnPairValuesAToBeGreaterThanB(
                                     column_A=a, column_B=b, or_equal=o.op in (">=", "<="))))
        else:
            (then_col,) = r.then.names
            mode, allowed = _values(r.then, then_col, schema)
            parts = []
            for c in r.if_.names:  # any of the 'if' columns: one flat OR row condition
                imode, codes = _values(r.if_, c, schema)
                if imode != "in":
                    raise ConfigError(f"rule {r.name}: an 'if' condition takes in or icd9, not not_in")
                if not codes:
                    logger.warning("rule %s: no value of %s's domain matches its 'if' condition", r.name, c)
                    continue
                parts.append(Column(c).is_in(codes))
            if not parts:
                continue
            cond = parts[0] if len(parts) == 1 else OrCondition(conditions=parts)
            cls = gx.expectations.ExpectColumnValuesToBeInSet if mode == "in" else \
                gx.expectations.ExpectColumnValuesToNotBeInSet
            out.append(_Compiled(check=f"rule:{r.name}", rule=r.name,
                                 expectation=cls(column=then_col, value_set=allowed, row_condition=cond)))
    return out


def _ephemeral_context():
    """A new ephemeral Great Expectations context that prints nothing of its own on a run's stderr.

    GX sets its ``data_context.types.base`` logger to INFO, so its "Created temporary directory ... for ephemeral
    docs site" reaches any root handler (Opacus installs one with ``logging.basicConfig`` on import), and its
    progress bars ("Calculating Metrics: 25%|...") are on by default; both reached ``dpsyn run --rules``."""
    import great_expectations as gx
    from great_expectations.data_context.types import base  # sets its logger to INFO on import

    logging.getLogger(base.__name__).setLevel(logging.WARNING)
    ctx = gx.get_context(mode="ephemeral")
    ctx.variables.progress_bars = base.ProgressBarsConfig(globally=False)
    return ctx


def compile_suite(rules: RuleSet, schema: TableSchema, *, name: str | None = None):
    """The rules as a ``great_expectations.ExpectationSuite`` (one expectation per check; meta names the check).
    Needs no context of the caller's: without an active one, an ephemeral context is made first."""
    import great_expectations as gx
    from great_expectations.data_context.data_context.context_factory import project_manager
    from great_expectations.exceptions import DataContextRequiredError

    try:  # GX 1.x builds suites inside an active project
        project_manager.get_current_project()
    except DataContextRequiredError:
        _ephemeral_context()
    suite = gx.ExpectationSuite(name=name or rules.name)
    for c in _compile(rules, schema):
        c.expectation.meta = {"dpsyn_check": c.check, "dpsyn_rule": c.rule}
        suite.add_expectation(c.expectation)
    return suite


class _Runner:
    """An ephemeral GE context with one pandas dataframe asset, reused across calls."""

    @cached_property
    def context(self):
        return _ephemeral_context()

    @cached_property
    def batch_definition(self):
        ds = self.context.data_sources.add_pandas("dpsyn")
        return ds.add_dataframe_asset("table").add_batch_definition_whole_dataframe("whole")

    def run(self, df: pd.DataFrame, rules: RuleSet, schema: TableSchema, *, complete: bool = False) -> list:
        """GE's results of ``rules`` on ``df``: counts only, or with ``complete`` the index labels of the rows that
        break each (only for a synthetic, public table)."""
        import uuid

        import great_expectations as gx

        name = f"{rules.name}-{uuid.uuid4().hex[:8]}"
        suite = self.context.suites.add(compile_suite(rules, schema, name=name))
        vd = gx.ValidationDefinition(name=name, data=self.batch_definition, suite=suite)
        fmt = {"result_format": "COMPLETE"} if complete else {"result_format": "BASIC", "partial_unexpected_count": 0}
        res = vd.run(batch_parameters={"dataframe": df}, result_format=fmt)
        return res.results


_RUNNER: _Runner | None = None


def violation_counts(df: pd.DataFrame, rules: RuleSet, schema: TableSchema) -> dict[str, int]:
    """Per check, the number of rows of ``df`` that violate it (computed by Great Expectations)."""
    return {k: v for k, (v, _) in rule_counts(df, rules, schema).items()}


def _ge_frame(df: pd.DataFrame, schema: TableSchema) -> pd.DataFrame:
    frame = df.copy()
    for c in schema.columns:  # GE compares numbers as numbers
        if c.name in frame.columns and c.kind == ColumnKind.numeric:
            frame[c.name] = pd.to_numeric(frame[c.name], errors="coerce")
        elif c.name in frame.columns and c.kind == ColumnKind.categorical:
            frame[c.name] = frame[c.name].astype("object")
    return frame


def data_docs(df: pd.DataFrame, rules: RuleSet, schema: TableSchema, out_dir: str | Path) -> tuple[dict, Path]:
    """Validate ``df`` against the rules in a GE Checkpoint that builds Data Docs into ``out_dir``.

    For the *synthetic* table only (it is public): GE's counts on real rows are exact, so they must never be
    stored; the gate releases the real side with noise instead. Results use the BASIC format with no partial
    unexpected values. Returns (the GE validation result as JSON, the Data Docs ``index.html``). GE's pages load
    styles from a CDN, so offline they open unstyled; dpsyn's own HTML report is self-contained.
    """
    import great_expectations as gx

    out = Path(out_dir).absolute()
    ctx = _ephemeral_context()
    ctx.add_data_docs_site("dpsyn", {
        "class_name": "SiteBuilder", "site_index_builder": {"class_name": "DefaultSiteIndexBuilder"},
        "store_backend": {"class_name": "TupleFilesystemStoreBackend", "base_directory": str(out)}})
    bd = ctx.data_sources.add_pandas("dpsyn").add_dataframe_asset("synthetic").add_batch_definition_whole_dataframe(
        "whole")
    suite = ctx.suites.add(compile_suite(rules, schema, name=f"{rules.name}-rules"))
    vd = ctx.validation_definitions.add(gx.ValidationDefinition(name="synthetic", data=bd, suite=suite))
    cp = ctx.checkpoints.add(gx.Checkpoint(
        name="dpsyn-rules", validation_definitions=[vd],
        actions=[gx.checkpoint.UpdateDataDocsAction(name="data-docs", site_names=["dpsyn"])],
        result_format={"result_format": "BASIC", "partial_unexpected_count": 0}))
    res = cp.run(batch_parameters={"dataframe": _ge_frame(df, schema)})
    (vr,) = res.run_results.values()
    return vr.to_json_dict(), out / "index.html"


def rule_counts(df: pd.DataFrame, rules: RuleSet, schema: TableSchema) -> dict[str, tuple[int, int]]:
    """Per check, (rows that violate it, rows it applies to): for if/then rules the rows meeting the
    condition with a non-missing ``then`` value; otherwise the rows with non-missing values."""
    global _RUNNER
    _RUNNER = _RUNNER or _Runner()
    frame = _ge_frame(df, schema)
    results = _RUNNER.run(frame, rules, schema)
    counts = {}
    for r in results:
        check = r.expectation_config.meta["dpsyn_check"]
        if r.exception_info and r.exception_info.get("raised_exception"):
            raise ConfigError(f"rule check {check} could not run: Great Expectations raised an error "
                              "(check the rule's columns and their kinds)")
        res = r.result
        counts[check] = (int(res.get("unexpected_count") or 0),
                         int(res.get("element_count") or 0) - int(res.get("missing_count") or 0))
    return counts


def expectation_mask(df: pd.DataFrame, rule: Rule, schema: TableSchema) -> pd.Series:
    """The rows of ``df`` that break the ``expect`` rule ``rule``, by Great Expectations' own per-row result (for
    the synthetic table only: the row labels of a real table are never asked for)."""
    global _RUNNER
    _RUNNER = _RUNNER or _Runner()
    one = RuleSet(name=f"mask-{rule.name}", rules=[rule])
    frame = _ge_frame(df, schema)
    (res,) = _RUNNER.run(frame, one, schema, complete=True)
    if res.exception_info and res.exception_info.get("raised_exception"):
        raise ConfigError(f"rule check rule:{rule.name} could not run: Great Expectations raised an error")
    bad = pd.Series(False, index=df.index)
    bad.loc[list(res.result.get("unexpected_index_list") or [])] = True
    return bad


def conditional_checks(rules: RuleSet) -> set[str]:
    """Check names of the if/then rules (judged on the rows their condition selects)."""
    return {f"rule:{r.name}" for r in rules.rules if r.if_ is not None}
