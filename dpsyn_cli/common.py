"""What every ``dpsyn`` command shares: exit codes, one-line errors, option types, the embedded defaults.

The command modules import from here, and ``dpsyn_cli.main`` imports the command modules: no module of the CLI
imports ``main``, so the CLI has no import circle.
"""

from __future__ import annotations

import json
import os
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

__all__ = ["AccountantName", "AuditMethod", "AuditModel", "EXIT_CHECK", "SynthesizerName", "EXIT_INPUT", "EXIT_OK", "JsonOpt", "LedgerOpt", "VerboseOpt", "fail", "handle", "print_verdict",
           "set_env_defaults", "warm_imports"]

JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON object instead of text.")]
VerboseOpt = Annotated[bool, typer.Option("--verbose", "-v", help="Show tracebacks.")]
LedgerOpt = Annotated[
    str | None,
    typer.Option("--ledger", help="Budget ledger: sqlite:///PATH, a file or postgresql://... (default $DPSYN_BUDGET_URL, "
                                  "else $DPSYN_HOME/budget.db)."),
]

EXIT_OK, EXIT_CHECK, EXIT_INPUT = 0, 1, 2
EXIT_INCOMPLETE = 3  # dpsyn scan: nothing found, but a cap stopped it before the end of a file

#: Fixed choices of the options (so --help lists them and a typo fails at parse time, exit 2). The synthesizers
#: are the registry's built-ins (tests/unit/test_cli_choices.py keeps them equal; importing the registry here
#: would cost --help half a second); the accountants are dpsyn.privacy.accountant's.
SynthesizerName = StrEnum("SynthesizerName", {n: n for n in ("pgm", "dpgen", "dpdsyn")})
AccountantName = StrEnum("AccountantName", {n: n for n in ("prv", "rdp")})
AuditMethod = StrEnum("AuditMethod", {n.replace("-", "_"): n for n in ("dpsgd", "dpsgd-s", "both")})
AuditModel = StrEnum("AuditModel", {n: n for n in ("task", "dpdsyn")})


def set_env_defaults(verbose: bool = False) -> None:
    """Embedded defaults: everything under one dpsyn home, nothing reaching the network."""
    from dpsyn.home import dpsyn_home, prefect_home

    home = dpsyn_home()
    os.environ.setdefault("DPSYN_HOME", str(home))
    if not os.environ.get("PREFECT_API_URL"):
        os.environ.setdefault("PREFECT_HOME", str(prefect_home()))
        Path(os.environ["PREFECT_HOME"]).mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("DO_NOT_TRACK", "1")
    os.environ.setdefault("PREFECT_LOGGING_EXTRA_LOGGERS", "dpsyn")
    os.environ.setdefault("PREFECT_RESULTS_PERSIST_BY_DEFAULT", "false")
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
    os.environ.setdefault("TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS", "")
    os.environ.setdefault("GIT_PYTHON_REFRESH", "quiet")
    if not verbose:
        import logging

        logging.getLogger("mlflow").setLevel(logging.WARNING)
        logging.getLogger("alembic").setLevel(logging.WARNING)
        os.environ.setdefault("MLFLOW_LOGGING_LEVEL", "WARNING")  # importing mlflow resets its loggers to this (INFO)
        os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
        os.environ.setdefault("PREFECT_LOGGING_TO_API_WHEN_MISSING_FLOW", "ignore")
    sweep_stopped()


def read_config_file(path: Path | None, what: str = "settings") -> dict:
    """The mapping in a YAML/JSON config file ({} for None); errors name the file, never its content."""
    if path is None:
        return {}
    from dpsyn.io import read_mapping_file

    return read_mapping_file(path, "config file", holds=f"a mapping of {what}")


def warm_imports(modules: tuple[str, ...] = (), *, scrub=None):
    """A daemon thread importing ``modules`` (and building the PII engine of ``scrub``) that the run will need;
    join it before the flow starts. ``"module:function"`` imports the module and calls the function (no
    arguments): a stage's own import, which configures what it imports. The embedded server starts in a
    subprocess while this process only polls its health (sleeping, the GIL released), so the imports take that
    wait instead of the run's time (issue 23's fixed cost). A failure here is ignored: the stage that needs the
    module raises its own error."""
    import threading

    def work() -> None:
        import importlib

        for name in modules:
            module, _, function = name.partition(":")
            try:
                imported = importlib.import_module(module)
                if function:
                    getattr(imported, function)()
            except Exception:  # noqa: BLE001 - the stage that needs it says what is wrong
                pass
        if scrub is not None:
            try:
                from dpsyn.pii import build_engine

                build_engine(scrub)  # cached per config: the scrub task reuses it
            except Exception:  # noqa: BLE001
                pass

    t = threading.Thread(target=work, name="dpsyn-warm-imports", daemon=True)
    t.start()
    return t


def start_prefect(warm=None) -> None:
    """Start Prefect's embedded API before a flow runs, one process at a time (a file lock in ``$PREFECT_HOME``):
    runs starting together in one home otherwise race on its database migration. A server that does not come up
    is one line (exit 1) saying what to do. Nothing to do when ``PREFECT_API_URL`` names a server.

    ``warm``: a callable returning a started thread (:func:`warm_imports`). It is called once Prefect's client and
    server modules are imported here (so the two threads never import the same modules at once), before the wait
    for the server, and joined once the server is up; with ``PREFECT_API_URL`` set there is no wait to fill and it
    is not called."""
    if os.environ.get("PREFECT_API_URL"):
        return
    import fcntl

    from dpsyn.errors import OrchestratorError
    from dpsyn.home import prefect_home

    home = Path(os.environ.get("PREFECT_HOME") or prefect_home())
    home.mkdir(parents=True, exist_ok=True)
    timeout = os.environ.get("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
    thread = None
    with open(home / ".dpsyn-start.lock", "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        try:
            from prefect.client.orchestration import get_client
            from prefect.server.api.server import SubprocessASGIServer  # noqa: F401 - imported before the warm thread

            thread = warm() if warm is not None else None
            with get_client(sync_client=True) as client:
                error = client.api_healthcheck()
        except Exception as e:  # Prefect's own text may name paths and settings; say what failed, not its text
            raise OrchestratorError(
                f"Prefect's embedded server did not start ({type(e).__name__}; start-up timeout {timeout} s): on a "
                "loaded machine raise PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS, or run a server (prefect "
                "server start) and set PREFECT_API_URL; nothing ran") from None
        if error is not None:
            raise OrchestratorError(f"Prefect's embedded server is not healthy ({type(error).__name__}); set "
                                    "PREFECT_API_URL to a running server, or remove $PREFECT_HOME to start afresh; "
                                    "nothing ran")
    if thread is not None:
        thread.join()


def stop_prefect(since: float, *, timeout: float = 15.0) -> None:
    """Stop Prefect's embedded server cleanly once the flow runs started at or after ``since`` (a ``time.time()``)
    are recorded; nothing to do when ``PREFECT_API_URL`` names a server or none was started.

    Task-run states reach the server as events, which its task-run recorder writes one at a time. Left to itself,
    Prefect stops the server at exit (SIGTERM, atexit) right after the client's last events arrive: the recorder's
    write in flight is cancelled and the server prints ``task_run_recorder - Error flushing 1 events`` with a
    CancelledError traceback, after the run's summary, on every run. So: send the client's queued events and logs,
    wait (at most ``timeout`` seconds) until every task run of the finished flow runs started since ``since`` is in
    a final state, twice in a row, then stop the server. Never fails the command."""
    if os.environ.get("PREFECT_API_URL"):
        return
    try:
        from prefect.server.api.server import SubprocessASGIServer
        from prefect.settings import get_current_settings

        if get_current_settings().api.url:  # a server of its own (a profile; prefect_test_harness's): not ours
            return
        server = SubprocessASGIServer()  # one per port: the one get_client() started, if it did
        if not server.running:
            return
        _wait_recorded(since, timeout)
        server.stop()
    except Exception:  # a server that does not stop cleanly is Prefect's atexit's to stop, as before
        return


def _wait_recorded(since: float, timeout: float) -> None:
    import time
    from datetime import UTC, datetime

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (
        FlowRunFilter,
        FlowRunFilterId,
        FlowRunFilterStartTime,
        FlowRunFilterState,
        FlowRunFilterStateType,
    )
    from prefect.client.schemas.objects import StateType
    from prefect.events.worker import EventsWorker
    from prefect.logging.handlers import APILogWorker

    deadline = time.monotonic() + timeout
    for worker in (EventsWorker, APILogWorker):
        worker.drain_all(timeout=max(1.0, deadline - time.monotonic()))
    final = [StateType.COMPLETED, StateType.FAILED, StateType.CANCELLED, StateType.CRASHED]
    finished = FlowRunFilter(
        start_time=FlowRunFilterStartTime(after_=datetime.fromtimestamp(since - 1, tz=UTC)),
        state=FlowRunFilterState(type=FlowRunFilterStateType(any_=final)))
    previous = None
    with get_client(sync_client=True) as client:
        while time.monotonic() < deadline:
            ids = [r.id for r in client.read_flow_runs(flow_run_filter=finished, limit=50)]
            if not ids:
                return
            runs = client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=ids)), limit=200)
            snapshot = sorted((str(t.id), t.state_type) for t in runs)
            if snapshot == previous and all(state in final for _, state in snapshot):
                return
            previous = snapshot
            time.sleep(0.5)


class _LazyTracker:
    """The MLflow tracker, imported only if a stopped run has a record to close."""

    def log_privacy(self, run_id: str, privacy) -> None:
        from tasks.tracking import TRACKER

        TRACKER.log_privacy(run_id, privacy)

    def end(self, run_id: str, status: str) -> None:
        from tasks.tracking import TRACKER

        TRACKER.end(run_id, status)


def sweep_stopped() -> list[str]:
    """Every command first closes runs whose process was killed and removes the private folders they left
    (dpsyn.pipeline.lifecycle.sweep); a note on stderr names them. Never fails the command."""
    from dpsyn.home import work_root

    root = work_root()
    if not root.is_dir() or not any(root.iterdir()):
        return []
    try:
        from dpsyn.pipeline.lifecycle import sweep

        closed = sweep(_LazyTracker())
    except Exception as e:  # the sweep must never stop the command; the next one tries again
        typer.echo(f"note: could not close runs stopped earlier ({type(e).__name__})", err=True)
        return []
    if closed:
        typer.echo(f"note: cleaned up {len(closed)} run(s) whose process was killed: {', '.join(closed)}; their "
                   "budget reservations stay charged in full until closed (dpsyn budget show, dpsyn budget close)",
                   err=True)
    return closed


def fail(message: str, code: int, *, as_json: bool, details: dict | None = None) -> typer.Exit:
    """Print the one-line error (``--json``: one object, with ``details`` such as what a stopped run spent)."""
    if as_json:
        typer.echo(json.dumps({"error": message, "exit_code": code, **(details or {})}, default=str))
    else:
        typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)


class progress_display:  # noqa: N801 - used as a context manager, like rich's own
    """A progress display on stderr for the block: one line ``what`` with elapsed time, and a bar for each stage
    the library reports (:func:`dpsyn.progress.report`). Under ``--json`` it is drawn only on a terminal and
    cleared at the end, so a pipe reads one JSON object."""

    def __init__(self, what: str, *, as_json: bool):
        self.what, self.as_json = what, as_json

    def __enter__(self):
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        from dpsyn.progress import set_reporter

        console = Console(stderr=True)
        self.progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                 TimeElapsedColumn(), console=console, transient=self.as_json,
                                 disable=self.as_json and not console.is_terminal)
        self.progress.__enter__()
        self.main = self.progress.add_task(self.what, total=None)
        bars: dict[str, int] = {}

        def reporter(stage: str, done: int, total: int) -> None:
            if stage not in bars:
                bars[stage] = self.progress.add_task(stage, total=total)
            self.progress.update(bars[stage], completed=done, total=total)

        self.previous = set_reporter(reporter)
        return self

    def __exit__(self, *exc) -> None:
        from dpsyn.progress import set_reporter

        set_reporter(self.previous)
        if exc[0] is None:
            self.progress.update(self.main, total=1, completed=1)
        self.progress.__exit__(*exc)


def handle(fn, *, as_json: bool, verbose: bool, progress: str | None = None):
    """Run ``fn`` and turn a failure into one line and its exit code (:func:`fail`); ``progress``: the line of a
    progress display (:class:`progress_display`) shown while ``fn`` runs, with a bar per reported stage."""
    from dpsyn.errors import DpsynError

    try:
        if progress is None:
            return fn()
        with progress_display(progress, as_json=as_json):
            return fn()
    except DpsynError as e:
        if verbose:
            import traceback

            traceback.print_exc()
        raise fail(str(e), e.exit_code, as_json=as_json, details=getattr(e, "details", None)) from None
    except typer.Exit:
        raise
    except KeyboardInterrupt:
        raise fail("interrupted; nothing was published", EXIT_CHECK, as_json=as_json) from None
    except ModuleNotFoundError as e:
        if str(e.name).split(".")[0] not in ("flows", "tasks"):
            raise fail("the run failed with ModuleNotFoundError; nothing was published (rerun with --verbose for "
                       "details)", EXIT_CHECK, as_json=as_json) from None
        raise fail("this command needs dpsyn's repository checkout (its flows/ and tasks/ folders are not "
                   "installed): install dpsyn from the checkout with `pip install -e .` and run it there",
                   EXIT_INPUT, as_json=as_json) from None
    except Exception as e:  # an unexpected failure: say what kind, never echo its text (it may hold values)
        if verbose:
            import traceback

            traceback.print_exc()
        raise fail(
            f"the run failed with {type(e).__name__}; nothing was published (rerun with --verbose for details)",
            EXIT_CHECK, as_json=as_json,
        ) from None


def print_verdict(report, html=None) -> None:
    """The gate's verdict where the user looks: failed and uninformative checks with their noisy values and
    limits (DP statistics only, never rows), and where the HTML report is."""
    for c in report.failures():
        typer.echo(f"FAIL {c.name}: {c.value:.4f} > limit {c.limit:.4f} (threshold {c.threshold:.4f}, "
                   f"noise std {c.noise_std:.4f})")
    for c in report.uninformative():
        if c.primary:
            typer.echo(f"UNINFORMATIVE {c.name}: noise std {c.noise_std:.4f} too large for threshold "
                       f"{c.threshold:.4f}")
    weak = len(report.uninformative())
    typer.echo(f"gate {report.verdict.upper()}: {len(report.checks) - len(report.failures()) - weak} passed, "
               f"{len(report.failures())} failed, {weak} uninformative of {len(report.checks)} checks "
               f"(primary noise std {report.noise_std:.4f})" + (f"; report: {html}" if html else ""))
