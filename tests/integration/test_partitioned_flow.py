"""The synthesize flow on a partitioned input: scrub, mask and the gate's counts per partition on Dask."""

from __future__ import annotations

import pytest

from dpsyn.config import SynthesizeConfig

pytestmark = pytest.mark.slow


def test_partitioned_flow_on_dask(prefect_harness, small_adult, tmp_path):
    import json

    import pandas as pd
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowFilter, FlowFilterName, FlowRunFilter, FlowRunFilterId

    from dpsyn.home import dpsyn_home
    from dpsyn.io import frame_sha256, read_table
    from dpsyn.masking import mask_table
    from dpsyn.pii import scrub_table
    from dpsyn.schema import load_schema
    from flows.synthesize import synthesize

    work_root = dpsyn_home() / "work"
    work_before = set(work_root.glob("*")) if work_root.exists() else set()
    out = tmp_path / "out"
    # the wiring is under test, not the synthesizer: a short fit and a gate that passes any table (it still
    # reads every partition's counts and the holdout)
    from loose_gate import LOOSE as loose

    cfg = SynthesizeConfig(data=small_adult, table_schema="adult", out=out, synthesizer_config={"task_epochs": 2},
                           privacy={"epsilon": 1.0, "accountant": "rdp"},
                           validation=loose, scale={"partition_rows": 700, "n_workers": 1}, register_model=False,
                           experiment="partitioned-test")
    result = synthesize(cfg)
    assert result["gate_passed"] is True
    schema = load_schema("adult")
    whole = mask_table(scrub_table(read_table(small_adult, schema), schema)[0], schema)[0]
    # the merged partitions are the unpartitioned training batch, row for row: the content hash and the exact
    # counts are in the data owner's copy of the batch record, never in the release
    kept = json.loads((dpsyn_home() / "operator" / result["mlflow_run_id"] / "training_batch.json").read_text())
    assert kept["content_sha256"] == frame_sha256(whole) != result["training_batch"]["batch_id"]
    assert kept["rows"] == len(whole) == 2000 and kept["partitions"] == 3
    assert kept["train_rows"] + kept["holdout_rows"] == 2000 and 200 < kept["holdout_rows"] < 600
    # the gate saw the training rows of every partition (its report shows their noisy count)
    n_real = json.loads((out / "validation_report.json").read_text())["n_real"]
    assert abs(n_real - kept["train_rows"]) < 300
    assert len(pd.read_csv(out / "synthetic.csv")) == result["training_batch"]["rows_estimate"]
    with get_client(sync_client=True) as c:
        runs = c.read_flow_runs(flow_filter=FlowFilter(name=FlowFilterName(any_=["prepare-partitions"])))
        run = max((r for r in runs if r.parameters.get("count") == 3), key=lambda r: r.created)
        tasks = c.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[run.id])))
    # the subflow's stored parameters hold the run's context and the number of partitions, never the partition
    # plan (its byte ranges and record counts stay in the work folder)
    assert set(run.parameters) == {"config", "ctx", "count", "statistics", "parallel"}
    assert "rows" not in str(run.parameters["ctx"])
    names = [t.name.rsplit("-", 1)[0] for t in tasks]
    assert names.count("scrub-partition") == names.count("mask-partition") == 3  # on Dask, in the subflow
    assert names.count("real-statistics-partition") == 3 and names.count("merge-partitions") == 1
    assert set(work_root.glob("*")) == work_before  # the private work folder is gone
