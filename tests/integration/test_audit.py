"""`dpsyn audit` (CliRunner on a fresh app), the audit tasks and the audit flow's shape."""

from __future__ import annotations

import json

import pandas as pd
import pytest
import typer
from typer.testing import CliRunner

from dpsyn.watermark import WM_COLUMN, WatermarkKey, apply_watermark, embed_statistical, load_key, record_code

BATCH, RUN, TS = "ab" * 32, "f" * 32, "2024-05-01T12:00:00+00:00"


@pytest.fixture(scope="module")
def app():
    from dpsyn_cli.audit_cmds import register

    a = typer.Typer()

    @a.callback()
    def main() -> None:
        """test app"""

    register(a)
    return a


@pytest.fixture
def release_dir(tmp_path, adult_sample, adult_schema):
    """A published-like output (the env key marks it) recorded in a fresh ledger; returns (out, ledger URL, release)."""
    from dpsyn.io import file_sha256
    from dpsyn.lineage import Release, record_release

    key = load_key()  # DPSYN_WATERMARK_KEY, set by tests/conftest.py
    code = record_code(key, batch_id=BATCH, run_id=RUN, timestamp=TS)
    out = tmp_path / "out"
    out.mkdir()
    df = apply_watermark(embed_statistical(adult_sample, adult_schema, key, random_state=0), code, key=key)
    df.to_csv(out / "synthetic.csv", index=False)
    manifest = {
        "mlflow_run_id": RUN, "schema": "adult", "synthesizer": "dpgen",
        "training_batch": {"batch_id": BATCH, "rows_estimate": 4000, "source": "adult.data"},
        "watermark": {"code": code, "key_id": key.key_id, "timestamp": TS},
        "epsilon_spent": 0.9731, "delta": 1e-5, "accountant": "prv", "gate_passed": True,
    }
    rel = Release.from_manifest(manifest, dataset_sha256=file_sha256(out / "synthetic.csv"),
                                path=out / "synthetic.csv", rows=len(df), validation={"checks": []})
    url = f"sqlite:///{tmp_path / 'lineage.db'}"
    record_release(rel, url=url)
    return out, url, rel


def test_trace_prints_model_batch_and_epsilon(app, release_dir):
    out, url, rel = release_dir
    res = CliRunner().invoke(app, ["audit", "trace", str(out / "synthetic.csv"), "--ledger", url])
    assert res.exit_code == 0, res.output
    assert f"code {rel.code} verified" in res.output
    assert RUN in res.output and BATCH[:16] in res.output and "ε=0.9731" in res.output
    res = CliRunner().invoke(app, ["audit", "trace", str(out / "synthetic.csv"), "--row", "3", "--json",
                                   "--ledger", url])
    data = json.loads(res.output)
    assert res.exit_code == 0 and data["traced"] and data["row"] == 3
    r = data["codes"][0]["lineage"]["release"]
    assert (r["model"]["run_id"], r["batch"]["batch_id"], r["privacy"]["epsilon"]) == (RUN, BATCH, 0.9731)


def test_verify_a_fragment_without_wm(app, release_dir, tmp_path):
    out, url, _ = release_dir
    frag = pd.read_csv(out / "synthetic.csv").drop(columns=[WM_COLUMN]).sample(300, random_state=1)
    p = tmp_path / "frag.csv"
    frag.to_csv(p, index=False)
    res = CliRunner().invoke(app, ["audit", "verify", str(p), "--ledger", url, "--json"])
    data = json.loads(res.output)
    assert res.exit_code == 0 and data["detected"] and data["method"] == "statistical"
    assert data["key_id"] == load_key().key_id and data["p_value"] < 1e-6
    res = CliRunner().invoke(app, ["audit", "verify", str(p), "--ledger", url])
    assert res.exit_code == 0 and "key id matched: " + load_key().key_id in res.output


def test_a_forged_code_on_foreign_rows_exits_1(app, release_dir, tmp_path, adult_sample):
    _, url, _ = release_dir
    forger = WatermarkKey.from_secret(b"F" * 32)
    p = tmp_path / "forged.csv"
    apply_watermark(adult_sample, record_code(forger, batch_id=BATCH, run_id=RUN, timestamp=TS),
                    key=forger).to_csv(p, index=False)
    res = CliRunner().invoke(app, ["audit", "verify", str(p), "--ledger", url])
    assert res.exit_code == 1 and "NOT DETECTED" in res.output and "not ours" in res.output
    res = CliRunner().invoke(app, ["audit", "trace", str(p), "--ledger", url, "--json"])
    assert res.exit_code == 1 and json.loads(res.output)["codes"][0]["status"] == "not_ours"


def test_real_rows_with_a_copied_code_are_reported_copied_and_exit_1(app, release_dir, tmp_path, adult_sample):
    """Issue 24, finding 1: a published mark pasted onto 1,000 real Adult rows made them "ours" (exit 0)."""
    out, url, rel = release_dir
    published = pd.read_csv(out / "synthetic.csv", dtype=str)
    forged = adult_sample.sample(1000, random_state=3).reset_index(drop=True)
    forged[WM_COLUMN] = published[WM_COLUMN].iloc[:1000].to_numpy()  # genuine marks, other rows
    p = tmp_path / "forged.csv"
    forged.to_csv(p, index=False)
    for cmd in ("verify", "trace"):
        res = CliRunner().invoke(app, ["audit", cmd, str(p), "--ledger", url])
        assert res.exit_code == 1, res.output
        assert "copied" in res.output and "content not verified" in res.output
    data = json.loads(CliRunner().invoke(app, ["audit", "verify", str(p), "--ledger", url, "--json"]).output)
    assert data["verdict"] == "copied" and not data["detected"] and data["codes"] == {rel.code: "content_mismatch"}
    assert data["rows_verified"][rel.code] < 10  # only rows that happen to equal a published row could verify


def test_a_genuine_file_verifies_by_digest_and_a_fragment_by_its_records(app, release_dir, tmp_path):
    out, url, _ = release_dir
    res = CliRunner().invoke(app, ["audit", "verify", str(out / "synthetic.csv"), "--ledger", url, "--json"])
    assert res.exit_code == 0 and json.loads(res.output)["verdict"] == "known_release"
    frag = pd.read_csv(out / "synthetic.csv").sample(200, random_state=2)
    frag = frag[list(reversed(frag.columns))]  # reordered columns, and Parquet instead of CSV
    p = tmp_path / "frag.parquet"
    frag.to_parquet(p, index=False)
    res = CliRunner().invoke(app, ["audit", "verify", str(p), "--ledger", url, "--json"])
    data = json.loads(res.output)
    assert res.exit_code == 0 and data["verdict"] == "records_verified", data
    # one edited value: that row no longer verifies, and the file is not certified
    frag.iloc[5, frag.columns.get_loc("age")] = int(frag["age"].iloc[5]) + 1
    frag.to_parquet(p, index=False)
    res = CliRunner().invoke(app, ["audit", "verify", str(p), "--ledger", url, "--json"])
    data = json.loads(res.output)
    assert res.exit_code == 1 and data["verdict"] == "copied" and list(data["rows_verified"].values()) == [199]


@pytest.mark.parametrize(
    "args",
    [["trace", "MISSING"], ["verify", "MISSING"], ["trace", "FILE", "--row", "-1"], ["verify", "FILE", "--alpha", "2"],
     ["verify", "FILE", "--schema", "no-such-schema"], ["trace", "FILE", "--ledger", "mysql://x/y"]],
    ids=["trace-missing", "verify-missing", "bad-row", "bad-alpha", "bad-schema", "bad-ledger"],
)
def test_bad_input_exits_2_with_one_line(app, release_dir, args):
    out, url, _ = release_dir
    args = [a.replace("MISSING", str(out / "nope.csv")).replace("FILE", str(out / "synthetic.csv")) for a in args]
    extra = [] if "--ledger" in args else ["--ledger", url]
    res = CliRunner().invoke(app, ["audit", *args, *extra])
    assert res.exit_code == 2, res.output
    assert len(res.output.strip().splitlines()) == 1 and res.output.startswith("error: ")


def test_register_adds_an_audit_group(app):
    res = CliRunner().invoke(app, ["audit", "--help"])
    assert res.exit_code == 0 and "trace" in res.output and "verify" in res.output


# -- tasks and flow ------------------------------------------------------------------------------


def test_mirror_lineage_sets_tags_through_the_given_callable(release_dir):
    from tasks.tracking import mirror_lineage

    _, url, rel = release_dir
    seen = []
    tags = mirror_lineage(RUN, rel.code, ledger_url=url, set_tag=lambda r, k, v: seen.append((r, k, v)))
    assert {k for _, k, _ in seen} == set(tags) and all(r == RUN for r, _, _ in seen)
    assert tags["dpsyn.lineage.training_batch"] == BATCH and tags["dpsyn.lineage.code"] == rel.code
    assert load_key().secret.hex() not in json.dumps(tags)


def test_audit_tasks_as_plain_functions(release_dir, tmp_path):
    from dpsyn.config import AuditConfig
    from dpsyn.lineage import AuditFailedError
    from tasks.audit import summarize_task, trace_file_task, verify_file_task

    out, url, rel = release_dir
    other = tmp_path / "other.csv"
    pd.DataFrame({"x": [1, 2, 3]}).to_csv(other, index=False)
    cfg = AuditConfig(paths=[out / "synthetic.csv", other], ledger_url=url)
    results = [verify_file_task.fn(str(p), cfg) for p in cfg.paths]
    assert results[0]["traced"] and results[0]["codes"] == {rel.code: "verified"}
    assert not results[1]["traced"]
    summary = summarize_task.fn(results, cfg)
    assert summary["traced"] == 1 and summary["not_traced"] == ["other.csv"]
    with pytest.raises(AuditFailedError):
        summarize_task.fn(results, cfg.model_copy(update={"fail_if_not_ours": True}))
    assert trace_file_task.fn(str(out / "synthetic.csv"), cfg, row=0)["method"] == "record_code"


def test_the_audit_flow_is_a_flow_with_one_config_parameter():
    from prefect import Flow

    from dpsyn.config import AuditConfig
    from flows.audit import audit

    assert isinstance(audit, Flow) and audit.name == "audit"
    assert list(audit.parameters.properties) == ["config"]
    with pytest.raises(ValueError):
        AuditConfig(paths=[])


@pytest.mark.slow
def test_the_audit_flow_runs_in_process(prefect_harness, release_dir):
    from dpsyn.config import AuditConfig
    from flows.audit import audit

    out, url, rel = release_dir
    summary = audit(AuditConfig(paths=[out / "synthetic.csv"], ledger_url=url))
    assert summary["traced"] == 1 and summary["results"][0]["codes"] == {rel.code: "verified"}


@pytest.mark.slow
def test_mirror_lineage_into_mlflow(release_dir):
    from tasks.tracking import client, mirror_lineage, start_run

    _, url, rel = release_dir
    run_id = start_run("dpsyn-audit-test", {"x": 1})
    mirror_lineage(run_id, rel, ledger_url=url)
    tags = client().get_run(run_id).data.tags
    assert tags["dpsyn.lineage.code"] == rel.code
    assert tags["dpsyn.lineage.epsilon"] == "0.973100"
    assert tags["dpsyn.lineage.dataset_sha256"] == rel.dataset.sha256
