"""dpsyn.lineage.ledger: schema, transactions, conflicts, no secrets, URLs."""

from __future__ import annotations

import sqlite3
from datetime import datetime

import pytest
from lineage_helpers import BATCH, KEY, RUN, VALIDATION, manifest

from dpsyn.errors import ConfigError, InputError
from dpsyn.lineage import (
    LEDGER_ENV,
    Ledger,
    LedgerConflictError,
    Release,
    ledger_path,
    lineage_tags,
    record_release,
    training_batch,
)

SHA = "cd" * 32


def _release(**kw) -> Release:
    return Release.from_manifest(manifest(**kw), dataset_sha256=SHA, path="/out/synthetic.csv", rows=4000,
                                 validation=VALIDATION)


def test_ledger_path(monkeypatch, tmp_path):
    monkeypatch.setenv("DPSYN_HOME", str(tmp_path))
    monkeypatch.delenv(LEDGER_ENV, raising=False)
    assert ledger_path() == tmp_path / "lineage.db"
    assert ledger_path(f"sqlite:///{tmp_path}/x.db") == tmp_path / "x.db"
    assert ledger_path(str(tmp_path / "y.db")) == tmp_path / "y.db"
    monkeypatch.setenv(LEDGER_ENV, f"sqlite:///{tmp_path}/env.db")
    assert ledger_path() == tmp_path / "env.db"
    for bad in ("mysql://host/db", "postgresql://host", "sqlite://", "sqlite:///"):
        with pytest.raises(ConfigError):
            ledger_path(bad)
    assert str(ledger_path("postgresql://u:pw@host/lin")) == "postgresql+psycopg://u:***@host/lin"


def test_record_and_read_back(ledger):
    rel = _release()
    dataset_id = ledger.record(rel)
    lin = ledger.get(rel.code)
    assert lin.release == rel
    assert lin.release.dataset.dataset_id == dataset_id
    r = lin.release
    assert (r.model.run_id, r.batch.batch_id, r.privacy.epsilon, r.privacy.accountant) == (RUN, BATCH, 0.9731, "prv")
    assert r.validation.passed is True and r.validation.checks == ["ks.age", "tvd.sex"]
    assert r.batch.window_start is None  # unknown windows stay unknown
    assert ledger.by_sha256(SHA)[0].release.code == rel.code
    assert ledger.by_key(KEY.key_id)[0].release.code == rel.code
    assert ledger.by_run(RUN)[0].release.code == rel.code
    assert ledger.schemas() == ["adult"] and ledger.count() == 1
    assert ledger.get("0" * 16) is None


def test_the_dpsyn_run_id_is_recorded_with_the_mlflow_run(ledger):
    # the manifest's run_id (the Prefect flow run's id under Prefect) travels to the lineage row, and an older
    # ledger without the table gains it on read
    rel = Release.from_manifest({**manifest(), "run_id": "0b8e7c2a-flow-run"}, dataset_sha256=SHA,
                                path="/out/synthetic.csv", rows=4000, validation=VALIDATION)
    assert rel.model.orchestrator_run_id == "0b8e7c2a-flow-run"
    ledger.record(rel)
    assert ledger.get(rel.code).release.model.orchestrator_run_id == "0b8e7c2a-flow-run"
    with sqlite3.connect(ledger.path) as db:
        db.execute("DROP TABLE run_orchestration")
    assert ledger.get(rel.code).release.model.orchestrator_run_id is None


def test_recording_twice_is_a_no_op(ledger):
    first = ledger.record(_release())
    assert ledger.record(_release()) == first  # a fresh dataset id, same release
    assert ledger.count() == 1


def test_one_run_may_publish_two_datasets(ledger):
    ledger.record(_release())
    ledger.record(_release(ts="2024-05-02T00:00:00+00:00"))
    assert len(ledger.by_run(RUN)) == 2


def test_conflicts_raise_and_roll_back(ledger):
    ledger.record(_release())
    other = _release()
    other = other.model_copy(update={"dataset": other.dataset.model_copy(update={"sha256": "ef" * 32})})
    with pytest.raises(LedgerConflictError, match="already recorded"):
        ledger.record(other)  # same code, different file
    bad = _release(ts="2024-06-01T00:00:00+00:00", batch_id="99" * 32)
    with pytest.raises(LedgerConflictError, match="another training batch"):
        ledger.record(bad)  # the run was recorded with another batch
    with sqlite3.connect(ledger.path) as db:  # the failed write left nothing behind, not even its new batch
        assert db.execute("SELECT COUNT(*) FROM training_batches").fetchone()[0] == 1
        assert db.execute("SELECT COUNT(*) FROM datasets").fetchone()[0] == 1


def test_an_older_ledger_gains_its_missing_tables_on_read(ledger):
    rel = _release()
    ledger.record(rel)
    with sqlite3.connect(ledger.path) as db:  # a ledger written before batch digests were recorded
        db.execute("DROP TABLE batch_digests")
    assert ledger.get(rel.code).release.batch.input_digest is None  # the query joins it: created, empty
    with sqlite3.connect(ledger.path) as db:
        assert db.execute("SELECT COUNT(*) FROM batch_digests").fetchone()[0] == 0


def test_set_model_version(ledger):
    rel = _release()
    ledger.record(rel)
    ledger.set_model_version(RUN, name="adult-dpgen", version="3")
    m = ledger.get(rel.code).release.model
    assert (m.name, m.version) == ("adult-dpgen", "3")
    with pytest.raises(InputError):
        ledger.set_model_version("nope", name="x", version="1")


def test_reading_a_missing_ledger_creates_nothing(tmp_path):
    led = Ledger(str(tmp_path / "none.db"))
    assert led.get("0" * 16) is None and led.schemas() == [] and led.count() == 0
    assert not (tmp_path / "none.db").exists()


def test_a_corrupt_ledger_is_a_clear_error(tmp_path):
    p = tmp_path / "bad.db"
    p.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(InputError, match="cannot be (opened|used)"):
        Ledger(str(p)).get("0" * 16)


def test_a_database_that_is_not_a_lineage_ledger_is_refused(tmp_path):
    """Both ledgers share dpsyn.sqlite: a SQLite file holding other tables is never written into."""
    import sqlite3

    p = tmp_path / "other.db"
    con = sqlite3.connect(p)
    con.execute("CREATE TABLE patients (id INTEGER)")
    con.commit()
    con.close()
    with pytest.raises(InputError, match="not a dpsyn lineage ledger"):
        Ledger(str(p)).get("0" * 16)
    with pytest.raises(InputError, match="not a dpsyn lineage ledger"):
        Ledger(str(p)).set_model_version("r", name="m", version="1")
    con = sqlite3.connect(p)
    assert [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")] == ["patients"]


def test_the_ledger_holds_no_secret(ledger):
    ledger.record(_release())
    blob = ledger.path.read_bytes()
    assert KEY.secret not in blob and KEY.secret.hex().encode() not in blob
    assert KEY.key_id.encode() in blob


def test_record_release_uses_the_default_ledger(monkeypatch, tmp_path):
    monkeypatch.setenv("DPSYN_HOME", str(tmp_path))
    monkeypatch.delenv(LEDGER_ENV, raising=False)
    record_release(_release())
    assert (tmp_path / "lineage.db").is_file()


def test_training_batch_id_is_random_and_its_digest_keyed(adult_sample):
    """Issue 19, finding 1: the batch id was frame_sha256 of the private rows, published in the manifest, MLflow
    and the registry: a deterministic function of the rows (ε = ∞) that anyone could test guesses against."""
    from dpsyn.io import frame_sha256
    from dpsyn.watermark import WatermarkKey, batch_digest

    key, other = WatermarkKey.from_secret(b"k" * 32), WatermarkKey.from_secret(b"o" * 32)
    a = training_batch(adult_sample, source="/data/private/adult.data", rows=4012, key=key,
                       window_start=datetime(1994, 1, 1), window_end=None)
    b = training_batch(adult_sample, source="adult.data", rows=4012, key=key)
    plain = frame_sha256(adult_sample)
    assert a.batch_id != b.batch_id and plain not in (a.batch_id, b.batch_id)  # random, not the content hash
    assert a.rows == 4012 and a.source == "adult.data"  # the count given (a noisy one), not len(df)
    assert a.content_digest == b.content_digest == batch_digest(key, plain, kind="content") != plain
    assert training_batch(adult_sample, source="x", rows=1, key=other).content_digest != a.content_digest
    assert training_batch(adult_sample, source="x", rows=1).content_digest is None


def test_lineage_tags_are_ids_and_numbers_only():
    rel = _release()
    tags = lineage_tags(rel, ledger="sqlite:////tmp/l.db")
    assert tags["dpsyn.lineage.code"] == rel.code
    assert tags["dpsyn.lineage.training_batch"] == BATCH
    assert tags["dpsyn.lineage.epsilon"] == "0.973100"
    assert tags["dpsyn.lineage.ledger"] == "/tmp/l.db"
    assert "dpsyn.lineage.model_version" not in tags  # unknown until registered
    assert all(isinstance(v, str) and len(v) < 500 for v in tags.values())
