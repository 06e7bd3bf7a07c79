"""The release inventory (issue 19): every key a run writes is classified, and no published value holds the
input's exact row counts or a content hash of its rows.

A ``synthesize`` run, a drift run and a ``validate`` run on an input with an unusual number of rows (1,913); the
test enumerates the output folder, MLflow (params, metrics, tags, artifacts, the registry and the logged model),
Prefect (flow parameters, task and flow states, logs, artifacts) and the lineage and budget ledgers, classifies
each key with :mod:`dpsyn.privacy.inventory`, and searches every published text for the exact counts (total,
training, holdout) and for the content hashes of the input file and of its masked rows.
"""

from __future__ import annotations

import json

import pytest
from loose_gate import LOOSE

from dpsyn.privacy.inventory import INVENTORY, PUBLISHED_PLACES, unclassified

pytestmark = pytest.mark.slow

N_ROWS = 1913


@pytest.fixture(scope="module")
def input_file(tmp_path_factory, adult_sample_path):
    p = tmp_path_factory.mktemp("inventory") / "adult1913.data"
    p.write_text("".join(adult_sample_path.read_text().splitlines(keepends=True)[:N_ROWS]))
    return p


@pytest.fixture(scope="module")
def private_facts(input_file):
    """What must never be published: the exact counts and the content hashes of this input."""
    from dpsyn.io import file_sha256, frame_sha256, read_table
    from dpsyn.masking import mask_table
    from dpsyn.schema import load_schema

    schema = load_schema("adult")
    masked, _ = mask_table(read_table(input_file, schema), schema)
    assert len(masked) == N_ROWS
    return {"hashes": {"input sha256": file_sha256(input_file), "masked rows content hash": frame_sha256(masked)}}


@pytest.fixture(scope="module", autouse=True)
def released_estimates():
    """Every noisy count the runs of this module release (rounded as reports show them). A noisy count lands on the
    exact one by chance (at ε = 1 about 1 % of the time): such a number is then not searched for, since a published
    value equal to it may be the DP estimate. Anything else equal to an exact count is a leak."""
    import dpsyn.privacy as privacy

    seen: set[int] = set()
    real = privacy.release_counts

    def spy(true_counts, plan, **kw):
        counts = real(true_counts, plan, **kw)
        seen.update({counts.estimate(), *(counts.estimate(g) for g in counts.values)})
        return counts

    privacy.release_counts = spy
    yield seen
    privacy.release_counts = real


def _searchable(numbers: dict[str, int], estimates: set[int]) -> dict[str, int]:
    return {k: v for k, v in numbers.items() if v not in estimates}


@pytest.fixture(scope="module")
def synthesize_run(prefect_harness, input_file, tmp_path_factory):
    """One published run, with the exact train/holdout split sizes captured on the way (the coins are secret)."""
    import dpsyn.validation.utility as utility
    from flows.synthesize import synthesize

    sizes = {}
    real_split = utility.split_holdout

    def spy(df, share, *, noise, **kw):
        train, holdout = real_split(df, share, noise=noise, **kw)
        sizes["train"], sizes["holdout"] = len(train), len(holdout)
        return train, holdout

    tmp = tmp_path_factory.mktemp("inventory-run")
    ledger = f"sqlite:///{tmp / 'budget.db'}"
    lineage = f"sqlite:///{tmp / 'lineage.db'}"
    utility.split_holdout = spy
    try:
        from dpsyn.config import SynthesizeConfig

        cfg = SynthesizeConfig(data=input_file, table_schema="adult", out=tmp / "out", validation=LOOSE,
                               experiment="inventory", model_name="dpsyn-inventory", lineage_url=lineage,
                               budget={"population": "inventory-test", "ledger_url": ledger})
        result = synthesize(cfg)
    finally:
        utility.split_holdout = real_split
    assert sizes["train"] + sizes["holdout"] == N_ROWS
    return {"result": result, "out": tmp / "out", "budget": tmp / "budget.db", "lineage": tmp / "lineage.db",
            "sizes": sizes, "ledger_url": ledger}


def _flow_run_id(budget_db, purpose: str):
    from dpsyn.privacy.budget import BudgetLedger

    (pop,) = BudgetLedger(budget_db).status("inventory-test")
    return [r.run_id.split(":", 1)[1] for r in pop.runs if r.purpose == purpose]


def _collect_synthesize(run):
    from .inventory_helpers import (
        Collected,
        mlflow_registry,
        mlflow_run,
        output_folder,
        prefect_flow_run,
        sqlite_db,
    )

    c = Collected()
    result = run["result"]
    output_folder(c, run["out"])
    mlflow_run(c, result["mlflow_run_id"])
    mlflow_registry(c, result["model"]["name"], result["model"]["version"])
    (flow_run,) = _flow_run_id(run["budget"], "synthesize")
    prefect_flow_run(c, flow_run)
    sqlite_db(c, "lineage", run["lineage"])
    sqlite_db(c, "budget", run["budget"])
    return c


def _numbers(run):
    return {"rows": N_ROWS, "training rows": run["sizes"]["train"], "holdout rows": run["sizes"]["holdout"]}


def test_every_key_of_a_synthesize_run_is_classified(synthesize_run):
    c = _collect_synthesize(synthesize_run)
    import os
    if os.environ.get("DPSYN_DUMP_INVENTORY"):
        print("\n".join(f"{p} | {k}" for p, k in sorted(c.items)))
    assert len(c.items) > 150  # the collection found the run's records
    assert {p for p, _ in c.items} >= {"output.manifest", "mlflow.param", "mlflow.metric", "mlflow.tag",
                                       "mlflow.artifact", "mlflow.registry_tag", "prefect.state", "prefect.artifact",
                                       "lineage.training_batches", "budget.reservations"}
    bad = unclassified(c.items)
    assert bad == [], '\n'.join(map(str, bad))


def test_no_published_value_holds_an_exact_count_or_a_content_hash(synthesize_run, private_facts, released_estimates):
    from .inventory_helpers import leaks

    c = _collect_synthesize(synthesize_run)
    # the ledgers are the data owner's; the keyed digests in the lineage ledger are HMACs, not the hashes
    numbers = _searchable(_numbers(synthesize_run), released_estimates)
    assert numbers  # at most one of the three counts can coincide with its noisy estimate in practice
    assert leaks(c, numbers=numbers, hashes=private_facts["hashes"]) == []


def test_an_unclassified_mlflow_param_fails_the_inventory(synthesize_run):
    from tasks.tracking import client

    client().log_param(synthesize_run["result"]["mlflow_run_id"], "rows_read", str(N_ROWS))
    c = _collect_synthesize(synthesize_run)
    assert ("mlflow.param", "rows_read") in unclassified(c.items)


def test_a_drift_run_is_classified_and_leaks_nothing(synthesize_run, input_file, tmp_path, private_facts,
                                                     released_estimates):
    from dpsyn.config import DriftMonitorConfig, SynthesizeConfig
    from flows.drift import monitor_drift
    from tasks.tracking import client

    from .inventory_helpers import Collected, leaks, mlflow_run, prefect_flow_run, sqlite_db

    synth = SynthesizeConfig(data=input_file, table_schema="adult", out=tmp_path / "published", validation=LOOSE,
                             budget={"population": "inventory-test", "ledger_url": synthesize_run["ledger_url"]},
                             model_name="dpsyn-inventory")
    # the same file twice (no drift), at an ε where 1,913 rows make the check informative
    cfg = DriftMonitorConfig(data=input_file, reference=input_file, synthesize=synth, retrain=False,
                             experiment="inventory-drift", drift={"epsilon": 2.0})
    res = monitor_drift(cfg)
    assert res["retrained"] is False and "drifted" in res
    cl = client()
    (run,) = cl.search_runs([cl.get_experiment_by_name("inventory-drift").experiment_id])
    c = Collected()
    mlflow_run(c, run.info.run_id)
    (flow_run,) = _flow_run_id(synthesize_run["budget"], "drift-check")
    prefect_flow_run(c, flow_run)
    sqlite_db(c, "budget", synthesize_run["budget"])
    bad = unclassified(c.items)
    assert bad == [], '\n'.join(map(str, bad))
    assert leaks(c, numbers=_searchable({"rows": N_ROWS}, released_estimates), hashes=private_facts["hashes"]) == []


def test_a_validate_run_is_classified_and_leaks_nothing(synthesize_run, input_file, private_facts,
                                                        released_estimates):
    from typer.testing import CliRunner

    from dpsyn.privacy.inventory import flatten_keys
    from dpsyn_cli.main import app

    from .inventory_helpers import Collected, leaks, sqlite_db

    res = CliRunner().invoke(app, ["validate", "--real", str(input_file), "--synthetic",
                                   str(synthesize_run["out"] / "synthetic.csv"), "--schema", "adult", "--population",
                                   "inventory-test", "--ledger", synthesize_run["ledger_url"], "--epsilon", "1", "--json"])
    assert res.exit_code in (0, 1), res.output
    out = json.loads(res.stdout)
    c = Collected()
    c.add_doc("validate.output", out, where="dpsyn validate --json")
    sqlite_db(c, "budget", synthesize_run["budget"])
    assert unclassified(c.items) == [], flatten_keys(out)
    assert leaks(c, numbers=_searchable({"rows": N_ROWS}, released_estimates), hashes=private_facts["hashes"]) == []
    # and the read appears in the population's budget
    assert _flow_run_id(synthesize_run["budget"], "validate")


def test_the_inventory_itself_is_sound():
    """No entry lets a private value into a published place; every MLflow config param is a real config field."""
    from dpsyn.config import DatasetRunConfig, DriftMonitorConfig, SynthesizeConfig

    assert not [e for e in INVENTORY if e.kind == "private" and e.place in PUBLISHED_PLACES
                and e.pattern != "*noise_seed"]
    fields = (set(SynthesizeConfig.model_fields) | set(DriftMonitorConfig.model_fields)
              | set(DatasetRunConfig.model_fields) | {"synth", "training", "budget_shares"})
    params = {e.pattern.split(".")[0] for e in INVENTORY if e.place == "mlflow.param" and e.kind == "public"}
    assert params <= fields, params - fields
    assert set(SynthesizeConfig.model_fields) <= params, set(SynthesizeConfig.model_fields) - params


def test_the_owner_verifies_a_batch_with_the_key_and_nobody_without(synthesize_run, input_file, tmp_path):
    """The published batch id is random; the keyed digest in the lineage ledger lets the key's holder check a file."""
    from typer.testing import CliRunner

    from dpsyn_cli.main import app

    batch = json.loads((synthesize_run["out"] / "manifest.json").read_text())["training_batch"]["batch_id"]
    lineage = f"sqlite:///{synthesize_run['lineage']}"
    res = CliRunner().invoke(app, ["audit", "batch", "--data", str(input_file), "--batch-id", batch,
                                   "--ledger", lineage, "--json"])
    assert res.exit_code == 0 and json.loads(res.stdout)["verdict"] == "match", res.output
    other = tmp_path / "other.data"
    other.write_text(input_file.read_text().replace("Private", "Self-emp-inc", 1))  # one cell differs
    res = CliRunner().invoke(app, ["audit", "batch", "--data", str(other), "--batch-id", batch, "--ledger", lineage,
                                   "--json"])
    assert res.exit_code == 1 and json.loads(res.stdout)["verdict"] == "differs"
    res = CliRunner().invoke(app, ["audit", "batch", "--data", str(input_file), "--batch-id", batch, "--ledger",
                                   lineage, "--json"], env={"DPSYN_WATERMARK_KEY": "ff" * 32})
    assert res.exit_code == 1 and json.loads(res.stdout)["verdict"] == "no_key"
