"""Per-column clip weights from sensitivity tiers (the seed's "per-field clipping").

A DP-SGD synthesizer clips each row's gradient to norm C, the sensitivity the
accountant assumes. Tiers split that clipping budget between columns: a more
sensitive column gets a smaller weight, so less of its signal enters each
clipped update. The weights are public (a function of the schema alone) and do
not change the row-level (ε, δ) guarantee, which covers every column alike; they
change how utility is traded between columns.

:func:`per_column_clip_norms` turns weights into clip norms C_j = C·w_j/‖w‖₂.
When each column's gradient lives on its own parameters (dpgen's per-column
heads), clipping each part to C_j keeps the row's whole gradient within
sqrt(Σ C_j²) = C, so the accountant's sensitivity is unchanged.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from dpsyn.errors import ConfigError
from dpsyn.schema import TableSchema, Tier

__all__ = ["DEFAULT_CLIP_WEIGHTS", "per_column_clip_norms", "tier_clip_weights"]

# L1 columns are dropped before synthesis (or generalized and still not modelled:
# TableSchema.synthesizable_columns), so L1 has no weight.
DEFAULT_CLIP_WEIGHTS: Mapping[Tier, float] = {Tier.L2: 0.5, Tier.L3: 0.75, Tier.L4: 1.0}

_ORDER = (Tier.L2, Tier.L3, Tier.L4)  # most to least sensitive of the modelled tiers


def _resolve(weights: Mapping[Tier | str, float] | None) -> dict[Tier, float]:
    resolved = dict(DEFAULT_CLIP_WEIGHTS)
    for key, value in (weights or {}).items():
        try:
            tier = Tier(key)
        except ValueError:
            tier = None
        if tier not in _ORDER:
            why = "L1 columns are never modelled" if tier == Tier.L1 else f"unknown tier '{key}'"
            raise ConfigError(f"no clip weight for tier '{key}' ({why}); choose from: {', '.join(t.value for t in _ORDER)}")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ConfigError(f"clip weight for tier {tier.value} must be a number in (0, 1]")
        if not 0 < value <= 1:
            raise ConfigError(f"clip weight for tier {tier.value} must be in (0, 1] (got {value:g})")
        resolved[tier] = float(value)
    for more, less in zip(_ORDER, _ORDER[1:], strict=False):
        if resolved[more] > resolved[less]:
            raise ConfigError(
                f"clip weights must not grow with sensitivity: tier {more.value} ({resolved[more]:g}) "
                f"is above tier {less.value} ({resolved[less]:g})"
            )
    return resolved


def tier_clip_weights(schema: TableSchema, weights: Mapping[Tier | str, float] | None = None) -> dict[str, float]:
    """Clip weight of each column the synthesizers model, from its tier.

    ``weights`` overrides some or all of :data:`DEFAULT_CLIP_WEIGHTS`
    (L2 0.5, L3 0.75, L4 1.0); each must be in (0, 1] and a more sensitive tier
    may not weigh more than a less sensitive one (``ConfigError`` otherwise).
    Keys of the result follow :meth:`TableSchema.synthesizable_columns`
    (target last); L1 columns are never modelled and never appear.
    """
    resolved = _resolve(weights)
    return {c.name: resolved[c.tier] for c in schema.synthesizable_columns()}


def per_column_clip_norms(weights: Mapping[str, float], *, max_grad_norm: float) -> dict[str, float]:
    """Clip norm per column, C_j = C·w_j/‖w‖₂, so that sqrt(Σ C_j²) = C (``max_grad_norm``)."""
    if not (math.isfinite(max_grad_norm) and max_grad_norm > 0):
        raise ConfigError("max_grad_norm must be a positive number")
    if not weights:
        return {}
    if any(not (math.isfinite(w) and w > 0) for w in weights.values()):
        raise ConfigError("clip weights must be positive numbers")
    norm = math.sqrt(sum(w * w for w in weights.values()))
    return {name: max_grad_norm * w / norm for name, w in weights.items()}
