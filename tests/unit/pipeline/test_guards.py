"""What a synthesize run refuses before it reads anything (issue 19, findings 7 and 8)."""

from __future__ import annotations

import pytest

from dpsyn.config import SynthesizeConfig
from dpsyn.errors import ConfigError
from dpsyn.pipeline.lifecycle import check_guarantee


def _cfg(**kw):
    return SynthesizeConfig(data="x.csv", table_schema="adult", out="out", **kw)


def test_a_seeded_noise_source_cannot_publish():
    with pytest.raises(ConfigError, match="secure noise source"):
        check_guarantee(_cfg(privacy={"secure_rng": False, "noise_seed": 3}))


def test_k_anonymity_needs_an_explicit_flag_and_then_states_no_dp_guarantee():
    with pytest.raises(ConfigError, match="accept_non_dp_masking"):
        check_guarantee(_cfg(mask={"k": 5}))
    g = check_guarantee(_cfg(mask={"k": 5}, accept_non_dp_masking=True))
    assert g["differential_privacy"] is False and "k-anonymity" in g["statement"]
    assert check_guarantee(_cfg())["differential_privacy"] is True


def test_mlflow_params_exclude_the_noise_seed():
    from tasks.tracking import _flatten, run_params

    cfg = _cfg(privacy={"noise_seed": 123456789})
    params = _flatten(run_params(cfg))
    assert "privacy.noise_seed" not in params and "123456789" not in params.values()
