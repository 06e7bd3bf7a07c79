"""``dpsyn models``: the registered synthesizers and their versions.

``dpsyn models [--name NAME] [--json]`` lists every registered model whose
name starts with ``dpsyn-`` (one per dataset), or only NAME, and each
version's ε, δ, cumulative ε, gate verdict, training batch, aliases
(``champion`` serves) and creation time, from the MLflow store of
``$DPSYN_HOME`` (or ``MLFLOW_TRACKING_URI``). Exit 0: listed (possibly
nothing); 2: the store cannot be read or NAME is not registered. Nothing is
created: a home without an MLflow store lists nothing.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated

import typer

from dpsyn_cli.common import (
    EXIT_INPUT,
    JsonOpt,
    VerboseOpt,
    fail,
    set_env_defaults,
)

__all__ = ["models", "register"]



def _shown_uri(uri: str) -> str:
    """The tracking URI without any user name or password."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(uri)
    if parts.username or parts.password:
        host = parts.hostname or ""
        netloc = host + (f":{parts.port}" if parts.port else "")
        return urlunsplit(parts._replace(netloc=netloc))
    return uri


def _missing_sqlite_store(uri: str) -> bool:
    """A SQLite store that does not exist yet (listing must not create one)."""
    if not uri.startswith("sqlite:///"):
        return False
    path = uri.removeprefix("sqlite:///").split("?", 1)[0]
    return path != ":memory:" and not Path(path).exists()


def _num(x, fmt: str) -> str:
    return "—" if x is None else format(x, fmt)


def _print_text(uri: str, models: list[dict]) -> None:
    if not models:
        typer.echo(f"no registered dpsyn models in {uri}")
        return
    for m in models:
        aliases = ", ".join(f"{a} → v{v}" for a, v in m["aliases"].items()) or "no alias"
        typer.echo(f"{m['name']}  ({len(m['versions'])} version(s); {aliases})")
        typer.echo(f"  {'version':<8} {'ε':>8} {'δ':>8} {'cum. ε':>8}  {'gate':<4}  {'training batch':<14} "
                   f"{'aliases':<10} created")
        for v in m["versions"]:
            gate = {True: "pass", False: "FAIL", None: "?"}[v["gate_passed"]]
            batch = (v["training_batch"] or "—")[:12] + ("…" if v["training_batch"] else "")
            typer.echo(
                f"  {'v' + v['version']:<8} {_num(v['epsilon'], '.4f'):>8} {_num(v['delta'], 'g'):>8} "
                f"{_num(v['cumulative_epsilon'], '.4f'):>8}  {gate:<4}  {batch:<14} "
                f"{', '.join(v['aliases']) or '—':<10} {v['created']}"
            )


def models(
    name: Annotated[
        str | None, typer.Option("--name", help="Only this registered model (default: every dpsyn-* model).")
    ] = None,
    as_json: JsonOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """List registered dpsyn models and their versions (ε, δ, cumulative ε, gate, batch, aliases)."""

    set_env_defaults(verbose)
    # a listing should fail fast on an unreachable server rather than retry for minutes
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", "15")
    from dpsyn.home import mlflow_tracking_uri

    uri = mlflow_tracking_uri()
    shown = _shown_uri(uri)
    if _missing_sqlite_store(uri):
        found: list[dict] = []
        if name is not None:
            raise fail(f"no registered model named {name!r} (no MLflow store at {shown})", EXIT_INPUT,
                        as_json=as_json)
    else:
        import warnings

        try:
            with warnings.catch_warnings():
                if not verbose:
                    warnings.simplefilter("ignore")
                from tasks.tracking import list_registered_models

                found = list_registered_models(name)
        except Exception as e:  # one line, the kind of failure only (its text may be long or hold a password)
            if verbose:
                import traceback

                traceback.print_exc()
            if name is not None and getattr(e, "error_code", None) == "RESOURCE_DOES_NOT_EXIST":
                raise fail(f"no registered model named {name!r} in {shown}", EXIT_INPUT, as_json=as_json) from None
            raise fail(f"cannot read the MLflow tracking store at {shown} ({type(e).__name__}; "
                        "check MLFLOW_TRACKING_URI or DPSYN_HOME)", EXIT_INPUT, as_json=as_json) from None
    if as_json:
        typer.echo(json.dumps({"tracking_uri": shown, "models": found}))
    else:
        _print_text(shown, found)


def register(app: typer.Typer) -> None:
    app.command("models")(models)
