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


@pytest.mark.slow  # a process of its own (CLI or run)
def test_the_reservation_and_the_run_use_one_delta_whatever_the_row_count(tmp_path):
    """Issue 24, finding 3: a table under 10 rows trained at δ = 0.1 (a δ rule on the row count) while the budget
    reserved δ = 0.01. δ is a rule on the schema's public population size only, so both are the same."""
    from dpsyn.pipeline import lifecycle
    from dpsyn.privacy.budget import BudgetLedger
    from dpsyn.schema import load_schema

    data = tmp_path / "tiny.data"
    data.write_text("39, State-gov, 77516, Bachelors, 13, Never-married, Adm-clerical, Not-in-family, White, Male, "
                    "2174, 0, 40, United-States, <=50K\n" * 5)
    url = f"sqlite:///{tmp_path / 'budget.db'}"
    cfg = SynthesizeConfig(data=data, table_schema="adult", out=tmp_path / "out",
                           budget={"population": "delta-rule", "ledger_url": url})
    ctx = lifecycle.begin(cfg)
    try:
        r = BudgetLedger(url).get(ctx.budget_key)
        assert r.reserved_delta == ctx.delta == cfg.privacy.resolved_delta(load_schema("adult").population_size)
        from dpsyn.pipeline.stages import _heartbeat

        _heartbeat(ctx)  # each stage says the run is alive
        assert BudgetLedger(url).get(ctx.budget_key).heartbeat_at >= r.heartbeat_at
    finally:
        BudgetLedger(url).release(ctx.budget_key)
        ctx.workdir.remove()
