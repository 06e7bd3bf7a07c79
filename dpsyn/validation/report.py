"""The gate's report: every check with its noisy value, limit and verdict; histograms for the plots.

Holds DP statistics only, never values (docs/privacy.md).
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from dpsyn.errors import GateFailedError

__all__ = ["CheckResult", "ColumnHistogram", "ValidationReport"]


class CheckResult(BaseModel):
    name: str
    column: str
    statistic: str
    value: float  # noisy (DP) value
    threshold: float
    limit: float = 0.0  # threshold + noise margin: the value the noisy statistic is compared with
    noise_std: float = 0.0  # std of the DP noise on this statistic (on the real side for rules)
    passed: bool


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
    noise_margin: float = 0.0  # z of the one-way, rule and utility checks' limits
    pair_noise_margin: float = 0.0  # z of the pair checks' limits (family-wise over the pairs by default)

    def is_valid(self) -> bool:
        return all(c.passed for c in self.checks)

    def failures(self) -> list[CheckResult]:
        return [c for c in self.checks if not c.passed]

    def raise_if_failed(self) -> None:
        bad = self.failures()
        if bad:
            names = [f"{c.name} ({c.value:.3f} > {c.limit:.3f})" for c in bad]
            raise GateFailedError(
                f"validation gate failed {len(bad)} of {len(self.checks)} checks: {', '.join(names)}; nothing was published",
                failures=[c.name for c in bad],
            )

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
        m = {f"{c.statistic}.{c.column}": c.value for c in self.checks}
        if self.utility:
            m["utility_auc_tstr"] = self.utility["auc_tstr"]
            m["utility_auc_trtr"] = self.utility["auc_trtr"]
        m["gate_passed"] = float(self.is_valid())
        m["gate_failed_checks"] = float(len(self.failures()))
        return m
