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


@pytest.fixture(scope="module")
def d130_sample(tmp_path_factory):
    """The shipped diabetes130 sample (9,000 encounters, patient_nbr repeating) as a plain CSV."""
    import gzip
    import shutil
    from pathlib import Path

    out = tmp_path_factory.mktemp("d130") / "d130.csv"
    src = Path(__file__).resolve().parents[2] / "dpsyn" / "data" / "diabetes130_sample.csv.gz"
    with gzip.open(src, "rb") as f, open(out, "wb") as g:
        shutil.copyfileobj(f, g)
    return out


def test_a_person_level_schema_is_audited_per_person(d130_sample, monkeypatch):
    """With a privacy unit the audit's game is over persons: every model is trained on whole persons (at most
    k = 3 rows each, the run's bound), samples and clips persons (per-person DP-SGD-S, its steps and group-size
    histogram recorded per person) and the report counts persons."""
    import numpy as np
    import pandas as pd

    from dpsyn.audit import fairness_audit
    from dpsyn.synth import classifier
    from dpsyn.synth.dpsgd import steps_and_rate
    from dpsyn.synth.group_clip import SIZES_LABEL

    seen = []
    real_train = classifier.train_classifier

    def spy(codes, *a, units=None, accountant=None, **kw):
        seen.append((np.asarray(codes), None if units is None else np.asarray(units), kw["public_rows"]))
        net = real_train(codes, *a, units=units, accountant=accountant, **kw)
        seen[-1] += ({**accountant.state_dict(), **accountant.summary()},)
        return net

    monkeypatch.setattr(classifier, "train_classifier", spy)
    cfg = FairnessAuditConfig(data=d130_sample, table_schema="diabetes130_patients", group="gender", rounds=2,
                              rows=200, epochs=2, batch_size=32, epsilon=3.0, accountant="rdp",
                              method="dpsgd-s", group_clip={"size_share": 0.1})
    res = fairness_audit.run_fairness_audit(cfg)
    assert res.risk.unit == "person (patient_nbr)" and res.risk.audit_rows == 200
    assert sum(g.rows for g in res.risk.groups) == 200 and "audit persons" in res.risk.to_markdown()
    assert res.delta == pytest.approx(1 / 2000) and 0 < res.epsilon_spent_max <= 3.0
    assert len(seen) == 5  # 2 rounds × 2 models, then the utility model on every training person
    raw = pd.read_csv(d130_sample, usecols=["patient_nbr"])
    assert raw["patient_nbr"].duplicated().any()  # the sample has persons with several rows
    for codes, units, public, summary in seen:
        assert units is not None and len(units) == len(codes)
        assert public == len(np.unique(units)) == units.max() + 1  # sampled from the persons, dense codes
        assert np.bincount(units).max() <= 3  # the unit's bound
        assert summary["neighbouring"].startswith("add/remove one person (patient_nbr)")
        # recorded per person as run (σ, q of the persons' Poisson sample), not converted by group privacy
        # (σ/k, 1 − (1 − q)^k), as the row-level path would be charged under this unit
        ledger = {m["label"]: m for m in summary["ledger"]}
        assert set(ledger) == {"fairness.task", SIZES_LABEL}
        assert ledger["fairness.task"]["sample_rate"] == pytest.approx(steps_and_rate(public, batch_size=32,
                                                                                      epochs=2)[0])
    assert seen[-1][2] == 200  # the utility model: all 200 training persons
    assert max(s[2] for s in seen[:-1]) < 200  # each game model: the fixed persons plus about half the audited


def test_dpdsyn_is_audited_per_person_under_the_schemas_unit(d130_sample, monkeypatch):
    """dpdsyn bounds and clips by the schema's unit itself, on the person codes the audit's frame carries."""
    from dpsyn.audit import fairness_audit

    fitted = []
    original = fairness_audit._DPDSynTrainer.fit

    def fit(self, rows, seed):
        synth = original(self, rows, seed)
        fitted.append((synth.training_["clipping_unit"], synth.privacy_["neighbouring"]))
        return synth

    monkeypatch.setattr(fairness_audit._DPDSynTrainer, "fit", fit)
    cfg = FairnessAuditConfig(data=d130_sample, table_schema="diabetes130_patients", group="gender", model="dpdsyn",
                              rounds=2, rows=150, epsilon=5.0, accountant="rdp",
                              synthesizer_config={"epochs": 1, "task_epochs": 1, "marginal_share": 0.0,
                                                  "batch_size": 64, "task_batch_size": 64})
    res = fairness_audit.run_fairness_audit(cfg)
    assert res.risk.unit == "person (patient_nbr)" and sum(g.rows for g in res.risk.groups) == 150
    assert len(fitted) == 5 and all(u == "person" and rel.startswith("add/remove one person") for u, rel in fitted)
    assert res.epsilon_spent_max <= 5.0


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
