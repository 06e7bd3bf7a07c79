"""Group privacy-fairness audit end to end: the CLI, the flow with its MLflow chart, dpdsyn as the audited model."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from dpsyn.audit.fairness_audit import run_fairness_audit
from dpsyn.config import FairnessAuditConfig
from dpsyn_cli.main import app

pytestmark = pytest.mark.slow

SMALL = dict(rounds=2, rows=240, epochs=3, accountant="rdp")


def test_cli_compares_dpsgd_and_dpsgd_s(adult_sample_path, tmp_path):
    plot = tmp_path / "gpr.png"
    res = CliRunner().invoke(app, ["audit", "fairness", "--data", str(adult_sample_path), "--schema", "adult",
                                   "--group", "sex", "--method", "both", "--rounds", "2", "--rows", "240",
                                   "--epsilon", "3", "--accountant", "rdp", "--plot", str(plot), "--json",
                                   "--group-clip", "rule=quantile", "--group-clip", "floor=0.05",
                                   "--group-clip", "size_share=0.2"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert [r["config"]["method"] for r in out] == ["dpsgd", "dpsgd-s"]
    for r in out:
        assert {g["group"] for g in r["risk"]["groups"]} == {"Female", "Male"}
        assert sum(g["rows"] for g in r["risk"]["groups"]) == 240
        assert r["risk"]["models_trained"] == 4
        assert 0 < r["epsilon_spent_max"] <= 3.0 and r["delta"] == pytest.approx(1 / 2400)
        assert 0.5 < r["utility"]["roc_auc"] <= 1.0
        gprs = [g["gpr"] for g in r["risk"]["groups"]]
        assert r["risk"]["delta"] == pytest.approx(max(gprs) - min(gprs))
    assert set(out[1]["group_clip"]["final_bounds"]) == {"Female", "Male"}
    # --group-clip reached the audit
    assert out[1]["config"]["group_clip"] == {"rule": "quantile", "floor": 0.05, "size_share": 0.2}
    settings = out[1]["group_clip"]["settings"]  # and the result records every setting in effect, defaults included
    assert (settings["rule"], settings["floor"], settings["rarity"]) == ("quantile", 0.05, 0.5)
    assert out[1]["group_clip"]["sizes_noise_std"] > 0  # the group-size histogram was released (inside ε ≤ 3)
    assert plot.read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize("opt, says", [("floor", "KEY=VALUE"), ("rule=bogus", "rule: Input should be"),
                                       ("speed=3", "speed: Extra inputs")])
def test_cli_bad_group_clip_setting_fails_before_training(adult_sample_path, opt, says):
    res = CliRunner().invoke(app, ["audit", "fairness", "--data", str(adult_sample_path), "--schema", "adult",
                                   "--group", "sex", "--method", "dpsgd-s", "--group-clip", opt])
    assert res.exit_code == 2 and says in res.output


def test_cli_bad_group_says_which_columns_exist(adult_sample_path):
    res = CliRunner().invoke(app, ["audit", "fairness", "--data", str(adult_sample_path), "--schema", "adult",
                                   "--group", "favourite_colour", "--rounds", "2", "--rows", "100"])
    assert res.exit_code == 2
    assert "favourite_colour" in res.output and "race" in res.output


def test_a_person_level_schema_is_refused_with_the_way_to_audit_per_row(tmp_path):
    """The audit's models are accounted per row: a schema with a privacy unit is refused before any read (exit 2),
    and the message's way out, a file that extends it with ``privacy_unit: null``, is accepted."""
    data = tmp_path / "d.csv"
    data.write_text("x\n")  # never read: refused on the schema
    res = CliRunner().invoke(app, ["audit", "fairness", "--data", str(data), "--schema", "diabetes130_patients",
                                   "--group", "gender", "--rounds", "2", "--rows", "100"])
    assert res.exit_code == 2 and "declares a person-level privacy unit" in res.output, res.output
    assert "extends: diabetes130_patients" in res.output and "privacy_unit: null" in res.output
    per_row = tmp_path / "rows.yaml"
    per_row.write_text("extends: diabetes130_patients\nname: d130_rows\nprivacy_unit: null\n")
    from dpsyn.schema import load_schema

    assert load_schema(per_row).privacy_unit is None


def test_dpdsyn_is_audited_by_its_log_likelihood(adult_sample_path):
    cfg = FairnessAuditConfig(data=adult_sample_path, table_schema="adult", group="race", model="dpdsyn",
                              method="dpsgd-s", epsilon=5.0, rounds=2, rows=200, accountant="rdp",
                              synthesizer_config={"epochs": 1, "task_epochs": 1, "marginal_share": 0.0,
                                                  "batch_size": 64, "task_batch_size": 64})
    res = run_fairness_audit(cfg)
    assert res.risk.models_trained == 4 and res.epsilon_spent_max <= 5.0
    assert res.group_clip is not None and res.group_clip["steps"] > 0
    assert {g.group for g in res.risk.groups} <= {"White", "Black", "Asian-Pac-Islander", "Amer-Indian-Eskimo",
                                                  "Other"}


def test_flow_logs_chart_and_metrics(prefect_harness, adult_sample_path):
    from flows.fairness import audit_fairness
    from tasks.tracking import client

    cfg = FairnessAuditConfig(data=adult_sample_path, table_schema="adult", group="sex", compare=True,
                              epsilon=3.0, experiment="dpsyn-fairness-test", **SMALL)
    out = audit_fairness(cfg)
    assert set(out["delta"]) == {"dpsgd", "dpsgd-s"}
    run = client().get_run(out["mlflow_run_id"])
    m = run.data.metrics
    assert m["dpsgd.delta"] == pytest.approx(out["delta"]["dpsgd"])
    assert {"dpsgd.gpr.Female", "dpsgd.gpr.Male", "dpsgd_s.gpr.Male", "dpsgd_s.accuracy"} <= set(m)
    names = {a.path for a in client().list_artifacts(run.info.run_id, "reports")}
    assert {"reports/fairness.png", "reports/fairness.json", "reports/fairness.md"} <= names
    assert "data" not in run.data.params  # file paths stay out of params
