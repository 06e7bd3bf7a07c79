"""The validation gate across related tables: every table checked as the single-table gate checks one, at the
person level, with the structure between tables among the checks; a failing gate publishes nothing.

**Components.** The gate judges the tables the relational synthesizer models (:mod:`dpsyn.relational.synth`):

* the persons' table with one ``n_<child>`` column per child table (the person's bounded number of rows of it):
  its checks include the **distribution of children per person** (KS, TVD, tail and constant checks of each
  ``n_<child>`` column, and its pairs with the person columns), and of the declared per-person flags (whether a
  person has a child row in a category: ``<child>__<flag>``, computed the same way from the real and the
  synthetic tables);
* each child table joined with the person columns it is drawn given (``condition_on``): its checks include
  **parent × child pair TVD** (a child column against a person column) and rules that span the tables (a rules
  file for ``<dataset>.<child>`` may name both tables' columns, e.g. a pregnancy condition only for female
  patients).

The synthetic side of each component is built the same way from the synthetic tables (post-processing).

**Privacy** (docs/privacy.md, "The gate across tables"). Each component is one run of
:func:`dpsyn.validation.validate` (one Gaussian release of its weighted statistics and histograms) plus one
Gaussian release of its row count, which gives the lower bound ``n_low`` the statistics' sensitivities rest on:

* a person is one row of the persons' component, so its statistics move by at most 1/``n_low`` per person;
* a child component is compared on at most ``max_rows_per_person`` rows per person (``k_g``, public; the real side
  bounded by a person-local random rule, the synthetic side by the same rule), so a person moves each statistic
  by at most ``k_g``/``n_low`` and its row count by at most ``k_g``: the component's mechanisms are recorded at the
  person level through an accountant with ``rows_per_unit = k_g`` (σ/k_g, as for a single table with a unit).

The budget: the synthesizer's budget split (:func:`dpsyn.relational.budget_shares`) gives the gate a share of the
run's 1/σ_total², equal parts per component, of which :data:`COUNT_PART` goes to the count; the lower bounds'
tail (:data:`GATE_TAIL` of δ, split over the components) is reserved before any mechanism. Every mechanism is
copied into the run's accountant, which composes the whole history; the gate's false-alarm rate is split over
the components (Bonferroni), so a dataset that meets every threshold passes with probability ≥ 1 − false_alarm.
"""

from __future__ import annotations

import html
import json
import logging
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from dpsyn.errors import ConfigError, InputError
from dpsyn.privacy import NoiseSource, NoisyCounts, PrivacyAccountant, gaussian_epsilon
from dpsyn.privacy.unit import bound_contributions
from dpsyn.relational.schema import DatasetSchema
from dpsyn.relational.synth import GATE_TAIL, _naive, bound_tables, person_summaries, root_frame
from dpsyn.schema import ColumnKind
from dpsyn.validation import (
    VALIDATION_LABEL,
    DatasetGateConfig,
    ValidationReport,
    gate_rules,
    real_statistics_for,
    validate,
)
from dpsyn.validation.report import raise_for_verdict

__all__ = ["COUNT_PART", "GATE_TAIL", "DatasetGateConfig", "DatasetReport", "child_rules", "gate_dataset"]

logger = logging.getLogger(__name__)

#: Share of a component's gate budget (of 1/σ²) for its row count.
COUNT_PART = 0.1


@dataclass
class DatasetReport:
    """Every component's report (DP statistics only, never values) and the dataset's verdict."""

    reports: dict[str, ValidationReport]
    cross_table: dict[str, list[str]] = field(default_factory=dict)  # component → its checks that span tables

    @property
    def verdict(self) -> str:
        verdicts = {r.verdict for r in self.reports.values()}
        return "failed" if "failed" in verdicts else "uninformative" if "uninformative" in verdicts else "passed"

    def checks(self) -> list[dict]:
        """Every check, named ``<table>:<check>``."""
        return [{**c.model_dump(), "name": f"{t}:{c.name}", "table": t} for t, r in self.reports.items()
                for c in r.checks]

    def to_dict(self) -> dict:
        return {"verdict": self.verdict, "tables": {t: r.model_dump() for t, r in self.reports.items()},
                "cross_table": self.cross_table}

    def raise_if_failed(self, *, allow_uninformative: bool = False, report_at: str | None = None,
                        details: dict | None = None) -> None:
        """A failing (or, unless allowed, an uninformative) gate publishes nothing (the single-table rule,
        :func:`dpsyn.validation.report.raise_for_verdict`, over every table's checks)."""
        raise_for_verdict({"checks": self.checks(), "verdict": self.verdict}, allow_uninformative=allow_uninformative,
                          details=details, report_at=report_at, what="dataset")

    def to_html(self, *, title: str = "dpsyn validation report (related tables)", context: dict | None = None
                ) -> str:
        """One page: the verdict per table, the checks that span tables, then each table's report."""
        from dpsyn.validation.html import CSS

        e = html.escape
        verdict = self.verdict
        cls = "pass" if verdict == "passed" else "fail"
        out = [f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{e(title)}</title>'
               f"<style>{CSS}</style></head><body><main><h1>{e(title)}</h1>",
               f'<div id="verdict" class="verdict {cls}" data-verdict="{verdict}">{verdict.upper()}: '
               + ("every table passed; the dataset may be published." if verdict == "passed" else
                  "nothing is published.") + "</div>"]
        if context:
            out.append("<h2>Run</h2><table>" + "".join(
                f"<tr><th>{e(str(k))}</th><td>{e(str(v))}</td></tr>" for k, v in context.items()) + "</table>")
        out.append("<h2>Tables</h2><table><tr><th>table</th><th>verdict</th><th>checks</th><th>failed</th>"
                   "<th>uninformative</th><th>rows compared (noisy)</th></tr>")
        for t, r in self.reports.items():
            out.append(f"<tr><td>{e(t)}</td><td>{e(r.verdict)}</td><td>{len(r.checks)}</td>"
                       f"<td>{len(r.failures())}</td><td>{len(r.uninformative())}</td><td>{r.n_real:,}</td></tr>")
        out.append("</table><h2 id=\"cross-table\">Checks across tables</h2><p>Children per person (the "
                   "<code>n_&lt;table&gt;</code> columns of the persons' table) and child columns against the "
                   "person columns they are drawn given.</p><table id=\"cross-table-checks\"><tr><th>check</th>"
                   "<th>value (noisy)</th><th>limit</th><th>status</th></tr>")
        for t, names in self.cross_table.items():
            by_name = {c.name: c for c in self.reports[t].checks}
            for n in names:
                c = by_name[n]
                out.append(f"<tr><td><code>{e(t)}:{e(n)}</code></td><td>{c.value:.4f}</td><td>{c.limit:.4f}</td>"
                           f"<td>{e(c.status)}</td></tr>")
        out.append("</table>")
        for t, r in self.reports.items():  # each table's own page, inline
            page = r.to_html(title=f"table {t}")
            body = page.split("<main>", 1)[1].rsplit("</main>", 1)[0]
            out.append(f'<section id="table-{e(t)}"><hr>{body}</section>')
        out.append("</main></body></html>")
        return "".join(out)

    def write(self, folder: str | Path, *, context: dict | None = None) -> list[Path]:
        """``validation_report.json`` and ``validation_report.html`` in ``folder`` (created)."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        j, h = folder / "validation_report.json", folder / "validation_report.html"
        j.write_text(json.dumps(self.to_dict(), indent=2, sort_keys=True, default=str), encoding="utf-8")
        h.write_text(self.to_html(context=context), encoding="utf-8")
        return [j, h]


def _child_frame_of_synthetic(c, synthetic: dict[str, pd.DataFrame], dataset: DatasetSchema, k: int,
                              noise: NoiseSource) -> pd.DataFrame:
    """A synthetic child table as its component: at most ``k`` rows per synthetic person (the real side's random
    rule, :func:`bound_contributions`), joined with the synthetic person's ``condition_on`` columns
    (post-processing)."""
    persons = synthetic[dataset.root.name]
    rows = synthetic[c.name]
    codes, _ = pd.factorize(rows[c.ref.foreign_key].astype("string"))
    rows = rows.loc[bound_contributions(codes, k, noise)].reset_index(drop=True)
    index = pd.Series(np.arange(len(persons)), index=persons[dataset.person.key].astype("string").to_numpy())
    at = index.reindex(rows[c.ref.foreign_key].astype("string").to_numpy()).to_numpy()
    if pd.isna(at).any():
        raise InputError(f"synthetic table {c.name} names persons the synthetic persons' table lacks")
    out = rows.copy()
    for col in c.schema_.columns:
        if col.name in out.columns and col.kind == ColumnKind.datetime:
            out[col.name] = _naive(out[col.name])
    for x in c.ref.condition_on:
        v = persons[x].iloc[at.astype(np.int64)].reset_index(drop=True)
        out[x] = _naive(v) if dataset.root_schema.column(x).kind == ColumnKind.datetime else v
    return out


def _root_frame_of_synthetic(synthetic: dict[str, pd.DataFrame], dataset: DatasetSchema) -> pd.DataFrame:
    persons = synthetic[dataset.root.name].copy()
    ids = persons[dataset.person.key].astype("string")
    position = pd.Series(np.arange(len(persons)), index=ids.to_numpy())
    children = {}
    for c in dataset.children:
        per = synthetic[c.name][c.ref.foreign_key].astype("string").value_counts()
        persons[c.count_column] = per.reindex(ids.to_numpy()).fillna(0).to_numpy(dtype=np.float64)
        pc = position.reindex(synthetic[c.name][c.ref.foreign_key].astype("string").to_numpy()).to_numpy()
        known = ~pd.isna(pc)
        children[c.name] = (synthetic[c.name].loc[known].reset_index(drop=True), pc[known].astype(np.int64))
    # the same per-person flags and target-known column the persons' model carries, computed the same way
    return person_summaries(dataset, persons, np.arange(len(persons)), children)


def _cross_table(report: ValidationReport, columns: set[str], *, pairs_only: bool) -> list[str]:
    """Names of the checks of ``report`` that span tables: on a column of ``columns`` (the persons' component:
    its rows-per-person and person-flag columns), or a pair with exactly one side in ``columns`` (a child component: a child
    column against a person column)."""
    out = []
    for c in report.checks:
        parts = c.column.split("/") if c.column else []
        inside = [p in columns for p in parts]
        if (pairs_only and len(parts) == 2 and sum(inside) == 1) or (not pairs_only and any(inside)):
            out.append(c.name)
    return out


def _unjudgeable(lower_bound: float, n_hat: float) -> ValidationReport:
    """The report of a table whose noisy row count's lower bound is below one row: no statistic can be released
    with a bounded sensitivity, so none is (the count was); its one check is uninformative."""
    from dpsyn.validation import CheckResult

    return ValidationReport(n_real=max(0, int(round(n_hat))), verdict="uninformative", checks=[CheckResult(
        name="rows:lower_bound", column="", statistic="rows_lower_bound", value=float(lower_bound), threshold=1.0,
        limit=1.0, primary=True, status="uninformative")])


def child_rules(model, config: DatasetGateConfig | dict | None = None) -> dict:
    """The rules the gate applies to each child component (``<dataset>.<table>``: its rows joined with their
    person's columns), by child table name (None where there are none): what the sampler must hold
    (:meth:`~dpsyn.relational.RelationalSynthesizer.sample`'s ``rules``) for the gate's hard rules to pass."""
    config = config if isinstance(config, DatasetGateConfig) else DatasetGateConfig(**(config or {}))
    return {c.name: gate_rules(config.validation, model.child_schemas_[c.name]) for c in model.dataset_.children}


def gate_dataset(model, tables: dict[str, pd.DataFrame], synthetic: dict[str, pd.DataFrame],
                 config: DatasetGateConfig | dict | None = None, *, noise: NoiseSource | None = None
                 ) -> DatasetReport:
    """Judge ``synthetic`` against the private ``tables`` (not modified) for a fitted relational ``model`` whose
    budget split holds the gate's share (``fit(..., gate_share=config.share)``); charges the model's accountant."""
    config = config if isinstance(config, DatasetGateConfig) else DatasetGateConfig(**(config or {}))
    ds: DatasetSchema = model.dataset_
    accountant: PrivacyAccountant = model.accountant_
    shares = model.shares_
    if not getattr(model, "gate_z_", None):
        raise ConfigError("the model was fitted without the gate's budget: fit(..., gate_share=...) first")
    noise = noise or NoiseSource(secure=model.privacy.secure_rng)
    components = ds.tables()
    vcfg = config.validation.model_copy(update={"utility": False, "audit": False,
                                                "false_alarm": config.validation.false_alarm / len(components)})
    root_df, root_codes, children = bound_tables(tables, ds, noise)
    reports: dict[str, ValidationReport] = {}
    cross: dict[str, list[str]] = {}
    for name in components:
        share = shares[f"gate.{name}"]
        sigma_count = model.sigma_total_ / math.sqrt(share * COUNT_PART)
        sigma_stats = model.sigma_total_ / math.sqrt(share * (1 - COUNT_PART))
        if name == ds.root.name:
            k = 1
            schema = model.root_schema_
            real = root_frame(ds, root_df, root_codes, {c: pc for c, (_, pc) in children.items()})
            real = person_summaries(ds, real, root_codes, children)
            synth = _root_frame_of_synthetic(synthetic, ds)
            spanning = {c.count_column for c in ds.children} | {f for c in ds.children for f in c.flag_columns()}
        else:
            c = next(x for x in ds.children if x.name == name)
            k = min(c.k, config.max_rows_per_person)
            df, pc = children[name]
            keep = bound_contributions(pc, k, noise)
            schema = model.child_schemas_[name]
            real = model.child_frame(c, df.loc[keep].reset_index(drop=True), pc[keep], root_df, root_codes)
            synth = _child_frame_of_synthetic(c, synthetic, ds, k, noise)
            spanning = set(c.ref.condition_on)
        # the component's row count: one Gaussian release, sensitivity k per person
        n_hat = float(len(real)) + float(noise.normal_numpy(1, sigma_count * k)[0])
        accountant.record(f"gate.{name}.rows", noise_multiplier=sigma_count, sample_rate=1.0, steps=1,
                          person_level=True)
        counts = NoisyCounts(values={"train": n_hat}, noise_std=sigma_count * k, z=model.gate_z_)
        if counts.lower_bound("train") < 1:  # no sensitivity bound: this table cannot be judged at this ε
            reports[name] = _unjudgeable(counts.lower_bound("train"), n_hat)
            cross[name] = []
            logger.info("relational gate: %s uninformative (its noisy row count bounds no sensitivity)", name)
            del real
            continue
        kw = {} if k == 1 else {"unit": "person", "rows_per_unit": k}
        sub = PrivacyAccountant(epsilon=gaussian_epsilon(sigma_stats, delta=accountant.mechanism_delta,
                                                         accountant=accountant.name) * 1.01 + 1e-9,
                                delta=accountant.mechanism_delta, accountant=accountant.name, **kw)
        sub.plan(VALIDATION_LABEL, noise_multiplier=sigma_stats * k)  # row level: σ·k is σ per person
        try:
            stats = real_statistics_for(real, schema, vcfg)
            report = validate(None, synth, schema, vcfg, accountant=sub, noise=noise, real_stats=stats, counts=counts)
        finally:
            for m in sub.ledger:  # at the person level already
                accountant.record(f"gate.{name}.{m.label}", noise_multiplier=m.noise_multiplier,
                                  sample_rate=m.sample_rate, steps=m.steps, person_level=True)
        del real, stats
        reports[name] = report
        cross[name] = _cross_table(report, spanning, pairs_only=name != ds.root.name)
        logger.info("relational gate: %s %s (%d checks)", name, report.verdict, len(report.checks))
    accountant.check()
    model.privacy_ = accountant.summary()
    return DatasetReport(reports, cross)
