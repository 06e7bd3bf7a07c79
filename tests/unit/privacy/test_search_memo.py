"""The σ searches' memo across processes (dpsyn.privacy.memo): a second run's calibration reads the first run's
compositions instead of recomposing them, and a wrong memo cannot make a run overspend (every check composes
afresh)."""

from __future__ import annotations

import sqlite3

import pytest

from dpsyn.errors import PrivacyBudgetExceededError
from dpsyn.privacy import PrivacyAccountant
from dpsyn.privacy import accountant as acc
from dpsyn.privacy.memo import memo_path

_IN_PROCESS = acc._epsilon_of_cached  # the lru-cached composition (tests below wrap it to count calls)


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("DPSYN_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("DPSYN_ACCOUNTANT_MEMO", raising=False)
    _IN_PROCESS.cache_clear()  # a fresh process, as far as the in-process memo goes
    yield tmp_path / "home"
    _IN_PROCESS.cache_clear()


def _calibrate(name: str = "rdp") -> float:
    a = PrivacyAccountant(epsilon=1.0, delta=1e-5, accountant=name)
    a.plan("rows", noise_multiplier=20.0)
    return a.calibrate(sample_rate=0.1, steps=50, label="dpsgd")


def _composed(monkeypatch) -> list:
    calls = []
    real = acc._epsilon_of_cached.__wrapped__

    def counting(name, entries, delta, **kw):
        calls.append(entries)
        return real(name, entries, delta, **kw)

    monkeypatch.setattr(acc, "_epsilon_of_cached", counting)
    return calls


def test_a_second_process_reads_the_first_ones_compositions(home, monkeypatch):
    calls = _composed(monkeypatch)
    first = _calibrate()
    n_first = len(calls)
    assert n_first >= 5 and memo_path().exists()
    calls.clear()
    assert _calibrate() == first  # the same σ, to the bit
    assert len(calls) < n_first / 2  # the search read the memo; the budget check before it composed afresh


def test_a_memo_that_understates_epsilon_cannot_make_a_run_overspend(home):
    _calibrate()
    with sqlite3.connect(memo_path()) as conn:
        conn.execute("UPDATE epsilon SET value = value / 100")  # a damaged memo: every ε a hundredth
    _IN_PROCESS.cache_clear()
    a = PrivacyAccountant(epsilon=1.0, delta=1e-5, accountant="rdp")
    a.plan("rows", noise_multiplier=20.0)
    sigma = a.calibrate(sample_rate=0.1, steps=50, label="dpsgd")  # the search believes the memo...
    with pytest.raises(PrivacyBudgetExceededError):  # ... the fresh check does not
        a.plan("dpsgd", noise_multiplier=sigma, sample_rate=0.1, steps=50)
    assert a.epsilon(include_planned=True) <= 1.0


def test_off_by_environment(home, monkeypatch):
    monkeypatch.setenv("DPSYN_ACCOUNTANT_MEMO", "0")
    _calibrate()
    assert memo_path() is None and not (home / "cache" / "accountant.sqlite").exists()


def test_an_unusable_memo_is_skipped(home):
    (home / "cache").mkdir(parents=True)
    (home / "cache" / "accountant.sqlite").write_text("not a database")
    _IN_PROCESS.cache_clear()
    assert _calibrate() > 0
