"""Before any ε is spent: can the gate judge a table of this size at this ε?

The gate's verdict rests on one statistic (``gate:worst``) whose noise std is σ·√(Σw²)/L, with σ fixed by the
gate's budget share of ε, Σw² by the configuration (1 + the diagnosis pool + twice the histograms' pool) and L
the row count's lower bound. All of it is public except the row count, so the forecast needs only the number of
rows: the caller's own count of its input (an owner-side check, like reading the file against its schema; the
answer goes to the operator's terminal, nothing is released) or a public one.
"""

from __future__ import annotations

import math

from dpsyn.errors import InputError
from dpsyn.privacy import PrivacyAccountant
from dpsyn.validation.config import ValidationConfig

__all__ = ["forecast", "require_informative"]


def _train_share(config: ValidationConfig, has_target: bool) -> float:
    return 1.0 - config.holdout_share if config.utility and has_target else 1.0


def forecast(config: ValidationConfig, *, epsilon: float, delta: float, rows: int, has_target: bool,
             count_share: float = 0.1) -> dict:
    """The verdict statistic's noise std and whether it can resolve ``verdict_resolution`` (with the smallest
    possible z: one informative check), for a table of ``rows`` rows."""
    acct = PrivacyAccountant(epsilon=epsilon, delta=delta)
    sigma = acct.sigma_for_share(config.budget_share)
    sigma_count = acct.sigma_for_share(count_share)
    sum_w2 = config.primary_weight**2 + config.detail_weight + (2 * config.hist_weight if config.hist_weight else 0)
    from scipy.special import ndtri  # the standard normal's quantile, without loading scipy.stats (0.6 s)

    z_count = float(ndtri(1 - 1e-6))  # about the lower bound's z for the δ tail reserved for it
    n_low = rows * _train_share(config, has_target) - z_count * sigma_count - 1
    z = config.noise_margin if config.noise_margin is not None else float(ndtri(1 - config.false_alarm))
    std = sigma * math.sqrt(sum_w2) / config.primary_weight / max(n_low, 1e-9)
    need = config.max_noise_ratio * config.verdict_resolution
    min_rows = math.ceil((z * sigma * math.sqrt(sum_w2) / config.primary_weight / need + z_count * sigma_count + 1)
                         / _train_share(config, has_target))
    # without a gate that can judge, the run still needs a noisy count whose lower bound is ≥ 1 (every sensitivity)
    min_rows_count = math.ceil((z_count * sigma_count + 2) / _train_share(config, has_target))
    return {"noise_std": std, "informative": n_low > 0 and z * std <= need, "min_rows": min_rows,
            "countable": n_low >= 1, "min_rows_count": min_rows_count}


def require_informative(config: ValidationConfig, *, epsilon: float, delta: float, rows: int, has_target: bool,
                        count_share: float = 0.1) -> None:
    """Raise :class:`InputError` (exit 2) when the gate could not judge ``rows`` rows at ``epsilon``, naming the
    rows it needs at this ε and the ε it needs for these rows; nothing else is done (no ε is spent)."""
    f = forecast(config, epsilon=epsilon, delta=delta, rows=rows, has_target=has_target, count_share=count_share)
    if config.allow_uninformative:
        if not f["countable"]:  # too small for any run at this ε, whatever the gate may do
            raise InputError(f"the table is too small for a run at ε = {epsilon:g}: the noisy row count cannot bound "
                             f"the mechanisms' sensitivity below {f['min_rows_count']:,} rows at this ε; use more rows "
                             "or a larger ε; nothing was spent")
        return
    if f["informative"]:
        return
    lo, hi = epsilon, epsilon
    while hi < 1e3 and not forecast(config, epsilon=hi, delta=delta, rows=rows, has_target=has_target,
                                    count_share=count_share)["informative"]:
        lo, hi = hi, hi * 2
    for _ in range(30):
        mid = (lo + hi) / 2
        ok = forecast(config, epsilon=mid, delta=delta, rows=rows, has_target=has_target, count_share=count_share)
        lo, hi = (lo, mid) if ok["informative"] else (mid, hi)
    eps_text = f"ε ≥ {hi:.2g}" if hi < 1e3 else "a much larger ε"
    raise InputError(f"the table is too small for the validation gate at ε = {epsilon:g}: it needs at least "
                     f"{f['min_rows']:,} rows at this ε, or {eps_text} for this table (or validation.allow_uninformative"
                     "=true to publish with the manifest saying the gate could not judge); nothing was spent")
