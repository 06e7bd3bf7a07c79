"""The ``dpsyn`` command line.

Exit codes: 0 = ok; 1 = a check failed (validation gate, PII scan) or the run
failed; 2 = bad input or usage. Errors are one line, name the problem, and
never echo a data value; ``--verbose`` adds tracebacks (for the operator's
terminal only).

Heavy libraries (Prefect, MLflow, torch) are imported inside the commands,
after the environment defaults below are set, so ``dpsyn --help`` is fast.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Annotated

import typer

app = typer.Typer(
    name="dpsyn",
    help="Privacy-safe synthetic data for sensitive tables, with accounted differential privacy.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

EXIT_OK, EXIT_CHECK, EXIT_INPUT = 0, 1, 2


def _set_env_defaults(verbose: bool = False) -> None:
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
        os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
        os.environ.setdefault("PREFECT_LOGGING_TO_API_WHEN_MISSING_FLOW", "ignore")


def _fail(message: str, code: int, *, as_json: bool) -> typer.Exit:
    if as_json:
        typer.echo(json.dumps({"error": message, "exit_code": code}))
    else:
        typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)


def _preflight(config) -> None:
    """Check the inputs before anything starts: schema, data file, output folder."""
    from dpsyn.io import check_output_dir
    from dpsyn.scale import plan_partitions, read_partition
    from dpsyn.schema import load_schema
    from dpsyn.synth import get_class

    schema = load_schema(config.table_schema)
    rows = 0 if config.mask.k is not None else config.scale.partition_rows
    for part in plan_partitions(config.data, schema, rows):  # one partition in memory at a time
        read_partition(config.data, schema, part)
    get_class(config.synthesizer)
    check_output_dir(Path(config.out).absolute(), overwrite=config.overwrite)


def _run_flow(config, *, as_json: bool, verbose: bool) -> dict:
    """Run the synthesize flow in Prefect's embedded mode with a progress display."""
    import warnings

    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from dpsyn.errors import DpsynError
    from dpsyn.progress import set_reporter

    console = Console(stderr=True)
    with Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=console, transient=as_json, disable=as_json and not console.is_terminal,
    ) as progress:
        bars: dict[str, int] = {}
        start = progress.add_task("starting Prefect (embedded) …", total=None)

        def reporter(stage: str, done: int, total: int) -> None:
            if start in progress.task_ids and progress.tasks[0].total is None:
                progress.update(start, total=1, completed=1, description="Prefect started")
            if stage not in bars:
                bars[stage] = progress.add_task(stage, total=total)
            progress.update(bars[stage], completed=done, total=total)

        previous = set_reporter(reporter)
        try:
            with warnings.catch_warnings():
                if not verbose:
                    warnings.simplefilter("ignore")
                from flows.synthesize import synthesize

                return synthesize(config)
        except DpsynError:
            raise
        finally:
            set_reporter(previous)


def _handle(fn, *, as_json: bool, verbose: bool):
    from dpsyn.errors import DpsynError

    try:
        return fn()
    except DpsynError as e:
        if verbose:
            import traceback

            traceback.print_exc()
        raise _fail(str(e), e.exit_code, as_json=as_json) from None
    except typer.Exit:
        raise
    except KeyboardInterrupt:
        raise _fail("interrupted; nothing was published", EXIT_CHECK, as_json=as_json) from None
    except Exception as e:  # an unexpected failure: say what kind, never echo its text (it may hold values)
        if verbose:
            import traceback

            traceback.print_exc()
        raise _fail(
            f"the run failed with {type(e).__name__}; nothing was published (rerun with --verbose for details)",
            EXIT_CHECK, as_json=as_json,
        ) from None


def _print_result(result: dict, *, as_json: bool, started: float) -> None:
    summary = {
        "output": result["output"],
        "mlflow_run_id": result["mlflow_run_id"],
        "epsilon_spent": result["epsilon_spent"],
        "delta": result["delta"],
        "accountant": result["accountant"],
        "gate_passed": result["gate_passed"],
        "training_batch": result["training_batch"]["batch_id"],
        "watermark_key_id": result["watermark"]["key_id"],
        "watermark_code": result["watermark"]["code"],
        "dataset_id": result.get("dataset_id"),
        "model": result.get("model"),
        "seconds": round(time.time() - started, 1),
    }
    if as_json:
        typer.echo(json.dumps(summary))
    else:
        typer.echo(
            f"published {summary['output']}\n"
            f"  ε spent {summary['epsilon_spent']:.4f} at δ={summary['delta']:g} ({summary['accountant']}), "
            f"gate passed\n  MLflow run {summary['mlflow_run_id']}"
            + (f", model {summary['model']['name']} v{summary['model']['version']}" if summary["model"] else "")
            + f"\n  trace it: dpsyn audit trace {summary['output']}/synthetic.csv"
        )


EpsOpt = Annotated[float, typer.Option("--epsilon", help="Total privacy budget ε for the run (> 0).")]
DeltaOpt = Annotated[float | None, typer.Option("--delta", help="δ; default: a power of ten ≤ 1/(10·rows).")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON object instead of text.")]
VerboseOpt = Annotated[bool, typer.Option("--verbose", "-v", help="Show Prefect logs and tracebacks.")]


def _make_config(**kw):
    from pydantic import ValidationError

    from dpsyn.config import SynthesizeConfig
    from dpsyn.errors import ConfigError

    try:
        return SynthesizeConfig(**kw)
    except ValidationError as e:
        first = e.errors(include_url=False, include_input=False)[0]
        where = ".".join(str(x) for x in first["loc"])
        raise ConfigError(f"invalid option {where}: {first['msg']}") from None


@app.command()
def run(
    data: Annotated[Path, typer.Option("--data", help="The sensitive table (CSV or Parquet).")],
    schema: Annotated[str, typer.Option("--schema", help="Schema YAML path or shipped schema name.")],
    out: Annotated[Path, typer.Option("--out", help="Output folder (must not exist or be empty).")],
    epsilon: EpsOpt = 1.0,
    delta: DeltaOpt = None,
    synthesizer: Annotated[str, typer.Option("--synthesizer", help="Synthesizer name.")] = "dpgen",
    epochs: Annotated[int | None, typer.Option("--epochs", help="Training epochs (synthesizer setting).")] = None,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace a non-empty output folder.")] = False,
    insecure_rng: Annotated[
        bool, typer.Option("--insecure-rng", help="Seeded, non-cryptographic noise (tests only).")
    ] = False,
    as_json: JsonOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Synthesize a DP table from DATA and publish it at OUT if the validation gate passes."""
    started = time.time()
    _set_env_defaults(verbose)

    def go():
        if not epsilon > 0:
            from dpsyn.errors import ConfigError

            raise ConfigError(f"--epsilon must be greater than 0 (got {epsilon:g})")
        cfg = _make_config(
            data=data, table_schema=schema, out=out, overwrite=overwrite, synthesizer=synthesizer,
            synthesizer_config={"epochs": epochs} if epochs else {},
            privacy={"epsilon": epsilon, "delta": delta, "secure_rng": not insecure_rng},
        )
        _preflight(cfg)
        return _run_flow(cfg, as_json=as_json, verbose=verbose)

    result = _handle(go, as_json=as_json, verbose=verbose)
    _print_result(result, as_json=as_json, started=started)


@app.command()
def demo(
    out: Annotated[Path, typer.Option("--out", help="Output folder.")] = Path("dpsyn-demo"),
    epsilon: EpsOpt = 1.0,
    rows: Annotated[int | None, typer.Option("--rows", help="Use only the first N sample rows.")] = None,
    as_json: JsonOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Run the whole pipeline on a shipped Adult sample with seeded fake identifiers."""
    started = time.time()
    _set_env_defaults(verbose)

    def go():
        from dpsyn.demo import build_demo_input

        dest = Path(out).absolute()
        # Replace the output only if it is an earlier dpsyn output (it has our manifest).
        overwrite = dest.is_dir() and (dest / "manifest.json").is_file()
        with tempfile.TemporaryDirectory(prefix="dpsyn-demo-input-") as tmp:
            inp = build_demo_input(Path(tmp), n_rows=rows)
            if not as_json:
                typer.echo(
                    f"demo input: {inp.data_path.name} with fake names, emails, SSNs, phones and notes "
                    "(a temporary file, removed after the run)",
                    err=True,
                )
            cfg = _make_config(
                data=inp.data_path, table_schema="adult_demo", out=dest, overwrite=overwrite,
                privacy={"epsilon": epsilon},
            )
            _preflight(cfg)
            return _run_flow(cfg, as_json=as_json, verbose=verbose)

    result = _handle(go, as_json=as_json, verbose=verbose)
    _print_result(result, as_json=as_json, started=started)


def _register_commands() -> None:
    """Command groups that live in their own modules."""
    from dpsyn_cli.audit_cmds import register as register_audit
    from dpsyn_cli.budget_cmds import register as register_budget
    from dpsyn_cli.models_cmds import register as register_models
    from dpsyn_cli.pii_cmds import register as register_pii
    from dpsyn_cli.schema_cmds import register as register_schema
    from dpsyn_cli.validate_cmd import register as register_validate

    register_pii(app)
    register_schema(app)
    register_audit(app)
    register_validate(app)
    register_budget(app)
    register_models(app)


_register_commands()


def main() -> None:
    try:
        app()
    except SystemExit as e:
        # click reports usage errors with exit code 2 already; keep other codes as they are
        sys.exit(e.code)


if __name__ == "__main__":
    main()
