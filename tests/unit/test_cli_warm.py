"""The run's heavy imports are warmed while Prefect's embedded server starts (dpsyn_cli.common.warm_imports): the
warm thread starts only after Prefect's own modules are imported, the wait for the server overlaps it, and the
flow starts only once it is done."""

from __future__ import annotations

import sys
import threading
import time

import pytest

from dpsyn_cli.common import start_prefect, warm_imports


def test_warm_imports_imports_and_ignores_what_fails():
    sys.modules.pop("colorsys", None)
    t = warm_imports(("colorsys", "no_such_module_for_dpsyn"))
    t.join(10)
    assert not t.is_alive() and "colorsys" in sys.modules


def test_a_warm_entry_may_call_the_stages_own_import(monkeypatch):
    import types

    calls = []
    monkeypatch.setitem(sys.modules, "dpsyn_warm_probe", types.SimpleNamespace(setup=lambda: calls.append(1)))
    t = warm_imports(("dpsyn_warm_probe:setup", "dpsyn_warm_probe:missing"))
    t.join(10)
    assert not t.is_alive() and calls == [1]


def test_pgm_runs_warm_mbi_through_pgms_own_import():
    from types import SimpleNamespace

    from dpsyn_cli.main import _run_modules

    mods = _run_modules(SimpleNamespace(synthesizer="pgm"))
    assert "dpsyn.synth.pgm_model:_mbi" in mods and "mbi" not in mods
    assert "dpsyn.synth.pgm_model:_mbi" not in _run_modules(SimpleNamespace(synthesizer="dpgen"))


def test_the_wait_for_the_server_overlaps_the_warm_thread_and_the_run_waits_for_it(monkeypatch, tmp_path):
    import prefect.client.orchestration as orchestration

    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    monkeypatch.setenv("PREFECT_HOME", str(tmp_path))
    events: list[str] = []

    class Client:  # the embedded server's start: a wait
        def __enter__(self):
            events.append("server wait")
            return self

        def __exit__(self, *exc):
            return False

        def api_healthcheck(self):
            return None

    monkeypatch.setattr(orchestration, "get_client", lambda sync_client: Client())

    def warm():
        assert "prefect.server.api.server" in sys.modules  # Prefect's modules first, in the caller's thread
        events.append("warm started")
        t = threading.Thread(target=lambda: (time.sleep(0.3), events.append("warm done")))
        t.start()
        return t

    start_prefect(warm=warm)
    assert events == ["warm started", "server wait", "warm done"]


def test_with_a_server_url_there_is_no_wait_to_fill(monkeypatch):
    monkeypatch.setenv("PREFECT_API_URL", "http://127.0.0.1:9/api")
    start_prefect(warm=lambda: pytest.fail("warmed with no server to wait for"))
