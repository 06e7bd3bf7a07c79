"""dpsyn.masking.tiers: per-column clip weights from sensitivity tiers."""

from __future__ import annotations

import math

import pytest

from dpsyn.errors import ConfigError
from dpsyn.masking import DEFAULT_CLIP_WEIGHTS, per_column_clip_norms, tier_clip_weights
from dpsyn.schema import Tier, parse_schema

SCHEMA = parse_schema(
    """
name: tiers
target: outcome
columns:
  - {name: mrn, kind: identifier, tier: L1}
  - {name: zip, kind: categorical, domain: ["021"], tier: L1, generalize: zip3}
  - {name: outcome, kind: categorical, domain: ["yes", "no"], tier: L2}
  - {name: diag, kind: categorical, domain: ["250"], tier: L2}
  - {name: age, kind: numeric, bounds: [0, 110], tier: L3}
  - {name: note, kind: text, tier: L2}
  - {name: weight, kind: numeric, bounds: [0, 1], tier: L4}
"""
)


def test_defaults_follow_tiers_for_modelled_columns_target_last():
    w = tier_clip_weights(SCHEMA)
    assert list(w) == ["diag", "age", "weight", "outcome"]  # no identifiers, text or L1; target last
    assert w == {"diag": 0.5, "age": 0.75, "weight": 1.0, "outcome": 0.5}
    assert DEFAULT_CLIP_WEIGHTS[Tier.L2] < DEFAULT_CLIP_WEIGHTS[Tier.L3] < DEFAULT_CLIP_WEIGHTS[Tier.L4] == 1.0


def test_partial_override_by_tier_or_name():
    assert tier_clip_weights(SCHEMA, {Tier.L2: 0.1})["diag"] == 0.1
    assert tier_clip_weights(SCHEMA, {"L3": 0.6})["age"] == 0.6
    assert tier_clip_weights(SCHEMA, {"L3": 0.6})["weight"] == 1.0


@pytest.mark.parametrize(
    ("weights", "fragment"),
    [
        ({"L5": 0.5}, "unknown tier 'L5'"),
        ({"L1": 0.1}, "L1 columns are never modelled"),
        ({"L2": 0.0}, "(0, 1]"),
        ({"L2": 1.5}, "(0, 1]"),
        ({"L2": math.nan}, "(0, 1]"),
        ({"L2": "0.5"}, "(0, 1]"),
        ({"L2": True}, "(0, 1]"),
        ({"L2": 0.9}, "must not grow with sensitivity"),  # above L3's 0.75
        ({"L4": 0.5}, "must not grow with sensitivity"),
    ],
)
def test_bad_weights_fail_closed(weights, fragment):
    with pytest.raises(ConfigError) as info:
        tier_clip_weights(SCHEMA, weights)
    assert fragment in str(info.value)


def test_clip_norms_split_the_row_norm():
    norms = per_column_clip_norms({"a": 0.5, "b": 1.0, "c": 1.0}, max_grad_norm=2.0)
    assert math.isclose(math.sqrt(sum(v * v for v in norms.values())), 2.0)
    assert norms["a"] < norms["b"] == norms["c"]
    assert per_column_clip_norms({}, max_grad_norm=1.0) == {}
    with pytest.raises(ConfigError):
        per_column_clip_norms({"a": 1.0}, max_grad_norm=0.0)
    with pytest.raises(ConfigError):
        per_column_clip_norms({"a": -1.0}, max_grad_norm=1.0)
