"""`dpsyn scrub` and `dpsyn scan` through the CLI, on a fresh Typer app with `register(app)`.

Running the demo pipeline in-process is too slow for this file; instead it builds small
MLflow-like and Prefect-like SQLite stores (and an artifact folder) holding the kind of clean
content those tools write (hex run ids, UUIDs, ISO timestamps, version strings, metrics, JSON),
checks that the scan finds nothing there, then plants identifiers and checks that each is found,
by entity and location, without the value ever being printed.
"""

from __future__ import annotations

import json
import pickle
import shutil
import sqlite3
import uuid
from pathlib import Path

import pandas as pd
import pytest
import typer
from typer.testing import CliRunner

from dpsyn_cli.pii_cmds import register

SCHEMA = """
schema_version: 1
name: patients
columns:
  - {name: patient_id, kind: identifier, tier: L1}
  - {name: full_name, kind: identifier, pii: person, tier: L1}
  - {name: email, kind: identifier, pii: email, tier: L1}
  - {name: ssn, kind: identifier, pii: ssn, tier: L1}
  - {name: phone, kind: identifier, pii: phone, tier: L1}
  - {name: age, kind: numeric, bounds: [0, 110], integer: true, tier: L3}
  - {name: sex, kind: categorical, domain: [F, M], tier: L3}
  - {name: note, kind: text, pii: free_text, tier: L2}
"""
ROWS = [
    ("P-100234", "Marisol Quintero", "marisol.q@example.org", "234-56-7891", "415-555-0132", 54, "F",
     "Marisol Quintero seen for follow-up; reach her at marisol.q@example.org or 415-555-0132."),
    ("P-100235", "Oskar Lindqvist", "oskar.lindqvist@example.net", "345-67-8912", "(212) 555-0199", 71, "M",
     "Pt Lindqvist reports dizziness; daughter called from 212.555.0199."),
    ("P-100236", "Ana Ruiz", "ana.ruiz@example.com", "456-78-9123", "646-555-0147", 33, "F",
     "Labs reviewed, HbA1c 7.2. Refill metformin 500 mg twice daily."),
]  # fmt: skip
SEEDED = [v for r in ROWS for v in r[:5]] + [t for r in ROWS for t in r[1].split()]

PLANTED_EMAIL = "jane.roe@example.org"
PLANTED_SSN = "567-89-1234"
PLANTED_PHONE = "(718) 555-0163"
PLANTED_NAME = "Adaeze Okafor"
PLANTED = [PLANTED_EMAIL, PLANTED_SSN, PLANTED_PHONE, PLANTED_NAME, "Adaeze", "Okafor", "555-0163"]


@pytest.fixture(scope="module")
def app() -> typer.Typer:
    a = typer.Typer()
    register(a)
    return a


@pytest.fixture()
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture()
def inputs(tmp_path) -> tuple[Path, Path]:
    data = tmp_path / "patients.csv"
    pd.DataFrame(ROWS, columns=["patient_id", "full_name", "email", "ssn", "phone", "age", "sex", "note"]).to_csv(
        data, index=False
    )
    schema = tmp_path / "patients.yaml"
    schema.write_text(SCHEMA, encoding="utf-8")
    return data, schema


def _no_value(text: str, values: list[str]) -> list[str]:
    low = text.lower()
    return [v for v in values if v.lower() in low]


# -- dpsyn scrub ------------------------------------------------------------------------------------


def test_scrub_writes_scrubbed_and_masked_table(app, runner, inputs, tmp_path):
    data, schema = inputs
    out = tmp_path / "out" / "clean.parquet"
    res = runner.invoke(app, ["scrub", "--data", str(data), "--schema", str(schema), "--out", str(out), "--json"])
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout)
    assert summary["output"] == str(out) and summary["rows"] == 3
    assert summary["scrub"]["dropped_columns"] == ["patient_id", "full_name", "email", "ssn", "phone"]
    assert summary["scrub"]["counts"]["note"]["PERSON"] >= 2
    df = pd.read_parquet(out)
    assert not {"patient_id", "full_name", "email", "ssn", "phone"} & set(df.columns)
    blob = df.to_csv()
    assert _no_value(blob, SEEDED) == [] and "555.0199" not in blob
    assert _no_value(res.output, SEEDED) == []
    # and the scan agrees: nothing left in the written table
    scan = runner.invoke(app, ["scan", str(out)])
    assert scan.exit_code == 0, scan.output
    assert "no PII found" in scan.output


def test_scrub_text_output(app, runner, inputs, tmp_path):
    data, schema = inputs
    out = tmp_path / "clean.csv"
    res = runner.invoke(app, ["scrub", "--data", str(data), "--schema", str(schema), "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert res.stdout.startswith(f"wrote {out}: 3 rows")  # the progress display is on stderr
    assert out.is_file() and _no_value(out.read_text(), SEEDED) == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--data", "{tmp}/missing.csv", "--schema", "{schema}", "--out", "{tmp}/o.csv"], "not found"),
        (["--data", "{data}", "--schema", "{tmp}/missing.yaml", "--out", "{tmp}/o.csv"], "schema file not found"),
        (["--data", "{data}", "--schema", "{schema}", "--out", "{tmp}/o.txt"], ".csv or .parquet"),
        (["--data", "{data}", "--schema", "{schema}", "--out", "{data}"], "output exists"),
        (["--data", "{data}", "--schema", "{schema}", "--out", "{tmp}/o.csv", "--config", "{tmp}/bad.yaml"],
         "invalid PII setting"),
        (["--data", "{data}", "--schema", "{schema}", "--out", "{tmp}/o.csv", "--config", "{tmp}/unknown.yaml"],
         "unknown PII operator"),
    ],
)  # fmt: skip
def test_scrub_bad_input_exits_2(app, runner, inputs, tmp_path, args, message):
    data, schema = inputs
    (tmp_path / "bad.yaml").write_text("score_threshold: 7\n")
    (tmp_path / "unknown.yaml").write_text("operators: {PERSON: shred}\n")
    before = sorted(p.name for p in tmp_path.iterdir())
    argv = ["scrub", *[a.format(tmp=tmp_path, data=data, schema=schema) for a in args], "--json"]
    res = runner.invoke(app, argv)
    assert res.exit_code == 2, res.output
    err = json.loads(res.stdout)
    assert message in err["error"] and err["exit_code"] == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing written


def test_scrub_residual_pii_exits_1_and_writes_nothing(app, runner, tmp_path):
    """A column the schema calls harmless but whose name and values say birth dates: fail closed."""
    data = tmp_path / "d.csv"
    data.write_text("birth_date,age\n1975-03-14,50\n1980-01-02,45\n")
    schema = tmp_path / "s.yaml"
    schema.write_text(
        "name: d\ncolumns:\n  - {name: birth_date, kind: datetime, bounds: ['1900-01-01', '2030-01-01']}\n"
        "  - {name: age, kind: numeric, bounds: [0, 110]}\n"
    )
    out = tmp_path / "o.csv"
    res = runner.invoke(app, ["scrub", "--data", str(data), "--schema", str(schema), "--out", str(out)])
    assert res.exit_code == 1
    assert "birth_date" in res.output and "DATE_OF_BIRTH" in res.output and "1975" not in res.output
    assert not out.exists()


# -- stores: clean and planted ----------------------------------------------------------------------


def _hex() -> str:
    return uuid.uuid4().hex


def _mlflow_like(path: Path) -> None:
    con = sqlite3.connect(path)
    con.executescript(
        """
        CREATE TABLE experiments (experiment_id INTEGER PRIMARY KEY, name TEXT, artifact_location TEXT,
                                  lifecycle_stage TEXT, creation_time INTEGER);
        CREATE TABLE runs (run_uuid TEXT PRIMARY KEY, name TEXT, source_type TEXT, source_name TEXT,
                           user_id TEXT, status TEXT, start_time INTEGER, end_time INTEGER,
                           artifact_uri TEXT, experiment_id INTEGER);
        CREATE TABLE params (key TEXT, value TEXT, run_uuid TEXT);
        CREATE TABLE tags (key TEXT, value TEXT, run_uuid TEXT);
        CREATE TABLE metrics (key TEXT, value REAL, timestamp INTEGER, step INTEGER, run_uuid TEXT);
        CREATE TABLE alembic_version (version_num TEXT);
        """
    )
    con.execute("INSERT INTO experiments VALUES (1, 'dpsyn', 'file:///home/u/.dpsyn/mlartifacts/1', 'active', 1764489600123)")
    con.execute("INSERT INTO alembic_version VALUES ('1b5f0d9ad7c1')")
    for i in range(20):
        rid = _hex()
        con.execute(
            "INSERT INTO runs VALUES (?, ?, 'LOCAL', ?, 'root', 'FINISHED', ?, ?, ?, 1)",
            (rid, f"dpsyn-adult_demo-{rid[:8]}", "/work/main/.venv/bin/dpsyn", 1764489600123 + i, 1764489660456 + i,
             f"mlflow-artifacts:/1/{rid}/artifacts"),
        )  # fmt: skip
        for k, v in [
            ("epsilon", "1.0"), ("delta", "1e-05"), ("accountant", "prv"), ("noise_multiplier", "1.3127594523429871"),
            ("schema_fingerprint", "9f2c4be0a1d35e77"), ("data", "/tmp/dpsyn-demo-input-k3j2/adult_demo.csv"),
            ("synthesizer_config", json.dumps({"epochs": 10, "batch_size": 256, "lr": 0.001})),
            ("training_batch", "sha256:" + _hex() + _hex()), ("rows", "2000"), ("seed", "1712345678"),
        ]:  # fmt: skip
            con.execute("INSERT INTO params VALUES (?, ?, ?)", (k, v, rid))
        for k, v in [
            ("mlflow.source.git.commit", "9b2fa5e" + _hex()[:33]), ("mlflow.user", "root"),
            ("mlflow.runName", f"dpsyn-{rid[:8]}"), ("dpsyn.version", "0.1.0"), ("torch", "2.13.0+cpu"),
            ("started", "2026-11-30T07:44:29.123456+00:00"), ("watermark_key_id", "wk-" + _hex()[:16]),
            ("mlflow.log-model.history", json.dumps([{"run_id": rid, "artifact_path": "model",
                                                      "utc_time_created": "2026-11-30 07:46:01.982731",
                                                      "model_uuid": str(uuid.uuid4()), "mlflow_version": "3.17.2"}])),
        ]:  # fmt: skip
            con.execute("INSERT INTO tags VALUES (?, ?, ?)", (k, v, rid))
        for k, v in [("epsilon_spent", 0.9989123456), ("tvd_max", 0.0734), ("ks_age", 0.041234567)]:
            con.execute("INSERT INTO metrics VALUES (?, ?, ?, 0, ?)", (k, v, 1764489660789, rid))
    con.commit()
    con.close()


def _prefect_like(path: Path) -> sqlite3.Connection:
    """A WAL-mode database like Prefect's; the returned connection keeps recent rows in the -wal file."""
    con = sqlite3.connect(path)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("PRAGMA wal_autocheckpoint=0")
    con.executescript(
        """
        CREATE TABLE flow_run (id CHAR(36) PRIMARY KEY, name VARCHAR, parameters JSON, state_type VARCHAR,
                               start_time TIMESTAMP, infrastructure_pid VARCHAR);
        CREATE TABLE task_run (id CHAR(36) PRIMARY KEY, name VARCHAR, task_key VARCHAR, cache_key VARCHAR,
                               flow_run_id CHAR(36));
        CREATE TABLE log (id CHAR(36) PRIMARY KEY, name VARCHAR, level INTEGER, message TEXT,
                          timestamp TIMESTAMP, flow_run_id CHAR(36));
        CREATE TABLE events (id CHAR(36) PRIMARY KEY, occurred TIMESTAMP, event VARCHAR, resource JSON,
                             payload JSON, recorded TIMESTAMP);
        CREATE TABLE block_schema (id CHAR(36) PRIMARY KEY, fields JSON, checksum VARCHAR);
        """
    )
    con.execute(
        "INSERT INTO block_schema VALUES (?, ?, ?)",
        (str(uuid.uuid4()), json.dumps({"properties": {"sender_email": {"examples": ["test-support@gmail.com"]}}}),
         "sha256:" + _hex() + _hex()),
    )  # fmt: skip
    for i, name in enumerate(["crimson-quokka", "bittersweet-moose", "tangerine-ibis", "amiable-marten"]):
        fid = str(uuid.uuid4())
        params = {"config": {"data": "/tmp/dpsyn-demo-input-k3j2/adult_demo.csv", "table_schema": "adult_demo",
                             "out": "/work/main/dpsyn-demo", "privacy": {"epsilon": 1.0, "delta": None},
                             "scrub": {"mode": "auto", "score_threshold": 0.4}}}  # fmt: skip
        con.execute(
            "INSERT INTO flow_run VALUES (?, ?, ?, 'COMPLETED', ?, ?)",
            (fid, name, json.dumps(params), f"2026-11-30 07:4{i}:29.482913", f"4{i}123:host"),
        )
        for t in ["make-workdir", "scrub", "mask", "fit-synthesizer", "sample", "watermark", "validate"]:
            con.execute(
                "INSERT INTO task_run VALUES (?, ?, ?, ?, ?)",
                (str(uuid.uuid4()), f"{t}-{_hex()[:3]}", f"stages.{t}-{_hex()[:8]}", None, fid),
            )
        for msg in [
            f"Beginning flow run '{name}' for flow 'synthesize'",
            "scrubbed 2000 rows: 5338 entities replaced or dropped",
            "Finished in state Completed()",
            f"View at http://127.0.0.1:4200/runs/flow-run/{fid}",
            "Opacus 1.6.0: noise multiplier 1.3127594523 for epsilon 1.0 at delta 1e-05",
        ]:
            con.execute(
                "INSERT INTO log VALUES (?, 'prefect.flow_runs', 20, ?, ?, ?)",
                (str(uuid.uuid4()), msg, "2026-11-30 07:45:01.123456", fid),
            )
        for ev in ["prefect.flow-run.Running", "prefect.flow-run.Completed"]:
            con.execute(
                "INSERT INTO events VALUES (?, ?, ?, ?, ?, ?)",
                (str(uuid.uuid4()), "2026-11-30 07:45:01.123456", ev,
                 json.dumps({"prefect.resource.id": f"prefect.flow-run.{fid}", "prefect.resource.name": name}),
                 json.dumps({"intended": {"from": "PENDING", "to": "RUNNING"}, "prefect.version": "3.9.1",
                             "validated_state": {"type": "RUNNING", "timestamp": "2026-11-30T07:45:01.123456Z"}}),
                 "2026-11-30 07:45:01.654321"),
            )  # fmt: skip
    con.commit()
    return con


def _artifacts(root: Path) -> None:
    run = root / "1" / _hex() / "artifacts"
    (run / "model").mkdir(parents=True)
    (run / "reports").mkdir()
    (run / "model" / "MLmodel").write_text(
        "artifact_path: model\nflavors:\n  python_function:\n    python_version: 3.11.7\n"
        f"mlflow_version: 3.17.2\nmodel_uuid: {uuid.uuid4().hex}\nutc_time_created: '2026-11-30 07:46:01.982731'\n"
    )
    (run / "model" / "requirements.txt").write_text("torch==2.13.0\nopacus==1.6.0\nnumpy==2.4.6\n")
    (run / "reports" / "validation_report.json").write_text(
        json.dumps({"gate_passed": True, "epsilon": 0.9989123456, "metrics": {"tvd:age": 0.0412345678},
                    "run_id": _hex(), "created": "2026-11-30T07:46:01Z"})  # fmt: skip
    )
    (run / "reports" / "scrub_report.json").write_text(
        json.dumps({"mode": "ner", "rows": 2000, "counts": {"note": {"PERSON": 2000, "EMAIL_ADDRESS": 662}}})
    )
    with (run / "model" / "model.pkl").open("wb") as fh:
        pickle.dump({"weights": [0.123456789, 1.5, -2.25] * 200, "columns": ["age", "sex"], "seed": 1712345678}, fh)
    (run / "model" / "model.pt").write_bytes(bytes(range(256)) * 64)
    (run / "epsilon_delta.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(200))


@pytest.fixture()
def stores(tmp_path):
    home = tmp_path / "home"
    (home / "prefect").mkdir(parents=True)
    _mlflow_like(home / "mlflow.db")
    _artifacts(home / "mlartifacts")
    con = _prefect_like(home / "prefect" / "prefect.db")
    yield home, con
    con.close()


def test_clean_stores_have_no_findings(app, runner, stores):
    home, _ = stores
    assert (home / "prefect" / "prefect.db-wal").stat().st_size > 0
    res = runner.invoke(app, ["scan", str(home), "--json"])
    rep = json.loads(res.stdout)
    assert res.exit_code == 0, [(f["entity"], f["location"]) for f in rep["findings"]]
    assert rep["clean"] and rep["total_findings"] == 0
    files = {Path(f).name for f in rep["files_scanned"]}
    assert {"mlflow.db", "prefect.db", "MLmodel", "model.pkl", "model.pt", "validation_report.json"} <= files
    skipped = {Path(s["file"]).name: s["reason"] for s in rep["skipped"]}
    assert skipped["epsilon_delta.png"] == "binary file"
    assert "prefect.db-wal" in skipped and any("block_schema" in s["file"] for s in rep["skipped"])


def test_planted_identifiers_are_found_by_entity_and_location(app, runner, stores):
    home, con = stores
    m = sqlite3.connect(home / "mlflow.db")
    run = m.execute("SELECT run_uuid FROM runs LIMIT 1").fetchone()[0]
    m.execute("INSERT INTO params VALUES ('contact', ?, ?)", (f"write to {PLANTED_EMAIL}", run))
    m.execute("INSERT INTO tags VALUES ('note', ?, ?)", (f"SSN {PLANTED_SSN} on file", run))
    m.execute("CREATE TABLE patients (id INTEGER PRIMARY KEY, full_name TEXT, ward TEXT)")
    m.execute("INSERT INTO patients VALUES (7, ?, 'B')", (PLANTED_NAME,))
    m.commit()
    m.close()
    # into Prefect's log, left in the WAL file (not checkpointed) by the open connection
    con.execute(
        "INSERT INTO log VALUES ('log-planted', 'prefect.task_runs', 20, ?, '2026-11-30 07:45:09.1', NULL)",
        (f"called back on {PLANTED_PHONE}",),
    )
    con.commit()
    art = next((home / "mlartifacts").rglob("model.pkl"))
    with art.open("wb") as fh:
        pickle.dump({"input_example": {"email": PLANTED_EMAIL}, "weights": [0.5] * 10}, fh)

    res = runner.invoke(app, ["scan", str(home), "--json"])
    assert res.exit_code == 1
    rep = json.loads(res.stdout)
    got = {(f["entity"], Path(f["file"]).name, f["location"].rsplit(".", 1)[0]) for f in rep["findings"]}
    assert ("EMAIL_ADDRESS", "mlflow.db", "params.value") in got
    assert ("US_SSN", "mlflow.db", "tags.value") in got
    assert ("PERSON", "mlflow.db", "patients.full_name") in got
    assert ("PHONE_NUMBER", "prefect.db", "log.message") in got
    assert any(e == "EMAIL_ADDRESS" and f == "model.pkl" for e, f, _ in got)
    assert {f["location"] for f in rep["findings"] if f["entity"] == "PERSON"} == {"patients.full_name.7"}
    assert rep["total_findings"] == 5 and rep["counts"] == {
        "EMAIL_ADDRESS": 2, "PERSON": 1, "PHONE_NUMBER": 1, "US_SSN": 1}  # fmt: skip
    assert _no_value(res.output, PLANTED) == []
    # text output: one line per finding, no value
    res = runner.invoke(app, ["scan", str(home / "mlflow.db"), str(home / "prefect")])
    assert res.exit_code == 1
    lines = [ln for ln in res.output.splitlines() if ln.count("\t") == 3]
    assert len(lines) == 4 and all(ln.split("\t")[0] in {"EMAIL_ADDRESS", "US_SSN", "PERSON", "PHONE_NUMBER"} for ln in lines)
    assert _no_value(res.output, PLANTED) == []


def test_scan_files_and_caps(app, runner, inputs, tmp_path):
    data, _ = inputs
    res = runner.invoke(app, ["scan", str(data), "--json"])
    assert res.exit_code == 1
    rep = json.loads(res.stdout)
    locs = {(f["entity"], f["location"]) for f in rep["findings"]}
    assert ("EMAIL_ADDRESS", "row 1, column email") in locs and ("US_SSN", "row 2, column ssn") in locs
    assert ("PERSON", "row 1, column full_name") in locs
    assert _no_value(res.output, SEEDED) == []
    # a cap is reported, and a clean scan that a cap stopped early is not "clean": exit 3
    log = tmp_path / "app.log"
    log.write_text("\n".join(["INFO step done"] * 50 + [f"WARN user {PLANTED_EMAIL} failed"]))
    res = runner.invoke(app, ["scan", str(log), "--max-rows", "10", "--json"])
    rep = json.loads(res.stdout)
    assert res.exit_code == 3 and rep["capped"] == [{"file": str(log), "what": "only the first 10 of 51 lines searched"}]
    res = runner.invoke(app, ["scan", str(log)])
    assert res.exit_code == 1 and f"EMAIL_ADDRESS\t{log}\tline 51\t" in res.output
    # bad input
    assert runner.invoke(app, ["scan", str(tmp_path / "nope")]).exit_code == 2
    assert runner.invoke(app, ["scan", str(log), "--max-rows", "0"]).exit_code == 2
    assert runner.invoke(app, ["scan", str(log), "--person-scope", "everyone"]).exit_code == 2


def test_scan_after_scrub_is_clean_but_raw_copy_is_not(app, runner, inputs, tmp_path):
    """Scan over every output of a scrub, next to a leaked copy of the input in an artifact folder."""
    data, schema = inputs
    outdir = tmp_path / "published"
    res = runner.invoke(app, ["scrub", "--data", str(data), "--schema", str(schema), "--out", str(outdir / "t.csv")])
    assert res.exit_code == 0, res.output
    assert runner.invoke(app, ["scan", str(outdir)]).exit_code == 0
    shutil.copy(data, outdir / "input_example.json.csv")
    assert runner.invoke(app, ["scan", str(outdir)]).exit_code == 1


@pytest.mark.slow  # a process of its own (CLI or run)
def test_scan_searches_whole_stores_by_default_and_a_cap_is_exit_3(app, runner, tmp_path):
    """Issue 24, finding 8: `dpsyn scan` said "No PII found" (exit 0) when the leaks lay past its 20,000-row cap."""
    db = tmp_path / "store.db"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
    con.executemany("INSERT INTO notes(body) VALUES (?)", [(f"batch {i} processed",) for i in range(25_000)])
    con.execute("INSERT INTO notes(body) VALUES (?)", ("contact jane.roe@example.org about the report",))
    con.commit()
    con.close()
    res = runner.invoke(app, ["scan", str(db), "--json"])
    assert res.exit_code == 1, res.output
    assert {f["entity"] for f in json.loads(res.stdout)["findings"]} == {"EMAIL_ADDRESS"}
    res = runner.invoke(app, ["scan", str(db), "--max-rows", "20000"])
    assert res.exit_code == 3, res.output
    assert "searched only in part" in res.output and "no PII found:" not in res.output
