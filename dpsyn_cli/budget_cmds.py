"""``dpsyn budget``: the lifetime privacy budget of each population (dataset).

``dpsyn budget show [--population P] [--ledger URL] [--json]`` prints each
population's cap, spent, reserved and remaining ε (and δ) and the runs behind
them; ``dpsyn budget set-cap --population P --epsilon E [--delta D] [--unit COLUMN | --per-row]``
sets a population's lifetime cap (the only way to raise one) and, optionally, what its ε counts; ``dpsyn budget close RUN`` settles the open
reservation of a run whose process is gone (``show`` marks it DEAD) at its full reservation. Exit codes:
0 = ok; 2 = bad input (bad ledger URL or file, bad number, a run still running or unknown).
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


def _owner(r) -> str:
    """Who holds an open reservation: running, DEAD (its process is gone: close it), or unknown (other host)."""
    if r.owner_state is None:
        return f"closed by {r.closed_by}" if r.closed_by else "-"
    where = f"pid {r.owner_pid}" + (f" on {r.owner_host}" if r.owner_host else "") if r.owner_pid else "not recorded"
    if r.owner_state == "dead":
        return f"DEAD ({where}; dpsyn budget close {r.run_id})"
    if r.owner_state == "unknown":
        beat = f", heartbeat {_when(r.heartbeat_at)}" if r.heartbeat_at else ""
        return f"unknown ({where}{beat})"
    return f"running ({where})"


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
    summary.add_column("ε counts", overflow="fold")
    for col in ("cap ε", "spent ε", "reserved ε", "remaining ε", "cap δ", "spent δ", "reserved δ", "runs"):
        summary.add_column(col, justify="right")
    for p in pops:
        summary.add_row(Text(p.population), Text(p.counts), _cap(p.cap_epsilon), _num(p.spent_epsilon),
                        _num(p.reserved_epsilon), _num(p.remaining_epsilon), _cap(p.cap_delta),
                        _num(p.spent_delta, "g"), _num(p.reserved_delta, "g"), str(len(p.runs)))
    console.print(summary)
    for p in pops:
        if not p.runs:
            continue
        runs = Table(title=escape(f"runs of {p.population} (reserved → spent)"), title_justify="left")
        runs.add_column("run id", overflow="fold")
        for col in ("purpose", "state", "owner", "data read"):
            runs.add_column(col)
        runs.add_column("ε", justify="right")
        runs.add_column("δ", justify="right")
        runs.add_column("updated (UTC)", no_wrap=True)
        runs.add_column("note", overflow="fold")
        for r in p.runs:
            runs.add_row(Text(r.run_id), Text(r.purpose), r.state, _owner(r), "yes" if r.data_read else "no",
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
        unit: Annotated[str | None, typer.Option(
            "--unit", help="Declare that the population's ε counts per person: the schema's privacy_unit column "
                           "(e.g. patient_nbr). Fixed once recorded; omitted: the first run fixes it.")] = None,
        per_row: Annotated[bool, typer.Option(
            "--per-row", help="Declare that the population's ε counts per row (runs without a privacy unit).")] = False,
        ledger: LedgerOpt = None,
        as_json: JsonOpt = False,
        verbose: VerboseOpt = False,
    ) -> None:
        """Set a population's lifetime privacy cap (raising it is a decision for the data owner), and optionally
        what its ε counts (--unit COLUMN per person, --per-row), before any run fixes it."""

        set_env_defaults(verbose)

        def go():
            from dpsyn.errors import InputError
            from dpsyn.privacy.budget import BudgetLedger
            from dpsyn.privacy.budget.models import ROW_UNIT

            if unit is not None and per_row:
                raise InputError("--unit and --per-row cannot be combined: a population counts per person or per row")
            led = BudgetLedger(ledger)
            led.set_cap(population, epsilon=epsilon, delta=delta, unit=ROW_UNIT if per_row else unit)
            return led, led.status(population)[0]

        led, p = handle(go, as_json=as_json, verbose=verbose)
        if as_json:
            typer.echo(json.dumps({"ledger": str(led.path), **p.model_dump(mode="json", exclude={"runs"})}))
        else:
            typer.echo(f"population {p.population}: cap ε={_cap(p.cap_epsilon)}, δ={_cap(p.cap_delta)}; "
                       f"spent ε={p.spent_epsilon:.4g}, reserved ε={p.reserved_epsilon:.4g}, "
                       f"remaining ε={_num(p.remaining_epsilon)}; ε counts {p.counts}")

    @budget.command("close")
    def close(
        run_id: Annotated[str, typer.Argument(help="The run whose reservation to settle (see dpsyn budget show).")],
        by: Annotated[str | None, typer.Option("--by", help="Who closes it (default: user@host).")] = None,
        force: Annotated[bool, typer.Option("--force", help="Close even if its pid is alive on this host (a reused "
                                                            "pid, or a run on another host known to be gone).")] = False,
        ledger: LedgerOpt = None,
        as_json: JsonOpt = False,
        verbose: VerboseOpt = False,
    ) -> None:
        """Settle the open reservation of a run that will never finish (killed): charged at its full reservation."""

        set_env_defaults(verbose)

        def go():
            import getpass
            import socket

            from dpsyn.privacy.budget import BudgetLedger

            led = BudgetLedger(ledger)
            return led.close(run_id, by=by or f"{getpass.getuser()}@{socket.gethostname()}", force=force)

        r = handle(go, as_json=as_json, verbose=verbose)
        if as_json:
            typer.echo(json.dumps(r.model_dump(mode="json")))
        else:
            typer.echo(f"run {r.run_id}: closed by {r.closed_by}; charged ε={r.charged_epsilon:.4g}, "
                       f"δ={r.charged_delta:g} of population {r.population} (its full reservation)")

    app.add_typer(budget, name="budget")
