"""``dpsyn validate``: the validation gate on a real and a synthetic file.

``dpsyn validate --real PATH --synthetic PATH --schema S --population P [--rules R] [--epsilon E] [--json]``
reads the real file as its schema declares (and masks it), the synthetic one
as published, and runs the gate (dpsyn.validation): per-column KS / TVD and
the clinical-logic rules. Reading the real file spends ``--epsilon`` of the
population's lifetime budget (reserved in the budget ledger before the file is
opened; ``dpsyn budget show`` lists it). Exit 0: every check passed; 1: some
failed (each is listed); 2: bad input.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from dpsyn_cli.common import (
    EXIT_CHECK,
    EXIT_INPUT,
    JsonOpt,
    VerboseOpt,
    fail,
    handle,
    print_verdict,
    set_env_defaults,
)

__all__ = ["register", "validate"]



def validate(
    real: Annotated[Path, typer.Option("--real", help="The real table (read as the schema declares).")],
    synthetic: Annotated[Path, typer.Option("--synthetic", help="The synthetic table (CSV or Parquet).")],
    schema: Annotated[str, typer.Option("--schema", help="Schema YAML path or shipped schema name.")],
    rules: Annotated[
        str | None, typer.Option("--rules", help="Rules YAML path or shipped name; default: the schema's shipped rules.")
    ] = None,
    population: Annotated[
        str | None, typer.Option("--population", help="The population (the people) the real file belongs to: its "
                                 "lifetime budget pays for the read. Required (default: the schema's `population`).")
    ] = None,
    epsilon: Annotated[float, typer.Option("--epsilon", help="ε spent reading the real file (noisy count and the "
                                           "gate's one Gaussian release).")] = 0.1,
    delta: Annotated[float | None, typer.Option("--delta", help="δ; default: a power of ten ≤ 1/(10·N) for the "
                                                "schema's public population size N, else 1e-6.")] = None,
    ledger: Annotated[str | None, typer.Option("--ledger", help="Budget ledger (default $DPSYN_BUDGET_URL, else "
                                               "$DPSYN_HOME/budget.db).")] = None,
    html: Annotated[
        Path | None, typer.Option("--html", help="Also write the self-contained HTML report (verdict, plots) here.")
    ] = None,
    as_json: JsonOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Run the validation gate; exit 1 if any check fails, listing each."""

    set_env_defaults(verbose)
    if epsilon <= 0:
        raise fail("--epsilon must be > 0", EXIT_INPUT, as_json=as_json)
    for p, what in ((real, "--real"), (synthetic, "--synthetic")):
        if not p.is_file():
            raise fail(f"{what} file not found: {p}", EXIT_INPUT, as_json=as_json)

    def go():
        import warnings

        from dpsyn.errors import ConfigError
        from dpsyn.schema import load_schema
        from dpsyn.validation import ValidationConfig, validate_files

        table = load_schema(schema)
        pop = population or table.population
        if not pop:
            raise ConfigError(f"dpsyn validate reads a private file: name its population with --population (schema "
                              f"'{table.name}' declares none), so the read is charged to that population's budget")
        with warnings.catch_warnings():
            if not verbose:
                warnings.simplefilter("ignore")
            cfg = ValidationConfig(rules=rules or "auto")
            return validate_files(real, synthetic, table, cfg, epsilon=epsilon, delta=delta, population=pop,
                                  ledger_url=ledger)

    rep, privacy = handle(go, as_json=as_json, verbose=verbose, progress=f"validate {Path(synthetic).name}")
    if html is not None:
        html.parent.mkdir(parents=True, exist_ok=True)
        html.write_text(rep.to_html(title=f"dpsyn validate: {Path(synthetic).name}", context={
            "real": Path(real).name, "synthetic": Path(synthetic).name,
            "epsilon spent": f"{privacy['epsilon_spent']:.4f}", "delta": f"{privacy['delta']:g}"}))
    failed = rep.failures()
    if as_json:
        typer.echo(json.dumps({"passed": rep.is_valid(), "verdict": rep.verdict, "failed": [c.name for c in failed],
                               "uninformative": [c.name for c in rep.uninformative()],
                               "checks": [c.model_dump() for c in rep.checks], "noise_std": rep.noise_std,
                               "epsilon_spent": privacy["epsilon_spent"], "delta": privacy["delta"]}))
    else:
        print_verdict(rep, html)
        typer.echo(f"ε spent {privacy['epsilon_spent']:.4f} at δ={privacy['delta']:g}")
    if not rep.is_valid():
        raise typer.Exit(EXIT_CHECK)


def register(app: typer.Typer) -> None:
    app.command("validate")(validate)
