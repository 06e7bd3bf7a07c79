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
import sys
import time
from pathlib import Path
from typing import Annotated

import typer

from dpsyn_cli.common import (
    JsonOpt,
    SynthesizerName,
    VerboseOpt,
    handle,
    read_config_file,
    set_env_defaults,
    start_prefect,
    stop_prefect,
    warm_imports,
)

app = typer.Typer(
    name="dpsyn",
    help="Privacy-safe synthetic data for sensitive tables, with accounted differential privacy.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _print_version(value: bool) -> None:
    if value:
        from importlib.metadata import version

        typer.echo(f"dpsyn {version('dpsyn')}")
        raise typer.Exit()


@app.callback()
def _app(version: Annotated[bool, typer.Option(
        "--version", callback=_print_version, is_eager=True, help="Print dpsyn's version and exit.")] = False) -> None:
    """Privacy-safe synthetic data for sensitive tables, with accounted differential privacy."""


def _preflight(config) -> None:
    """Check the inputs before anything starts: schema, data file, output folder (dpsyn.pipeline.check_input)."""
    from dpsyn.pipeline.check_input import check_input

    check_input(config)


def _run_modules(config) -> tuple[str, ...]:
    """The heavy modules a run imports in its tasks (the accountant's Opacus and torch, the tracking adapter's
    MLflow, pgm's mbi and JAX), warmed while Prefect starts. mbi through pgm's own import, which configures JAX
    (64-bit floats, no compilation cache, XLA's flags) before mbi is imported: imported bare, mbi warned about
    both in a verbose run."""
    mods = ["opacus", "mlflow"]
    if getattr(config, "synthesizer", "pgm") == "pgm" or hasattr(config, "dataset"):
        mods.insert(0, "dpsyn.synth.pgm_model:_mbi")
    return tuple(mods)


def _run_flow(config, *, as_json: bool, verbose: bool, dataset: bool = False) -> dict:
    """Run the synthesize flow (``dataset``: the synthesize-dataset flow) in Prefect's embedded mode with a progress
    display."""
    import warnings

    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from dpsyn.errors import DpsynError, DpsynWarning
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
                    warnings.simplefilter("default", DpsynWarning)  # dpsyn's own (an insecure RNG) always show
                # one process at a time in a home (Prefect's migrations do not race); the run's heavy imports
                # are warmed while the embedded server starts
                start_prefect(warm=lambda: warm_imports(_run_modules(config), scrub=getattr(config, "scrub", None)))
                if dataset:
                    from flows.dataset import synthesize_dataset as synthesize
                else:
                    from flows.synthesize import synthesize

                if not verbose:  # a stopped run is one line (handle); Prefect's run loggers would add a traceback
                    import logging

                    for name in ("prefect.flow_runs", "prefect.task_runs"):
                        logging.getLogger(name).setLevel(logging.CRITICAL)

                flow_started = time.time()
                try:
                    return synthesize(config)
                finally:  # the embedded server stops once the run is recorded: no shutdown traceback after the summary
                    if not isinstance(sys.exc_info()[1], KeyboardInterrupt):
                        stop_prefect(flow_started)
        except DpsynError:
            raise
        finally:
            set_reporter(previous)


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
DeltaOpt = Annotated[float | None, typer.Option(
    "--delta", help="δ; default: a power of ten ≤ 1/(10·N) for the schema's public population size N, else 1e-6.")]


def _epochs_setting(synthesizer: str, epochs: int | None) -> dict:
    """``--epochs`` as the synthesizer's own setting: ``epochs`` (DP-SGD generators) or ``task_epochs`` (pgm's task
    model)."""
    if epochs is None:
        return {}
    from dpsyn.errors import ConfigError
    from dpsyn.synth import get_class

    if epochs < 1:
        raise ConfigError(f"--epochs must be at least 1 (got {epochs})")
    fields = get_class(synthesizer).config_class.model_fields
    for name in ("epochs", "task_epochs"):
        if name in fields:
            return {name: epochs}
    raise ConfigError(f"--epochs is not a setting of synthesizer '{synthesizer}'")


def _make_config(kind=None, /, **kw):
    """``kind`` (default SynthesizeConfig) from ``kw``; a bad setting is one ConfigError naming it."""
    from pydantic import ValidationError

    from dpsyn.config import SynthesizeConfig
    from dpsyn.errors import ConfigError

    try:
        return (kind or SynthesizeConfig)(**kw)
    except ValidationError as e:
        first = e.errors(include_url=False, include_input=False)[0]
        where = ".".join(str(x) for x in first["loc"])
        raise ConfigError(f"invalid option {where}: {first['msg']}") from None


def _merged(base: dict, **given) -> dict:
    """``base`` (a config file's settings) with the options given on the command line on top (None: not given);
    ``privacy`` and ``validation`` merge key by key."""
    out = dict(base)
    for key, value in given.items():
        if value is None:
            continue
        if isinstance(value, dict):
            out[key] = {**(out.get(key) or {}), **{k: v for k, v in value.items() if v is not None}}
        else:
            out[key] = value
    return out


def _run_dataset(dataset: str, data: Path | None, out: Path | None, *, epsilon: float | None, delta: float | None,
                 overwrite: bool, allow_uninformative: bool, config: Path | None, as_json: bool, verbose: bool,
                 started: float, conflicting: dict) -> None:
    """``dpsyn run --dataset``: the related-tables run (flows/dataset.py: dpsyn.relational.run_dataset and its
    MLflow run). ``config``: a YAML/JSON file of DatasetRunConfig settings (as the dataset deployment takes them:
    gate, budget, scrub, ...), the options given on top."""

    def go():
        from dpsyn.config import DatasetRunConfig
        from dpsyn.errors import ConfigError

        given = [k for k, v in conflicting.items() if v is not None]
        if given:
            raise ConfigError(f"{', '.join(given)} cannot be combined with --dataset (the dataset schema names the "
                              "tables and their schemas)")
        settings = _merged(read_config_file(config, "DatasetRunConfig settings"), dataset=dataset, data=data,
                           out=out, privacy={"epsilon": epsilon, "delta": delta}, overwrite=overwrite or None,
                           allow_uninformative=allow_uninformative or None)
        if settings.get("data") is None or settings.get("out") is None:
            raise ConfigError("--dataset needs --data (the folder holding the dataset's files) and --out (or data: "
                              "and out: in the --config file)")
        if not Path(settings["data"]).is_dir():
            raise ConfigError(f"--data must be the folder holding the dataset's files with --dataset: "
                              f"{settings['data']}")
        if epsilon is not None and not epsilon > 0:
            raise ConfigError(f"--epsilon must be greater than 0 (got {epsilon:g})")
        settings["privacy"] = {"epsilon": 1.0, **(settings.get("privacy") or {})}
        cfg = _make_config(DatasetRunConfig, **settings)
        return cfg.out, _run_flow(cfg, as_json=as_json, verbose=verbose, dataset=True)

    out, manifest = handle(go, as_json=as_json, verbose=verbose)
    p = manifest["privacy"]
    if as_json:
        typer.echo(json.dumps({"output": str(out), "mlflow_run_id": manifest["mlflow_run_id"],
                               "epsilon_spent": p["epsilon_spent"], "delta": p["delta"],
                               "neighbouring": p["neighbouring"], "tables": manifest["tables"],
                               "gate": manifest["gate"]["verdict"],
                               "seconds": round(time.time() - started, 1)}))
    else:
        rows = ", ".join(f"{t} {v['rows']:,} rows" for t, v in manifest["tables"].items())
        typer.echo(f"published {out} ({rows})\n  ε spent {p['epsilon_spent']:.4f} at δ={p['delta']:g} "
                   f"({p['accountant']}), for {p['neighbouring']}\n  gate across tables: {manifest['gate']['verdict']}"
                   f" ({manifest['gate']['checks']} checks; report {out / 'validation_report.html'}); every table "
                   f"watermarked and recorded in the lineage ledger\n  MLflow run {manifest['mlflow_run_id']}")


@app.command()
def run(
    data: Annotated[Path | None, typer.Option(
        "--data", help="The sensitive table (CSV or Parquet); with --dataset, the folder holding its files.")] = None,
    schema: Annotated[str | None, typer.Option("--schema", help="Schema YAML path or shipped schema name.")] = None,
    out: Annotated[Path | None, typer.Option("--out", help="Output folder (must not exist or be empty).")] = None,
    dataset: Annotated[str | None, typer.Option(
        "--dataset", help="A dataset schema (YAML path or shipped name, e.g. synthea): related tables keyed to a "
                          "persons' table, synthesized with a per-person guarantee; one file per table.")] = None,
    allow_uninformative: Annotated[bool, typer.Option(
        "--allow-uninformative", help="With --dataset: publish a dataset too small for the gate across tables to "
                                      "judge at this ε (the manifest says so); a failing gate still publishes "
                                      "nothing.")] = False,
    epsilon: Annotated[float | None, typer.Option(
        "--epsilon", help="Total privacy budget ε for the run (> 0; default 1).")] = None,
    delta: DeltaOpt = None,
    synthesizer: Annotated[SynthesizerName | None, typer.Option(
        "--synthesizer",
        help="Synthesizer: pgm (the default rule's choice), dpgen, dpdsyn.")] = None,
    epochs: Annotated[int | None, typer.Option("--epochs", help="Training epochs (synthesizer setting).")] = None,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace a non-empty output folder.")] = False,
    rules: Annotated[str | None, typer.Option(
        "--rules", help="Rules YAML the gate checks (default: the rules shipped for the schema, if any).")] = None,
    config: Annotated[Path | None, typer.Option(
        "--config", help="YAML/JSON of dpsyn.config.SynthesizeConfig (every setting, as a deployment takes them; "
                         "with --dataset, of dpsyn.config.DatasetRunConfig); the options given here override it."
    )] = None,
    as_json: JsonOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Synthesize a DP table from DATA and publish it at OUT if the validation gate passes."""
    started = time.time()
    set_env_defaults(verbose)
    if dataset is not None:
        _run_dataset(dataset, data, out, epsilon=epsilon, delta=delta, overwrite=overwrite,
                     allow_uninformative=allow_uninformative, config=config, as_json=as_json, verbose=verbose,
                     started=started, conflicting={"--schema": schema, "--synthesizer": synthesizer,
                                                   "--epochs": epochs, "--rules": rules})
        return

    def go():
        from dpsyn.errors import ConfigError

        if epsilon is not None and not epsilon > 0:
            raise ConfigError(f"--epsilon must be greater than 0 (got {epsilon:g})")
        settings = _merged(
            read_config_file(config, "SynthesizeConfig settings"), data=data, table_schema=schema, out=out, overwrite=overwrite or None,
            synthesizer=synthesizer.value if synthesizer is not None else None,
            privacy={"epsilon": epsilon, "delta": delta},
            validation={"rules": str(Path(rules).absolute()) if Path(rules).suffix else rules} if rules else None)
        for key, option in (("data", "--data"), ("table_schema", "--schema"), ("out", "--out")):
            if settings.get(key) is None:
                raise ConfigError(f"{option} is required (or {key}: in the --config file)")
        if epochs is not None:
            name = settings.get("synthesizer") or "pgm"
            settings["synthesizer_config"] = {**(settings.get("synthesizer_config") or {}),
                                              **_epochs_setting(name, epochs)}
        cfg = _make_config(**settings)
        _preflight(cfg)
        return _run_flow(cfg, as_json=as_json, verbose=verbose)

    result = handle(go, as_json=as_json, verbose=verbose)
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
    set_env_defaults(verbose)

    def go():
        from dpsyn.demo import build_demo_input

        dest = Path(out).absolute()
        # Replace the output only if it is an earlier dpsyn output (it has our manifest).
        overwrite = dest.is_dir() and (dest / "manifest.json").is_file()
        from dpsyn.home import scratch_dir

        with scratch_dir("demo-input") as tmp:  # raw fake identifiers: private, swept if the process is killed
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

    result = handle(go, as_json=as_json, verbose=verbose)
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


def _skip_teardown(status: dict) -> None:
    """The last exit handler: every other one has run (Prefect's, MLflow's, logging's, multiprocessing's: all were
    registered later, and exit handlers run last-registered first) and non-daemon threads are joined, so what is
    left is the interpreter's teardown of torch, JAX and some thousand modules, 3-4 s after a run. Flush the
    standard streams and leave with the command's exit code."""
    import os

    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(status["code"])


def main() -> None:
    import atexit

    status = {"code": 1}  # an uncaught exception: Python prints it before the exit handlers run
    atexit.register(_skip_teardown, status)  # first registered, so it runs last
    try:
        app()
        status["code"] = 0
    except SystemExit as e:
        # click reports usage errors with exit code 2 already; keep other codes as they are
        code = e.code
        status["code"] = code if isinstance(code, int) else (0 if code is None else 1)
        sys.exit(e.code)


if __name__ == "__main__":
    main()
