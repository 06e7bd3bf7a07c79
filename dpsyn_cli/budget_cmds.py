"""``dpsyn budget``: the lifetime privacy budget of each population (dataset).

``dpsyn budget show [--population P] [--ledger URL] [--json]`` prints each
population's cap, spent, reserved and remaining ε (and δ) and the runs behind
them; ``dpsyn budget set-cap --population P --epsilon E [--delta D]`` sets a
population's lifetime cap (the only way to raise one). Exit codes: 0 = ok;
2 = bad input (bad ledger URL or file, bad number).
"""

from __future__ import annotations

import json
from typing import Annotated

import typer

from dpsyn_cli.common import (
    JsonOpt,
    LedgerOpt,
    VerboseOpt,
    handle,
    set_env_defaults,
)

__all__ = ["register"]



def _num(x: float | None, fmt: str = ".4g") -> str:
    return "-" if x is None else format(x, fmt)


def _cap(x: float | None) -> str:
    return "unlimited" if x is None else format(x, ".4g")


def _pair(reserved: float, spent: float | None, fmt: str) -> str:
    return format(reserved, fmt) + (f" → {spent:{fmt}}" if spent is not None else "")


def _when(iso: str) -> str:
    return iso.replace("T", " ").removesuffix("+00:00")


def _print_text(ledger, pops) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table
    from rich.text import Text

    console = Console(highlight=False)
    if not console.is_terminal:  # piped or captured: do not fold run ids into an 80-column box
        console = Console(highlight=False, width=160)
    if not pops:
        console.print(f"no privacy budget recorded in {ledger.path}", markup=False)
        return
    summary = Table(title=escape(f"privacy budget ({ledger.path})"), title_justify="left")
    summary.add_column("population", overflow="fold")
    for col in ("cap ε", "spent ε", "reserved ε", "remaining ε", "cap δ", "spent δ", "reserved δ", "runs"):
        summary.add_column(col, justify="right")
    for p in pops:
        summary.add_row(Text(p.population), _cap(p.cap_epsilon), _num(p.spent_epsilon), _num(p.reserved_epsilon),
                        _num(p.remaining_epsilon), _cap(p.cap_delta), _num(p.spent_delta, "g"),
                        _num(p.reserved_delta, "g"), str(len(p.runs)))
    console.print(summary)
    for p in pops:
        if not p.runs:
            continue
        runs = Table(title=escape(f"runs of {p.population} (reserved → spent)"), title_justify="left")
        runs.add_column("run id", overflow="fold")
        for col in ("purpose", "state", "data read"):
            runs.add_column(col)
        runs.add_column("ε", justify="right")
        runs.add_column("δ", justify="right")
        runs.add_column("updated (UTC)", no_wrap=True)
        runs.add_column("note", overflow="fold")
        for r in p.runs:
            runs.add_row(Text(r.run_id), Text(r.purpose), r.state, "yes" if r.data_read else "no",
                         _pair(r.reserved_epsilon, r.spent_epsilon, ".4g"), _pair(r.reserved_delta, r.spent_delta, "g"),
                         _when(r.updated_at), Text(r.note))
        console.print(runs)
    for p in pops:
        if not p.accesses:
            continue
        acc = Table(title=escape(f"non-DP reads of {p.population} by owner tools (not charged; their outputs are "
                                 "not protected and must stay with the data owner)"), title_justify="left")
        acc.add_column("tool")
        acc.add_column("when (UTC)", no_wrap=True)
        acc.add_column("note", overflow="fold")
        for a in p.accesses:
            acc.add_row(Text(a.tool), _when(a.created_at), Text(a.note))
        console.print(acc)


def register(app: typer.Typer) -> None:
    """Add the ``budget`` sub-commands to ``app``."""
    budget = typer.Typer(name="budget", help="The lifetime privacy budget (ε, δ) of each population.",
                         no_args_is_help=True)

    @budget.command("show")
    def show(
        population: Annotated[
            str | None, typer.Option("--population", help="Show only this population (dataset).")
        ] = None,
        ledger: LedgerOpt = None,
        as_json: JsonOpt = False,
        verbose: VerboseOpt = False,
    ) -> None:
        """Print each population's cap, spent, reserved and remaining ε and δ, and the runs behind them."""

        set_env_defaults(verbose)

        def go():
            from dpsyn.privacy.budget import BudgetLedger

            led = BudgetLedger(ledger)
            return led, led.status(population)

        led, pops = handle(go, as_json=as_json, verbose=verbose)
        if as_json:
            typer.echo(json.dumps({"ledger": str(led.path), "populations": [p.model_dump(mode="json") for p in pops]}))
        else:
            _print_text(led, pops)

    @budget.command("set-cap")
    def set_cap(
        population: Annotated[str, typer.Option("--population", help="The population (dataset).")],
        epsilon: Annotated[float, typer.Option("--epsilon", help="Lifetime cap on the sum of its runs' ε (≥ 0).")],
        delta: Annotated[
            float | None, typer.Option("--delta", help="Lifetime cap on the sum of its runs' δ; omitted: no δ cap.")
        ] = None,
        ledger: LedgerOpt = None,
        as_json: JsonOpt = False,
        verbose: VerboseOpt = False,
    ) -> None:
        """Set a population's lifetime privacy cap (raising it is a decision for the data owner)."""

        set_env_defaults(verbose)

        def go():
            from dpsyn.privacy.budget import BudgetLedger

            led = BudgetLedger(ledger)
            led.set_cap(population, epsilon=epsilon, delta=delta)
            return led, led.status(population)[0]

        led, p = handle(go, as_json=as_json, verbose=verbose)
        if as_json:
            typer.echo(json.dumps({"ledger": str(led.path), **p.model_dump(mode="json", exclude={"runs"})}))
        else:
            typer.echo(f"population {p.population}: cap ε={_cap(p.cap_epsilon)}, δ={_cap(p.cap_delta)}; "
                       f"spent ε={p.spent_epsilon:.4g}, reserved ε={p.reserved_epsilon:.4g}, "
                       f"remaining ε={_num(p.remaining_epsilon)}")

    app.add_typer(budget, name="budget")
