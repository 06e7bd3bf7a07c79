"""Drift between a model's training batch and the newest real batch, measured with differential privacy.

Both batches are private, so the comparison is a release like the validation
gate's: one Gaussian mechanism over

* per numeric/datetime column, the two-sample KS statistic between the batches;
* per modelled column, each batch's share vector over the schema's public
  encoding (categories or declared bins), for the PSI and the report's plots.

A row lies in one batch only. Adding or removing a row of batch b moves each KS
statistic by at most 1/(n_b − 1) and each of batch b's share vectors by at most
√2/(n_b − 1) in L2, so the whole weighted vector moves by at most
Δ = √(k_ks + 2·w²·k_hist)/(min(n_old, n_new) − 1), and the release adds N(0, (σΔ/w_i)²)
to statistic i (σ from the check's own ε, charged to the population's budget like
any run). The population stability index (PSI) of a column is computed from the two
noisy share vectors (post-processing): negative shares are clipped to 0, cells
whose noisy share is under ``psi_floor`` in both batches are merged, and shares are
smoothed by ``psi_floor``, and the PSI the noise alone would add (≈ 2s²·Σ 1/p
for share noise std s) is subtracted.

Drift is declared when a noisy KS statistic exceeds ``ks_threshold`` (0.1, the
seed's rule) or a PSI exceeds ``psi_threshold`` (0.2: "moderate shift" by the usual
rule of thumb). The noisy values are what is stored and logged.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from dpsyn.errors import InputError
from dpsyn.privacy import NoiseSource, PrivacyAccountant
from dpsyn.schema import ColumnKind, TableSchema

__all__ = ["DRIFT_LABEL", "ColumnDrift", "DriftConfig", "DriftReport", "detect_drift", "detect_drift_from_statistics",
           "drift_statistics", "psi"]

DRIFT_LABEL = "drift.release"


class DriftConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    epsilon: float = Field(
        default=0.3, gt=0, description="ε of one drift check (one Gaussian release). At 0.3 and ~17,000 rows per "
        "batch (diabetes130 monthly), KS noise std ≈ 0.004 and share noise std ≈ 0.009.")
    ks_threshold: float = Field(default=0.1, gt=0, le=1, description="Drift if a column's noisy KS exceeds this.")
    psi_threshold: float = Field(default=0.2, gt=0, description="Drift if a categorical column's PSI exceeds this.")
    psi_floor: float = Field(default=0.005, gt=0, lt=0.5, description="Smoothing / merge floor for PSI shares.")
    hist_weight: float = Field(
        default=0.5, gt=0, description="Weight of the share vectors relative to the KS statistics in the one release.")
    count_share: float = Field(
        default=0.1, gt=0, lt=1, description="ε share (alone) of the noisy batch sizes released first; their lower "
        "bounds set the statistics' sensitivity.")


class ColumnDrift(BaseModel):
    column: str
    kind: str
    statistic: str  # "ks" or "psi"
    value: float  # noisy KS, or PSI from the noisy shares
    threshold: float
    drifted: bool
    labels: list[str]  # public labels of the share vectors
    reference: list[float]  # noisy shares of the training batch
    current: list[float]  # noisy shares of the new batch
    noise_std: float  # of the KS statistic (numeric) or of each share


class DriftReport(BaseModel):
    drifted: bool
    columns: list[ColumnDrift]
    n_reference: int
    n_current: int
    epsilon: float
    noise_multiplier: float

    @property
    def drifted_columns(self) -> list[str]:
        return [c.column for c in self.columns if c.drifted]

    def summary(self) -> str:
        if not self.drifted:
            worst = max(self.columns, key=lambda c: c.value / c.threshold, default=None)
            tail = f"; largest {worst.statistic}:{worst.column} = {worst.value:.3f}" if worst else ""
            return f"no drift ({len(self.columns)} columns checked{tail})"
        parts = [f"{c.statistic}:{c.column} = {c.value:.3f} > {c.threshold:g}" for c in self.columns if c.drifted]
        return "drift: " + ", ".join(parts)


def psi(reference: np.ndarray, current: np.ndarray, *, floor: float, noise_std: float = 0.0) -> float:
    """Population stability index Σ (c − r)·ln(c / r) over shares, from noisy shares.

    Negative shares are clipped to 0; cells under max(floor, 3·noise_std) in both batches are merged into one
    (their noise would dominate the log ratio); shares are smoothed by ``floor``. PSI ≈ Σ (c − r)²/p, so noise of
    std s on each share adds about 2s²·Σ 1/p: that expected excess is subtracted (not below 0).
    """
    r, c = np.clip(np.asarray(reference, float), 0, None), np.clip(np.asarray(current, float), 0, None)
    small = (r < max(floor, 3 * noise_std)) & (c < max(floor, 3 * noise_std))
    if small.any():
        r = np.append(r[~small], r[small].sum())
        c = np.append(c[~small], c[small].sum())
    r = (r + floor) / (r.sum() + floor * len(r))
    c = (c + floor) / (c.sum() + floor * len(c))
    value = float(np.sum((c - r) * np.log(c / r)))
    return max(value - 2 * noise_std**2 * float(np.sum(2 / (r + c))), 0.0)


def drift_statistics(batch: pd.DataFrame, schema: TableSchema):
    """The exact counts the drift check reads from one batch (private; counts of disjoint partitions merge
    into those of the whole batch, :meth:`~dpsyn.validation.stats.RealStatistics.merge`)."""
    from dpsyn.validation.stats import real_statistics

    return real_statistics(batch, schema, pair_max_cells=0)


def detect_drift(reference: pd.DataFrame, current: pd.DataFrame, schema: TableSchema,
                 config: DriftConfig | None = None, *, accountant: PrivacyAccountant,
                 noise: NoiseSource) -> DriftReport:
    """Compare the training batch ``reference`` with ``current`` (both masked as the schema declares); charges
    ``accountant`` one Gaussian release whose σ costs ``config.epsilon`` alone."""
    return detect_drift_from_statistics(drift_statistics(reference, schema), drift_statistics(current, schema),
                                        schema, config, accountant=accountant, noise=noise)


def detect_drift_from_statistics(reference, current, schema: TableSchema, config: DriftConfig | None = None, *,
                                 accountant: PrivacyAccountant, noise: NoiseSource) -> DriftReport:
    """:func:`detect_drift` from the two batches' exact counts (:func:`drift_statistics`, possibly merged from
    partitions): the noise is added once, to statistics of the merged counts, so the release is the same.

    Two Gaussian releases on ``accountant`` (a fresh one, target ``config.epsilon``): the batches' noisy sizes
    (``count_share`` of ε alone; a row lies in one batch, so sensitivity 1), whose lower bounds set the
    statistics' sensitivity, then the statistics with the rest of the budget."""
    from dpsyn.encoding import DiscreteEncoder
    from dpsyn.privacy import plan_counts, release_counts
    from dpsyn.validation.stats import ks_between_counts

    config = config or DriftConfig()
    plan = plan_counts(accountant, config.count_share, groups=("reference", "current"))
    counts = release_counts({"reference": reference.n, "current": current.n}, plan, accountant=accountant,
                            noise=noise)
    names = [c.name for c in schema.synthesizable_columns() if c.name in reference.hist and c.name in current.hist]
    enc = DiscreteEncoder(schema, columns=names)
    n_ref, n_cur = max(reference.n, 1), max(current.n, 1)
    hists = [(c, reference.hist[c.name] / n_ref, current.hist[c.name] / n_cur) for c in enc.columns]
    numeric = [c for c, _, _ in hists if c.kind != ColumnKind.categorical]
    ks = [ks_between_counts(reference.values[c.name], current.values[c.name]) for c in numeric]
    w = config.hist_weight
    # each statistic moves by ≤ 1/(n_min − 1) ≤ 1/L for L the smaller of the two noisy lower bounds
    n_low = min(counts.lower_bound("reference"), counts.lower_bound("current"))
    if n_low < 1:
        raise InputError("a batch is too small for the drift check at this ε: its noisy row count cannot bound "
                         "the check's sensitivity; use larger batches or a larger drift.epsilon")
    delta = math.sqrt(len(ks) + 2 * w**2 * len(hists)) / n_low
    sigma = accountant.calibrate(sample_rate=1.0, steps=1, label=DRIFT_LABEL)
    exact = np.concatenate([np.asarray(ks, float)] + [np.concatenate([r, s]) for _, r, s in hists])
    stds = np.concatenate([np.full(len(ks), sigma * delta), np.full(len(exact) - len(ks), sigma * delta / w)])
    noisy = exact + noise.normal_numpy(len(exact), 1.0) * stds
    accountant.record(DRIFT_LABEL, noise_multiplier=sigma, sample_rate=1.0, steps=1)
    ks_noisy = dict(zip([c.name for c in numeric], noisy[: len(ks)], strict=True))
    i = len(ks)
    cols = []
    for col, r, _ in hists:
        k = len(r)
        ref, cur = noisy[i:i + k], noisy[i + k:i + 2 * k]
        i += 2 * k
        if col.name in ks_noisy:
            value, thr, stat, sd = float(ks_noisy[col.name]), config.ks_threshold, "ks", sigma * delta
        else:
            sd = sigma * delta / w
            value, thr, stat = psi(ref, cur, floor=config.psi_floor, noise_std=sd), config.psi_threshold, "psi"
        cols.append(ColumnDrift(column=col.name, kind=col.kind.value, statistic=stat, value=value, threshold=thr,
                                drifted=value > thr, labels=list(col.labels), reference=[float(x) for x in ref],
                                current=[float(x) for x in cur], noise_std=float(sd)))
    return DriftReport(drifted=any(c.drifted for c in cols), columns=cols, n_reference=counts.estimate("reference"),
                       n_current=counts.estimate("current"), epsilon=accountant.epsilon(), noise_multiplier=sigma)


def render_html(report: DriftReport, *, title: str = "dpsyn drift report", context: dict | None = None) -> str:
    """A self-contained HTML page: the verdict, a table of columns, and per column the training batch's noisy
    distribution beside the new batch's (public labels; every number released with DP noise)."""
    import html as _html
    from datetime import UTC, datetime

    from dpsyn.validation.html import CSS, bar_chart_svg

    def e(x):
        return _html.escape(str(x), quote=True)

    verdict = ("DRIFT: retraining is due" if report.drifted else "NO DRIFT: the model stays")
    cls = "fail" if report.drifted else "pass"
    out = [f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{e(title)}</title>'
           f"<style>{CSS}</style></head><body><main><h1>{e(title)}</h1>",
           f'<div class="meta">{datetime.now(UTC):%Y-%m-%d %H:%M UTC} · training batch {report.n_reference:,} rows · '
           f"new batch {report.n_current:,} rows · ε {report.epsilon:.3f} (noise multiplier {report.noise_multiplier:.2f})"
           f"</div>", f'<div id="verdict" class="verdict {cls}" data-verdict="{"drift" if report.drifted else "none"}">'
           f"{e(verdict)} · {e(report.summary())}</div>"]
    if context:
        out.append("<table>" + "".join(f"<tr><th>{e(k)}</th><td>{e(v)}</td></tr>" for k, v in context.items())
                   + "</table>")
    out.append("<h2>Columns</h2><table><tr><th>column</th><th>statistic</th><th>value (DP)</th><th>threshold</th>"
               "<th>verdict</th></tr>")
    for c in sorted(report.columns, key=lambda c: -c.value / c.threshold):
        out.append(f'<tr class="{"fail" if c.drifted else "ok"}"><td>{e(c.column)}</td><td>{c.statistic}</td>'
                   f"<td>{c.value:.4f}</td><td>{c.threshold:g}</td><td>{'DRIFT' if c.drifted else 'ok'}</td></tr>")
    out.append('</table><h2>Training batch vs new batch</h2><div class="grid">')
    for c in report.columns:
        out.append(f'<figure class="plot{" fail" if c.drifted else ""}" data-column="{e(c.column)}"><figcaption>'
                   f"{e(c.column)} ({c.statistic} {c.value:.3f})</figcaption>"
                   f"{bar_chart_svg(c.column, c.labels, c.reference, c.current, ('training batch', 'new batch'))}"
                   "</figure>")
    out.append('</div><p class="small">Both batches are private: every bar and statistic here is a noisy release '
               "charged to the population's privacy budget.</p></main></body></html>")
    return "\n".join(out)
