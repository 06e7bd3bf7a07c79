"""The budget and lineage ledgers on a shared database: PostgreSQL (``DPSYN_TEST_PG_URL``), and the same race on
SQLite. No overspend when processes race for the last of a cap, a release in one transaction, a foreign database
refused, a bad URL answered in one line without its password.

The PostgreSQL tests need a server: ``eval "$(bash scripts/pg.sh start)"`` starts a throw-away one and exports
``DPSYN_TEST_PG_URL`` (``.ci/run`` does); any server will do whose role may create databases (each test gets a
database of its own, dropped after it). Without it they are skipped, except under CI (``$CI`` set), where they
fail: CI must not pass by skipping them.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from dpsyn.errors import ConfigError, InputError, LedgerConflictError
from dpsyn.lineage import Ledger, Release
from dpsyn.privacy.budget import BudgetLedger

REPO = Path(__file__).resolve().parents[2]
PG_ENV = "DPSYN_TEST_PG_URL"


# -- a fresh database per test -------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def pg_server() -> str:
    url = os.environ.get(PG_ENV)
    if not url:
        why = f"{PG_ENV} is not set (eval \"$(bash scripts/pg.sh start)\" starts a throw-away PostgreSQL)"
        if os.environ.get("CI"):
            pytest.fail(f"{why}; under CI the PostgreSQL ledger tests must run, not skip")
        pytest.skip(why)
    return url


def _admin(url: str):
    import psycopg
    from sqlalchemy.engine import make_url

    u = make_url(url).set(drivername="postgresql")
    return psycopg.connect(u.render_as_string(hide_password=False), autocommit=True)


@pytest.fixture
def pg_url(pg_server) -> str:
    """The URL of a new, empty database on the test server, dropped afterwards."""
    from sqlalchemy.engine import make_url

    name = f"dpsyn_{uuid.uuid4().hex[:12]}"
    with _admin(pg_server) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    yield make_url(pg_server).set(database=name).render_as_string(hide_password=False)
    with _admin(pg_server) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'state' / 'budget.db'}"


# -- the race: four processes, one cap ---------------------------------------------------------------------
_RACE = """
import sys, time
from pathlib import Path
import dpsyn.privacy.budget.ledger as L
import dpsyn.sqlite as S
from dpsyn.privacy.budget import BudgetLedger, PrivacyBudgetExceededError
url, run_id, go, unlocked = sys.argv[1:5]
totals = L._totals
def slow_totals(db, population):  # widen the window between reading the spent total and inserting
    out = totals(db, population)
    time.sleep(0.3)
    return out
L._totals = slow_totals
if unlocked == "1":  # the negative control: a plain BEGIN on PostgreSQL, no advisory lock; no DDL and no meta
    import contextlib  # upsert either (its row lock would serialize the writers by accident)
    @contextlib.contextmanager
    def plain(db, what):
        db.execute("BEGIN")
        try:
            yield
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")
    S._transaction = plain
    connect = L.connect
    L.connect = lambda location, **kw: connect(location, **{**kw, "schema": [], "version": None})
ledger = BudgetLedger(url)
print("ready", flush=True)
while not Path(go).exists():
    time.sleep(0.002)
try:
    ledger.reserve("race", run_id, epsilon=1.0, cap=2.5)
except PrivacyBudgetExceededError:
    sys.exit(3)
"""


def _race(url: str, tmp_path: Path, *, unlocked: bool = False) -> list[int]:
    go = tmp_path / f"go-{uuid.uuid4().hex[:6]}"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    procs = [subprocess.Popen([sys.executable, "-c", _RACE, url, f"run-{i}", str(go), "1" if unlocked else "0"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env) for i in range(4)]
    try:
        for p in procs:
            assert p.stdout.readline().strip() == "ready", p.stderr.read()
        go.touch()
        codes = [p.wait(timeout=60) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    errors = [p.stderr.read()[-2000:] for p in procs]
    assert set(codes) <= {0, 3}, errors
    return codes


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_four_processes_racing_for_the_last_of_the_budget_never_overspend(backend, tmp_path, request):
    """Four processes reserve ε=1 against a cap of 2.5, each pausing between reading the spent total and inserting
    its reservation: exactly two succeed (without the writers' lock all four would pass the check)."""
    url = _sqlite_url(tmp_path) if backend == "sqlite" else request.getfixturevalue("pg_url")
    codes = _race(url, tmp_path)
    assert sorted(codes) == [0, 0, 3, 3]
    [pop] = BudgetLedger(url).status()
    assert (pop.cap_epsilon, pop.reserved_epsilon, pop.remaining_epsilon) == (2.5, 2.0, 0.5)
    assert sorted(r.run_id for r in pop.runs) == sorted(f"run-{i}" for i, c in enumerate(codes) if c == 0)


def test_the_race_test_sees_an_overspend_without_the_lock(pg_url, tmp_path):
    """The negative control: the same race with a plain BEGIN (no advisory lock) lets every process through."""
    led = BudgetLedger(pg_url)
    led.set_cap("race", epsilon=2.5)  # the tables exist: a lock-free CREATE TABLE race aside
    # the population's unit fixed beforehand: a first run writes it to the population's row, and that row lock
    # alone would serialise the racers (the race is there for every later run)
    led.release(led.reserve("race", "fixes-the-unit", epsilon=0.0).run_id)
    codes = _race(pg_url, tmp_path, unlocked=True)
    assert codes.count(0) > 2, codes
    [pop] = BudgetLedger(pg_url).status()
    assert pop.reserved_epsilon > pop.cap_epsilon


# -- the budget ledger's protocol on PostgreSQL ------------------------------------------------------------
def test_budget_protocol_on_postgresql(pg_url):
    led = BudgetLedger(pg_url)
    assert led.status() == [] and led.get("r") is None  # an empty database reads as an empty ledger
    led.set_cap("adult", epsilon=3.0, delta=1e-5)
    r = led.reserve("adult", "run-1", epsilon=0.9731, delta=1e-6, note="mlflow abc")
    assert (r.reserved_epsilon, r.reserved_delta) == (0.9731, 1e-6)  # doubles, not 4-byte REALs
    assert led.reserve("adult", "run-1", epsilon=0.9731, delta=1e-6) == r  # idempotent
    with pytest.raises(LedgerConflictError, match="already holds a reservation"):
        led.reserve("adult", "run-1", epsilon=0.5, delta=1e-6)
    led.mark_read("run-1")
    c = led.commit("run-1", epsilon=0.9, delta=1e-6, note="done")
    assert (c.state, c.spent_epsilon, c.note) == ("committed", 0.9, "done")
    led.reserve("adult", "run-2", epsilon=2.0)
    assert led.release("run-2").state == "released"
    a = led.record_access("adult", "fairness-audit")
    assert a.access_id >= 1 and led.record_access("adult", "attack").access_id > a.access_id
    [pop] = led.status("adult")
    assert (pop.spent_epsilon, pop.reserved_epsilon) == (0.9, 0.0)
    assert pop.remaining_epsilon == pytest.approx(2.1)
    assert [x.run_id for x in pop.runs] == ["run-1", "run-2"] and [x.tool for x in pop.accesses] == [
        "fairness-audit", "attack"]
    led.set_cap("d130", epsilon=2.0, unit="patient_nbr")  # declared ahead of any run
    with pytest.raises(ConfigError, match="another population name"):
        led.set_cap("d130", epsilon=9.0, unit="")
    [d130] = led.status("d130")
    assert (d130.counts, d130.cap_epsilon) == ("per person (patient_nbr)", 2.0)  # the refused cap rolled back


def test_an_older_budget_ledger_gains_its_columns_and_tables_on_postgresql(pg_url):
    import psycopg

    with psycopg.connect(pg_url.replace("postgresql+psycopg://", "postgresql://", 1), autocommit=True) as conn:
        conn.execute("""
            CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
            CREATE TABLE populations (population TEXT PRIMARY KEY, cap_epsilon DOUBLE PRECISION,
                cap_delta DOUBLE PRECISION, created_at TEXT NOT NULL, cap_set_at TEXT);
            CREATE TABLE reservations (run_id TEXT PRIMARY KEY, population TEXT NOT NULL, purpose TEXT NOT NULL,
                state TEXT NOT NULL, reserved_epsilon DOUBLE PRECISION NOT NULL,
                reserved_delta DOUBLE PRECISION NOT NULL, spent_epsilon DOUBLE PRECISION,
                spent_delta DOUBLE PRECISION, read_at TEXT, note TEXT NOT NULL DEFAULT '',
                created_at TEXT NOT NULL, updated_at TEXT NOT NULL);
            INSERT INTO populations VALUES ('adult', NULL, NULL, '2026-01-01', NULL);
            INSERT INTO reservations VALUES ('old', 'adult', 'synthesize', 'reserved', 1.0, 0.0, NULL, NULL, NULL,
                                             '', '2026-01-01', '2026-01-01');
        """)
    led = BudgetLedger(pg_url)
    assert led.get("old").owner_state == "unknown" and led.status()[0].accesses == []  # read as is
    led.reserve("adult", "new", epsilon=0.5)
    assert led.get("new").owner_pid == os.getpid()
    assert led.close("old", by="owner").charged_epsilon == 1.0
    assert led.record_access("adult", "audit").access_id == 1


# -- the lineage ledger on PostgreSQL ----------------------------------------------------------------------
def _release(code_ts: str = "2024-05-01T12:00:00+00:00", batch_id: str = "ab" * 32, sha: str = "cd" * 32) -> Release:
    from dpsyn.watermark import WatermarkKey, record_code

    key = WatermarkKey.from_secret(bytes(range(40, 72)))
    run = "0123456789abcdef0123456789abcdef"
    manifest = {
        "mlflow_run_id": run, "schema": "adult", "synthesizer": "dpgen",
        "training_batch": {"batch_id": batch_id, "rows_estimate": 4000, "source": "adult.data"},
        "watermark": {"code": record_code(key, batch_id=batch_id, run_id=run, timestamp=code_ts),
                      "key_id": key.key_id, "timestamp": code_ts,
                      "statistical": {"strength": 0.005, "grid": 1000, "categorical": False}},
        "epsilon_spent": 0.9731, "delta": 1e-5, "accountant": "prv", "gate_passed": True,
    }
    validation = {"checks": [{"name": "ks.age", "passed": True}], "noise_std": 0.001, "n_real": 4000,
                  "n_synthetic": 4000}
    return Release.from_manifest(manifest, dataset_sha256=sha, path="/out/synthetic.csv", rows=4000,
                                 validation=validation)


def test_lineage_record_and_read_on_postgresql(pg_url):
    led = Ledger(pg_url)
    assert led.count() == 0 and led.get("0" * 16) is None and led.schemas() == []
    rel = _release()
    dataset_id = led.record(rel)
    assert led.record(_release()) == dataset_id  # recording twice is a no-op
    lin = led.get(rel.code)
    assert lin.release == rel and lin.release.privacy.epsilon == 0.9731
    assert [x.release.code for x in led.by_sha256(rel.dataset.sha256)] == [rel.code]
    assert [x.release.code for x in led.by_key(rel.key_id)] == [rel.code]
    assert len(led.by_run(rel.model.run_id)) == 1 and led.schemas() == ["adult"] and led.count() == 1
    led.set_model_version(rel.model.run_id, name="adult-dpgen", version="3")
    assert led.get(rel.code).release.model.version == "3"
    with pytest.raises(InputError, match="not in the lineage ledger"):
        led.set_model_version("nope", name="x", version="1")
    bad = _release(code_ts="2024-06-01T00:00:00+00:00", batch_id="99" * 32, sha="ef" * 32)
    with pytest.raises(LedgerConflictError, match="another training batch"):
        led.record(bad)  # the run was recorded with another batch: rolled back, new batch row included
    import psycopg

    with psycopg.connect(pg_url.replace("postgresql+psycopg://", "postgresql://", 1)) as conn:
        assert conn.execute("SELECT COUNT(*) FROM training_batches").fetchone()[0] == 1
    second = _release(code_ts="2024-05-02T00:00:00+00:00", sha="ef" * 32)
    second_id = led.record(second)
    assert led.withdraw(second_id) and not led.withdraw(second_id) and led.count() == 1
    with psycopg.connect(pg_url.replace("postgresql+psycopg://", "postgresql://", 1), autocommit=True) as conn:
        conn.execute("DROP TABLE batch_digests")  # as a ledger written before batch digests were recorded
    assert led.get(rel.code).release.batch.input_digest is None  # the read joins it: created (locked), empty


# -- refusals and errors -----------------------------------------------------------------------------------
def test_a_foreign_database_is_refused(pg_url):
    import psycopg

    with psycopg.connect(pg_url.replace("postgresql+psycopg://", "postgresql://", 1), autocommit=True) as conn:
        conn.execute("CREATE TABLE patients (id INTEGER)")
    for call in (lambda: BudgetLedger(pg_url).status(), lambda: BudgetLedger(pg_url).set_cap("a", epsilon=1.0),
                 lambda: Ledger(pg_url).count()):
        with pytest.raises(InputError, match="is not a dpsyn (budget|lineage) ledger.*URL of a"):
            call()
    with psycopg.connect(pg_url.replace("postgresql+psycopg://", "postgresql://", 1)) as conn:
        tables = [r[0] for r in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")]
    assert tables == ["patients"]  # nothing was written into it


def test_one_database_holds_one_kind_of_ledger(pg_url):
    """A budget ledger and a lineage ledger need a database each (or a schema each, by search_path)."""
    BudgetLedger(pg_url).set_cap("adult", epsilon=1.0)
    with pytest.raises(InputError, match="not a dpsyn lineage ledger"):
        Ledger(pg_url).count()


def _one_line(e: pytest.ExceptionInfo) -> str:
    msg = str(e.value)
    assert "\n" not in msg, msg
    return msg


def test_bad_urls_are_one_line_without_the_password():
    with pytest.raises(ConfigError) as e:
        BudgetLedger("postgresql://dpsyn:hunter2@db:notaport/budget")
    assert "hunter2" not in _one_line(e) and "cannot be parsed" in str(e.value)
    with pytest.raises(ConfigError) as e:
        Ledger("mysql://dpsyn:hunter2@db/lineage")
    assert "hunter2" not in _one_line(e)
    # nothing listens on this socket: a connection error, one line, password hidden
    url = "postgresql://dpsyn:hunter2@/budget?host=/nonexistent-dpsyn-socket-dir"
    with pytest.raises(InputError) as e:
        BudgetLedger(url).status()
    msg = _one_line(e)
    assert "hunter2" not in msg and "cannot be opened" in msg and "dpsyn:***@" in msg, msg


def test_hide_password_for_logs():
    from dpsyn.sqlite import hide_password

    assert hide_password("postgresql://dpsyn:hunter2@db/budget") == "postgresql://dpsyn:***@db/budget"
    assert hide_password("postgresql://dpsyn:hunter2@db:notaport/budget") == "postgresql://(unparseable)"
    for same in (None, "", "sqlite:////tmp/b.db", "/tmp/b.db", "postgresql://dpsyn@db/budget"):
        assert hide_password(same) == same


def test_a_missing_database_is_a_clear_error(pg_server):
    from sqlalchemy.engine import make_url

    url = make_url(pg_server).set(database="dpsyn_no_such_db").render_as_string(hide_password=False)
    with pytest.raises(InputError) as e:
        Ledger(url).record(_release())
    assert "cannot be opened" in _one_line(e) and "does not exist" in str(e.value)


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_placeholders_and_literals_mean_the_same_on_both_dialects(backend, tmp_path, request):
    from dpsyn.sqlite import Db, _engine, _sqlite_url, ledger_location

    url = _sqlite_url(None) if backend == "sqlite" else ledger_location(
        request.getfixturevalue("pg_url"), env="X", default_name="x", what="test")
    with _engine(url).connect() as conn:
        db = Db(conn)
        assert db.execute("SELECT '100%?' AS a").fetchone()["a"] == "100%?"  # no parameter in a literal
        row = db.execute("SELECT 'it''s 50%?' AS a, ? AS b, ? || '%' AS c", ("x", "y")).fetchone()
        assert (row["a"], row[1], tuple(row), row.keys()) == ("it's 50%?", "x", ("it's 50%?", "x", "y%"),
                                                              ["a", "b", "c"])
