"""dpsyn.privacy.budget: the lifetime privacy-budget ledger (reserve → mark_read → commit / release) and `dpsyn budget`."""

from __future__ import annotations

import json
import math
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dpsyn.errors import ConfigError, InputError, LedgerConflictError, PrivacyBudgetExceededError
from dpsyn.privacy.budget import BUDGET_ENV, BudgetLedger, budget_path

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture
def url(tmp_path) -> str:
    return f"sqlite:///{tmp_path / 'state' / 'budget.db'}"


@pytest.fixture
def ledger(url) -> BudgetLedger:
    return BudgetLedger(url)


def _child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


# -- paths ---------------------------------------------------------------------------------------
def test_budget_path(monkeypatch, tmp_path):
    monkeypatch.setenv("DPSYN_HOME", str(tmp_path))
    monkeypatch.delenv(BUDGET_ENV, raising=False)
    assert budget_path() == tmp_path / "budget.db"
    assert BudgetLedger().path == tmp_path / "budget.db"
    assert budget_path(f"sqlite:///{tmp_path}/x.db") == tmp_path / "x.db"
    assert budget_path(str(tmp_path / "y.db")) == tmp_path / "y.db"
    assert budget_path(tmp_path / "z.db") == tmp_path / "z.db"
    monkeypatch.setenv(BUDGET_ENV, f"sqlite:///{tmp_path}/env.db")
    assert budget_path() == tmp_path / "env.db"
    for bad in ("mysql://host/db", "postgresql+psycopg2://host/db", "postgresql://host", "sqlite://", "sqlite:///"):
        with pytest.raises(ConfigError):
            budget_path(bad)
    pg = budget_path("postgresql://dpsyn:s3cret@db.example:5433/budget")  # parsed only: nothing is reached
    assert pg.drivername == "postgresql+psycopg" and pg.database == "budget" and pg.port == 5433
    assert str(pg) == "postgresql+psycopg://dpsyn:***@db.example:5433/budget"
    assert "s3cret" not in repr(BudgetLedger("postgres://dpsyn:s3cret@db.example/budget"))


def test_reads_do_not_create_the_ledger_and_foreign_files_are_refused(tmp_path):
    led = BudgetLedger(tmp_path / "none" / "budget.db")
    assert led.status() == [] and led.get("r") is None
    assert not led.path.exists() and not led.path.parent.exists()
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as db:
        db.execute("CREATE TABLE t (x)")
    with pytest.raises(InputError, match="not a dpsyn budget ledger"):
        BudgetLedger(other).status()
    text = tmp_path / "notes.txt"
    text.write_text("not a database, not at all, no\n" * 20)
    with pytest.raises(InputError, match="cannot be"):
        BudgetLedger(text).status()


# -- the life of a run ---------------------------------------------------------------------------
def test_reserve_commit_and_release(ledger):
    r = ledger.reserve("adult", "run-1", epsilon=1.0, delta=1e-6, cap=3.0, note="mlflow abc")
    assert (r.state, r.reserved_epsilon, r.reserved_delta, r.spent_epsilon, r.data_read) == (
        "reserved", 1.0, 1e-6, None, False)
    assert (r.purpose, r.note) == ("synthesize", "mlflow abc")
    [pop] = ledger.status()
    assert (pop.cap_epsilon, pop.reserved_epsilon, pop.spent_epsilon, pop.remaining_epsilon) == (3.0, 1.0, 0.0, 2.0)

    ledger.mark_read("run-1")
    assert ledger.get("run-1").data_read
    c = ledger.commit("run-1", epsilon=0.8, delta=1e-6, note="mlflow abc; prv")
    assert (c.state, c.spent_epsilon, c.spent_delta, c.charged_epsilon, c.note) == (
        "committed", 0.8, 1e-6, 0.8, "mlflow abc; prv")
    [pop] = ledger.status("adult")
    assert (pop.spent_epsilon, pop.reserved_epsilon) == (0.8, 0.0)
    assert pop.remaining_epsilon == pytest.approx(2.2)

    ledger.reserve("adult", "run-2", epsilon=2.0, purpose="drift-check")
    assert ledger.status("adult")[0].remaining_epsilon == pytest.approx(0.2)
    rel = ledger.release("run-2")  # never read data: the reservation is given back
    assert (rel.state, rel.charged_epsilon) == ("released", 0.0)
    [pop] = ledger.status("adult")
    assert pop.remaining_epsilon == pytest.approx(2.2) and [r.run_id for r in pop.runs] == ["run-1", "run-2"]


def test_release_after_mark_read_raises_and_the_reservation_stays_charged(ledger):
    ledger.reserve("adult", "run-1", epsilon=1.0, cap=2.0)
    ledger.mark_read("run-1")
    with pytest.raises(LedgerConflictError, match="read private data.*cannot be released.*commit"):
        ledger.release("run-1")
    r = ledger.get("run-1")
    assert r.state == "reserved" and r.charged_epsilon == 1.0
    assert ledger.status("adult")[0].remaining_epsilon == 1.0
    assert ledger.commit("run-1", epsilon=1.0).state == "committed"
    with pytest.raises(LedgerConflictError, match="cannot be released"):
        ledger.release("run-1")


def test_commit_above_the_reservation_raises(ledger):
    ledger.reserve("adult", "run-1", epsilon=1.0, delta=1e-6)
    with pytest.raises(PrivacyBudgetExceededError, match=r"spent ε=1\.5 but reserved only ε=1"):
        ledger.commit("run-1", epsilon=1.5, delta=1e-6)
    with pytest.raises(PrivacyBudgetExceededError, match="δ"):
        ledger.commit("run-1", epsilon=1.0, delta=1e-5)
    r = ledger.get("run-1")
    assert r.state == "reserved" and r.charged_epsilon == 1.0  # still charged in full
    assert ledger.commit("run-1", epsilon=1.0 + 1e-12, delta=1e-6).state == "committed"  # floating-point slack only


def test_over_cap_reserve_names_every_number(ledger):
    ledger.set_cap("adult", epsilon=2.5)
    ledger.reserve("adult", "a", epsilon=1.0)
    ledger.commit("a", epsilon=0.6)
    ledger.reserve("adult", "b", epsilon=1.0)
    with pytest.raises(PrivacyBudgetExceededError) as e:
        ledger.reserve("adult", "c", epsilon=1.0)
    msg = str(e.value)
    for part in ("population 'adult'", "run c asks for ε=1", "cap is ε=2.5", "0.6 spent", "1 reserved",
                 "0.9 remains", "set-cap --population adult", "wait for open runs", "smaller ε"):
        assert part in msg, (part, msg)
    assert ledger.get("c") is None and ledger.status("adult")[0].reserved_epsilon == 1.0
    assert ledger.reserve("adult", "c", epsilon=0.9).state == "reserved"  # exactly what remains fits


def test_delta_cap_and_float_slack(ledger):
    ledger.set_cap("p", epsilon=0.3, delta=2e-6)
    ledger.reserve("p", "a", epsilon=0.1, delta=1e-6)
    ledger.reserve("p", "b", epsilon=0.2, delta=1e-6)  # 0.1 + 0.2 > 0.3 in floating point, but within the slack
    ledger.set_cap("q", epsilon=None, delta=1e-6)
    ledger.reserve("q", "c", epsilon=100.0, delta=1e-6)
    with pytest.raises(PrivacyBudgetExceededError, match="δ"):
        ledger.reserve("q", "d", epsilon=1.0, delta=1e-7)
    ledger.reserve("q", "e", epsilon=1.0, delta=0.0)


# -- idempotency ---------------------------------------------------------------------------------
def test_reserve_and_commit_are_idempotent(ledger):
    first = ledger.reserve("adult", "run-1", epsilon=1.0, delta=1e-6, cap=2.0)
    again = ledger.reserve("adult", "run-1", epsilon=1.0, delta=1e-6, cap=2.0)
    assert again == first
    assert ledger.status("adult")[0].reserved_epsilon == 1.0  # charged once
    ledger.reserve("adult", "run-2", epsilon=1.0, delta=1e-6)  # the whole cap: a double charge would have failed here
    with pytest.raises(LedgerConflictError, match="already holds a reservation"):
        ledger.reserve("adult", "run-1", epsilon=0.5, delta=1e-6)
    with pytest.raises(LedgerConflictError, match="already holds a reservation"):
        ledger.reserve("census", "run-1", epsilon=1.0, delta=1e-6)

    ledger.mark_read("run-1")
    ledger.mark_read("run-1")
    c1 = ledger.commit("run-1", epsilon=0.7, delta=1e-6)
    c2 = ledger.commit("run-1", epsilon=0.7, delta=1e-6)
    assert c1 == c2 and ledger.status("adult")[0].spent_epsilon == 0.7
    assert ledger.reserve("adult", "run-1", epsilon=1.0, delta=1e-6).state == "committed"  # a late retry changes nothing
    with pytest.raises(LedgerConflictError, match="already committed"):
        ledger.commit("run-1", epsilon=0.8, delta=1e-6)

    ledger.release("run-2")
    assert ledger.release("run-2").state == "released"
    with pytest.raises(LedgerConflictError, match="released"):
        ledger.commit("run-2", epsilon=0.1)
    with pytest.raises(LedgerConflictError, match="released"):
        ledger.mark_read("run-2")
    reopened = ledger.reserve("adult", "run-2", epsilon=1.0, delta=1e-6)  # e.g. a retried task: checked against the cap again
    assert reopened.state == "reserved" and not reopened.data_read
    with pytest.raises(InputError, match="no privacy-budget reservation"):
        ledger.commit("nope", epsilon=0.1)


def test_status_totals_are_the_sum_of_the_runs(ledger):
    spends = [0.1, 0.2, 0.3, 0.15, 0.05]
    for i, eps in enumerate(spends):
        ledger.reserve("adult", f"c{i}", epsilon=eps + 0.1, delta=1e-7)
        ledger.mark_read(f"c{i}")
        ledger.commit(f"c{i}", epsilon=eps, delta=1e-7)
    ledger.reserve("adult", "open", epsilon=0.4, delta=2e-7)
    ledger.reserve("adult", "gone", epsilon=5.0)
    ledger.release("gone")
    ledger.reserve("census", "other", epsilon=9.0)
    [pop] = ledger.status("adult")
    assert pop.spent_epsilon == pytest.approx(math.fsum(spends))
    assert pop.spent_epsilon == pytest.approx(math.fsum(r.spent_epsilon for r in pop.runs if r.state == "committed"))
    assert pop.reserved_epsilon == 0.4 and pop.reserved_delta == 2e-7
    assert pop.spent_delta == pytest.approx(5e-7)
    assert math.fsum(r.charged_epsilon for r in pop.runs) == pytest.approx(pop.spent_epsilon + pop.reserved_epsilon)
    assert pop.cap_epsilon is None and pop.remaining_epsilon is None  # no cap: unlimited, but recorded
    assert [p.population for p in ledger.status()] == ["adult", "census"]
    assert ledger.status("nobody") == []


def test_caps_from_the_config_set_and_tighten_but_never_raise(ledger):
    ledger.reserve("adult", "a", epsilon=1.0)  # no cap yet
    assert ledger.status("adult")[0].cap_epsilon is None
    ledger.reserve("adult", "b", epsilon=1.0, cap=5.0)  # sets it
    assert ledger.status("adult")[0].cap_epsilon == 5.0
    ledger.reserve("adult", "c", epsilon=1.0, cap=4.0)  # tightens it
    assert ledger.status("adult")[0].cap_epsilon == 4.0
    with pytest.raises(ConfigError, match="above the recorded lifetime cap.*set-cap"):
        ledger.reserve("adult", "d", epsilon=0.5, cap=6.0)
    assert ledger.get("d") is None
    with pytest.raises(PrivacyBudgetExceededError):
        ledger.reserve("adult", "d", epsilon=1.5, cap=4.0)
    ledger.set_cap("adult", epsilon=6.0)  # raising is explicit
    assert ledger.reserve("adult", "d", epsilon=1.5, cap=6.0).state == "reserved"
    ledger.set_cap("adult", epsilon=1.0)  # below what is charged: nothing more fits
    assert ledger.status("adult")[0].remaining_epsilon == pytest.approx(-3.5)
    with pytest.raises(PrivacyBudgetExceededError, match="0 remains"):
        ledger.reserve("adult", "e", epsilon=0.01)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -1.0, "1", True])
def test_invalid_numbers_are_refused(ledger, bad):
    with pytest.raises(InputError):
        ledger.reserve("adult", "r", epsilon=bad)
    with pytest.raises(InputError):
        ledger.set_cap("adult", epsilon=bad)
    assert ledger.status() == []


def test_invalid_names_and_delta_are_refused(ledger):
    for args, kw in ((("", "r"), {"epsilon": 1.0}), (("adult", " "), {"epsilon": 1.0}),
                     (("adult", "r"), {"epsilon": 1.0, "delta": 1.5})):
        with pytest.raises(InputError):
            ledger.reserve(*args, **kw)
    with pytest.raises(TypeError):  # ε and δ are keyword-only: two floats in a row cannot be swapped by accident
        ledger.reserve("adult", "r", 1.0, 1e-6)
    with pytest.raises(InputError):
        ledger.set_cap("adult", epsilon=1.0, delta=2.0)


# -- processes -----------------------------------------------------------------------------------
# The four-process race for the last of a cap: tests/integration/test_ledger_postgres.py (SQLite and PostgreSQL,
# with a pause between the check and the insert, and a lock-free negative control).


_TRAIN = """
import sys, time
from dpsyn.privacy.budget import BudgetLedger
ledger = BudgetLedger(sys.argv[1])
ledger.reserve("adult", "killed-run", epsilon=1.5, delta=1e-6, cap=4.0, note="mlflow 0123")
ledger.mark_read("killed-run")
print("training", flush=True)
time.sleep(300)
ledger.commit("killed-run", epsilon=1.5, delta=1e-6)
"""


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")
def test_a_run_killed_while_training_stays_charged(url):
    p = subprocess.Popen([sys.executable, "-c", _TRAIN, url], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=_child_env())
    try:
        assert p.stdout.readline().strip() == "training", p.stderr.read()
        os.kill(p.pid, signal.SIGKILL)
        assert p.wait(timeout=60) == -signal.SIGKILL
    finally:
        if p.poll() is None:
            p.kill()
    ledger = BudgetLedger(url)
    r = ledger.get("killed-run")
    assert r is not None and r.state == "reserved" and r.data_read and r.charged_epsilon == 1.5
    [pop] = ledger.status("adult")
    assert (pop.reserved_epsilon, pop.remaining_epsilon) == (1.5, 2.5)
    with pytest.raises(LedgerConflictError):
        ledger.release("killed-run")
    with pytest.raises(PrivacyBudgetExceededError):
        ledger.reserve("adult", "next", epsilon=3.0)
    assert ledger.reserve("adult", "next", epsilon=2.5).state == "reserved"


@pytest.mark.slow  # a process of its own (CLI or run)
@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")
def test_a_killed_run_shows_dead_and_close_settles_it_in_full(url, cli):
    """Issue 24, finding 5: a SIGKILLed run looked reserved like a running one, and no command resolved it."""
    p = subprocess.Popen([sys.executable, "-c", _TRAIN, url], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=_child_env())
    try:
        assert p.stdout.readline().strip() == "training", p.stderr.read()
        ledger = BudgetLedger(url)
        r = ledger.get("killed-run")
        assert (r.owner_pid, r.owner_state) == (p.pid, "running") and r.heartbeat_at is not None
        with pytest.raises(LedgerConflictError, match="still running"):
            ledger.close("killed-run", by="auditor")
        os.kill(p.pid, signal.SIGKILL)
        assert p.wait(timeout=60) == -signal.SIGKILL
    finally:
        if p.poll() is None:
            p.kill()
    assert ledger.get("killed-run").owner_state == "dead"
    res = cli("show", "--ledger", url)
    assert "DEAD" in res.stdout and "dpsyn budget close killed-run" in res.stdout, res.stdout
    with pytest.raises(PrivacyBudgetExceededError, match="budget close"):
        ledger.reserve("adult", "next", epsilon=3.0)
    res = cli("close", "killed-run", "--by", "auditor@site", "--ledger", url, "--json")
    assert res.exit_code == 0, res.output
    closed = json.loads(res.stdout)
    assert closed["state"] == "committed" and closed["spent_epsilon"] == 1.5 and closed["closed_by"] == "auditor@site"
    assert closed["owner_state"] is None and "closed by auditor@site" in closed["note"]
    [pop] = ledger.status("adult")
    assert (pop.spent_epsilon, pop.reserved_epsilon, pop.remaining_epsilon) == (1.5, 0.0, 2.5)
    assert cli("close", "killed-run", "--ledger", url).exit_code == 0  # again: a no-op
    assert cli("close", "no-such-run", "--ledger", url).exit_code == 2


def _version_1_ledger(url: str, reservation: str) -> None:
    """A ledger as version 1 wrote it (no owner columns, no units): population 'adult' and one reservation."""
    path = Path(url.removeprefix("sqlite:///"))
    path.parent.mkdir(parents=True)
    db = sqlite3.connect(path)
    db.executescript(f"""
        CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE populations (population TEXT PRIMARY KEY, cap_epsilon REAL, cap_delta REAL,
                                  created_at TEXT NOT NULL, cap_set_at TEXT);
        CREATE TABLE reservations (run_id TEXT PRIMARY KEY, population TEXT NOT NULL, purpose TEXT NOT NULL,
            state TEXT NOT NULL, reserved_epsilon REAL NOT NULL, reserved_delta REAL NOT NULL, spent_epsilon REAL,
            spent_delta REAL, read_at TEXT, note TEXT NOT NULL DEFAULT '', created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL);
        INSERT INTO populations VALUES ('adult', NULL, NULL, '2026-01-01', NULL);
        INSERT INTO reservations VALUES {reservation};
    """)
    db.close()


def test_an_older_ledger_gains_the_owner_columns(url):
    _version_1_ledger(url, "('old', 'adult', 'synthesize', 'reserved', 1.0, 0.0, NULL, NULL, NULL, '', "
                           "'2026-01-01', '2026-01-01')")
    ledger = BudgetLedger(url)
    assert ledger.get("old").owner_state == "unknown"  # read as is: no owner recorded
    ledger.reserve("adult", "new", epsilon=0.5)
    assert ledger.get("new").owner_pid == os.getpid()
    assert ledger.close("old", by="owner").charged_epsilon == 1.0


def test_a_population_counts_per_person_or_per_row_and_refuses_the_other(ledger):
    """Sums of ε are bounds only under one neighbouring relation: the population's first run fixes whether its ε
    counts per row or per person (the unit column), and a run under another unit is refused before anything is
    charged, with what to do."""
    ledger.reserve("diabetes", "person-1", epsilon=1.0, unit="patient_nbr")
    ledger.reserve("diabetes", "person-2", epsilon=0.5, unit="patient_nbr")
    with pytest.raises(ConfigError, match=r"per person \(patient_nbr\) and the run per row.*k·ε.*privacy_unit"):
        ledger.reserve("diabetes", "row-1", epsilon=0.5)
    with pytest.raises(ConfigError, match=r"per person \(patient_nbr\) and the run per person \(encounter_id\)"):
        ledger.reserve("diabetes", "other-key", epsilon=0.5, unit="encounter_id")
    ledger.reserve("adult", "row-2", epsilon=1.0)
    with pytest.raises(ConfigError, match=r"accounted per row and the run per person \(Id\).*population name"):
        ledger.reserve("adult", "person-3", epsilon=1.0, unit="Id")
    adult, diabetes = ledger.status()  # by name
    assert (diabetes.unit, diabetes.counts, diabetes.reserved_epsilon) == ("patient_nbr", "per person (patient_nbr)",
                                                                           1.5)
    assert [r.run_id for r in diabetes.runs] == ["person-1", "person-2"]  # the refused runs left nothing
    assert (adult.unit, adult.counts, [r.unit for r in adult.runs]) == ("", "per row", [""])
    assert ledger.get("row-1") is None and ledger.get("person-3") is None
    # a retry of the same run under another unit is a conflict, not a second reservation
    with pytest.raises(LedgerConflictError):
        ledger.reserve("adult", "row-2", epsilon=1.0, unit="Id")
    assert ledger.reserve("adult", "row-2", epsilon=1.0).unit == ""


def test_set_cap_declares_the_unit_before_any_run_and_never_changes_it(ledger):
    """An owner can fix what a population's ε counts when setting its cap, so the first run cannot fix it the other
    way; a recorded unit is kept (another one is refused and the cap asked with it is not stored)."""
    ledger.set_cap("diabetes", epsilon=3.0, unit="patient_nbr")
    (pop,) = ledger.status("diabetes")
    assert (pop.unit, pop.counts, pop.cap_epsilon) == ("patient_nbr", "per person (patient_nbr)", 3.0)
    with pytest.raises(ConfigError, match=r"per person \(patient_nbr\) and the run per row"):
        ledger.reserve("diabetes", "row-1", epsilon=0.5)  # the first run cannot fix it per row any more
    with pytest.raises(ConfigError, match=r"accounted per person \(patient_nbr\), not per row.*another population"):
        ledger.set_cap("diabetes", epsilon=5.0, unit="")
    assert ledger.status("diabetes")[0].cap_epsilon == 3.0  # refused as a whole
    ledger.set_cap("diabetes", epsilon=4.0)  # no unit: the recorded one stays
    ledger.set_cap("diabetes", epsilon=4.0, unit="patient_nbr")  # the same one: fine
    assert ledger.status("diabetes")[0].unit == "patient_nbr"
    ledger.reserve("adult", "row-2", epsilon=1.0)  # fixed per row by its first run
    with pytest.raises(ConfigError, match=r"accounted per row, not per person \(Id\)"):
        ledger.set_cap("adult", epsilon=2.0, unit="Id")
    ledger.set_cap("new", epsilon=1.0, unit="")
    assert ledger.status("new")[0].counts == "per row"


def test_an_older_ledger_gains_units_and_its_next_run_fixes_the_population(url):
    _version_1_ledger(url, "('old', 'adult', 'synthesize', 'committed', 1.0, 0.0, 1.0, 0.0, NULL, '', "
                           "'2026-01-01', '2026-01-01')")
    ledger = BudgetLedger(url)
    (pop,) = ledger.status()  # read as is: nothing recorded
    assert (pop.unit, pop.counts, ledger.get("old").unit) == (None, "not recorded", None)
    ledger.reserve("adult", "new", epsilon=0.5, unit="person_id")
    (pop,) = ledger.status()
    assert (pop.counts, pop.spent_epsilon, pop.reserved_epsilon) == ("per person (person_id)", 1.0, 0.5)
    assert ledger.get("old").unit is None  # the old run stays as recorded: the ledger cannot know its relation


# -- CLI -----------------------------------------------------------------------------------------
@pytest.fixture
def cli():
    from dpsyn_cli.main import app

    runner = CliRunner()
    return lambda *args: runner.invoke(app, ["budget", *args])


def test_cli_show_json_and_text(cli, ledger, url):
    ledger.reserve("adult", "run-1", epsilon=1.0, delta=1e-6, cap=3.0, note="mlflow [abc]")
    ledger.mark_read("run-1")
    ledger.commit("run-1", epsilon=0.9, delta=1e-6)
    ledger.reserve("adult", "run-2", epsilon=0.5, purpose="drift-check")
    ledger.reserve("census", "run-3", epsilon=2.0)

    res = cli("show", "--ledger", url, "--json")
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["ledger"] == str(ledger.path)
    adult, census = out["populations"]
    assert (adult["population"], adult["cap_epsilon"], adult["spent_epsilon"], adult["reserved_epsilon"]) == (
        "adult", 3.0, 0.9, 0.5)
    assert adult["remaining_epsilon"] == pytest.approx(1.6)
    assert [(r["run_id"], r["state"], r["purpose"]) for r in adult["runs"]] == [
        ("run-1", "committed", "synthesize"), ("run-2", "reserved", "drift-check")]
    assert census["cap_epsilon"] is None and census["remaining_epsilon"] is None

    res = cli("show", "--ledger", url, "--population", "census", "--json")
    assert [p["population"] for p in json.loads(res.stdout)["populations"]] == ["census"]

    res = cli("show", "--ledger", url)
    assert res.exit_code == 0, res.output
    for part in ("adult", "census", "run-1", "run-2", "drift-check", "committed", "1 → 0.9", "mlflow [abc]",
                 "unlimited", "per row"):
        assert part in res.stdout, part


def test_cli_uses_dpsyn_home_and_sets_caps(cli, monkeypatch, tmp_path):
    monkeypatch.setenv("DPSYN_HOME", str(tmp_path / "home"))
    monkeypatch.delenv(BUDGET_ENV, raising=False)
    res = cli("show")
    assert res.exit_code == 0 and "no privacy budget recorded" in res.stdout
    res = cli("set-cap", "--population", "adult", "--epsilon", "4", "--delta", "1e-5", "--json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["cap_epsilon"] == 4.0
    [pop] = BudgetLedger(tmp_path / "home" / "budget.db").status()
    assert (pop.cap_epsilon, pop.cap_delta) == (4.0, 1e-5)
    res = cli("show", "--json")
    assert json.loads(res.stdout)["populations"][0]["remaining_epsilon"] == 4.0


def test_cli_set_cap_declares_what_the_population_counts(cli, tmp_path):
    db = str(tmp_path / "b.db")
    res = cli("set-cap", "--population", "d130", "--epsilon", "3", "--unit", "patient_nbr", "--ledger", db)
    assert res.exit_code == 0 and "ε counts per person (patient_nbr)" in res.stdout, res.output
    res = cli("set-cap", "--population", "d130", "--epsilon", "3", "--per-row", "--ledger", db)
    assert res.exit_code == 2 and len(res.output.strip().splitlines()) == 1 and "another population" in res.output
    res = cli("set-cap", "--population", "x", "--epsilon", "1", "--per-row", "--unit", "Id", "--ledger", db)
    assert res.exit_code == 2 and "cannot be combined" in res.output
    res = cli("set-cap", "--population", "x", "--epsilon", "1", "--per-row", "--ledger", db, "--json")
    assert res.exit_code == 0 and json.loads(res.stdout)["counts"] == "per row"


def test_cli_bad_ledger_exits_2_with_one_line(cli, tmp_path):
    res = cli("show", "--ledger", "mysql://db/budget")
    assert res.exit_code == 2
    lines = res.output.strip().splitlines()
    assert len(lines) == 1 and "budget ledger URL must be sqlite:///PATH, a file path or postgresql://" in lines[0]
    res = cli("show", "--ledger", "postgresql://u:s3cret@db:notaport/budget")  # unparseable: named, never echoed
    assert res.exit_code == 2 and len(res.output.strip().splitlines()) == 1 and "s3cret" not in res.output
    res = cli("show", "--ledger", "mysql://db/budget", "--json")
    assert res.exit_code == 2 and json.loads(res.stdout)["exit_code"] == 2
    res = cli("set-cap", "--population", "adult", "--epsilon", "-1", "--ledger", str(tmp_path / "b.db"))
    assert res.exit_code == 2 and "cap ε must be" in res.output
