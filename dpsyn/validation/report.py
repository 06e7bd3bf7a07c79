"""The gate's report: every check with its noisy value, limit and verdict; histograms for the plots.

Holds DP statistics only, never values (docs/privacy.md).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, computed_field, model_validator

from dpsyn.errors import GateFailedError

__all__ = ["CheckResult", "ColumnHistogram", "ValidationReport", "raise_for_verdict"]


class CheckResult(BaseModel):
    name: str
    column: str
    statistic: str
    value: float  # noisy (DP) value
    threshold: float
    limit: float = 0.0  # threshold + noise margin: the value the noisy statistic is compared with
    noise_std: float = 0.0  # std of the DP noise on this statistic (on the real side for rules)
    primary: bool = False  # one of the checks the verdict needs informative (target, families, rules)
    # uninformative: the noise margin is larger than the effect the check must resolve; never a pass
    status: Literal["passed", "failed", "uninformative"] = "passed"

    @model_validator(mode="before")
    @classmethod
    def _from_passed(cls, data):
        """Reports written before checks had a status (and hand-made checks) give ``passed``."""
        if isinstance(data, dict) and "status" not in data and "passed" in data:
            data = {**data, "status": "passed" if data["passed"] else "failed"}
        if isinstance(data, dict):
            data = {k: v for k, v in data.items() if k != "passed"}
        return data

    @computed_field
    @property
    def passed(self) -> bool:
        return self.status == "passed"


class ColumnHistogram(BaseModel):
    """One column over its public encoding: the real side as released (noisy shares), the synthetic side exact."""

    column: str
    labels: list[str]  # public: the schema's categories or bins
    real: list[float]  # DP: noisy shares of the real rows (may be < 0 or not sum to 1)
    synthetic: list[float]
    noise_std: float


class ValidationReport(BaseModel):
    """Every check of the gate, with its verdict. Holds DP statistics only, never values."""

    checks: list[CheckResult] = Field(default_factory=list)
    histograms: list[ColumnHistogram] = Field(default_factory=list)
    audit: dict | None = None  # the in-run one-run audit's result (AuditResult), if enabled
    noise_std: float = 0.0  # noise std of a one-way statistic (pairs: see each check's noise_std)
    utility: dict | None = None  # noisy AUCs of TSTR and the DP TRTR model on the holdout
    n_real: int = 0
    n_synthetic: int = 0
    noise_margin: float = 0.0  # the one z of every informative check's limit (family-wise)
    pair_noise_margin: float = 0.0  # the same z (kept for readers of older reports)
    # passed: every informative check passed and the primary checks are informative; failed: a check failed;
    # uninformative: too few rows for the gate's ε to judge (nothing is published unless explicitly allowed)
    verdict: Literal["passed", "failed", "uninformative"] = "passed"

    @model_validator(mode="after")
    def _failed_if_a_check_failed(self):
        if self.verdict != "failed" and any(c.status == "failed" for c in self.checks):
            self.verdict = "failed"
        return self

    def is_valid(self) -> bool:
        return self.verdict == "passed" and not self.failures()

    def failures(self) -> list[CheckResult]:
        return [c for c in self.checks if c.status == "failed"]

    def uninformative(self) -> list[CheckResult]:
        return [c for c in self.checks if c.status == "uninformative"]

    def raise_if_failed(self, *, allow_uninformative: bool = False) -> None:
        raise_for_verdict(self.model_dump(), allow_uninformative=allow_uninformative)

    def add_audit(self, result, *, claimed_epsilon: float) -> CheckResult:
        """Add the one-run audit as a check: it fails when the empirical ε lower bound exceeds the claim."""
        self.audit = result.model_dump()
        check = CheckResult(name="audit:epsilon_lower_bound", column="", statistic="epsilon_lower_bound",
                            value=float(result.epsilon_lower_bound), threshold=float(claimed_epsilon),
                            limit=float(claimed_epsilon), passed=result.epsilon_lower_bound <= claimed_epsilon)
        self.checks.append(check)
        return check

    def to_html(self, *, title: str = "dpsyn validation report", context: dict | None = None) -> str:
        """A self-contained HTML page: verdict, failed checks, per-column plots (dpsyn/validation/html.py)."""
        from dpsyn.validation.html import render_html

        return render_html(self, title=title, context=context)

    def metrics(self) -> dict[str, float]:
        # per-column checks: statistic.column; the families and the verdict (no column): their name, e.g. gate.worst
        m = {(f"{c.statistic}.{c.column}" if c.column else c.name.replace(":", ".")): c.value for c in self.checks}
        if self.utility:
            m["utility_auc_tstr"] = self.utility["auc_tstr"]
            m["utility_auc_trtr"] = self.utility["auc_trtr"]
        m["gate_passed"] = float(self.is_valid())
        m["gate_failed_checks"] = float(len(self.failures()))
        m["gate_uninformative_checks"] = float(len(self.uninformative()))
        return m


_REPORT_AT = " (report with every check and plot: validation_report.html in the MLflow run's reports/)"


def raise_for_verdict(report: dict, *, allow_uninformative: bool = False, details: dict | None = None,
                      report_at: str | None = None, what: str = "table") -> None:
    """A failing (or, unless allowed, an uninformative) gate publishes nothing: raise :class:`GateFailedError`
    naming the failed checks, or saying the table is too small for the gate at this ε. ``details`` (what the run
    spent, its ids) ride on the error with the check names; ``report_at`` says where the full report is (default:
    the MLflow run's reports/); ``what`` names what was judged (a "table", a "dataset")."""
    where = _REPORT_AT if report_at is None else f" (report with every check and plot: {report_at})"
    allow = "allow_uninformative (--allow-uninformative)" if what == "dataset" else "validation.allow_uninformative=true"
    checks = report["checks"]
    bad = [c for c in checks if c.get("status", "passed" if c.get("passed") else "failed") == "failed"]
    if bad:
        names = [f"{c['name']} ({c['value']:.3f} > {c['limit']:.3f})" for c in bad]
        raise GateFailedError(f"validation gate failed {len(bad)} of {len(checks)} checks: {', '.join(names)}; "
                              f"nothing was published{where}", failures=[c["name"] for c in bad],
                              details={**(details or {}), "gate": "failed", "failed_checks": [c["name"] for c in bad]})
    if report.get("verdict") == "uninformative" and not allow_uninformative:
        weak = [c["name"] for c in checks if c.get("status") == "uninformative" and c.get("primary")]
        raise GateFailedError(
            f"the validation gate cannot judge this {what} at this ε: its checks {', '.join(weak)} are uninformative "
            "(their DP noise exceeds what they must resolve); use more rows or a larger ε (see `dpsyn run` "
            f"preflight), or set {allow} to publish with the manifest saying so; "
            f"nothing was published{where}", failures=weak,
            details={**(details or {}), "gate": "uninformative", "uninformative_checks": weak})

