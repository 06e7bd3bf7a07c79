"""A ledger URL's password never reaches MLflow params (a server URL in a run config is logged as a param)."""

from __future__ import annotations

from dpsyn.config import FairnessAuditConfig, SynthesizeConfig
from tasks.fairness import fairness_params
from tasks.tracking import run_params

URL = "postgresql://dpsyn:s3cretpw@db.example/ledger"


def test_run_params_hide_ledger_passwords(tmp_path):
    cfg = SynthesizeConfig(data=tmp_path / "x.csv", table_schema="adult", out=tmp_path / "out",
                           budget={"ledger_url": URL}, lineage_url=URL)
    params = run_params(cfg)
    assert "s3cretpw" not in repr(params)
    assert params["budget"]["ledger_url"] == "postgresql://dpsyn:***@db.example/ledger"
    assert params["lineage_url"] == "postgresql://dpsyn:***@db.example/ledger"


def test_fairness_params_hide_ledger_password(tmp_path):
    cfg = FairnessAuditConfig(data=tmp_path / "x.csv", table_schema="adult", group="sex", ledger_url=URL)
    params = fairness_params(cfg)
    assert "s3cretpw" not in repr(params)
    assert params["ledger_url"].endswith(":***@db.example/ledger")
