"""``dpsyn schema ...``: help writing a table schema.

``dpsyn schema suggest --data PATH`` prints a YAML draft (kinds, PII classes,
tiers, quasi-identifier flags) from the column names and a bounded sample of
rows, for a person to review. It stores nothing and prints no data value; bounds
and domains are left as TODO placeholders to fill from public documentation.

Wired into the main app with ``register(app)``; heavy imports happen inside the command.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from dpsyn_cli.common import (
    handle,
)

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    """Add the ``schema`` command group to ``app``."""
    schema_app = typer.Typer(
        name="schema",
        help="Help writing a table schema (kinds, PII classes, tiers).",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
    )

    @schema_app.command("suggest")
    def suggest(
        data: Annotated[Path, typer.Option("--data", help="A CSV or Parquet file to sample.")],
        header: Annotated[
            bool, typer.Option("--header/--no-header", help="Whether the first CSV line names the columns.")
        ] = True,
        sep: Annotated[str, typer.Option("--sep", help="CSV field separator (one character).")] = ",",
        rows: Annotated[
            int, typer.Option("--rows", min=1, max=100_000, help="Read at most this many rows (nothing is stored).")
        ] = 200,
        verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Show tracebacks.")] = False,
    ) -> None:
        """Print a draft schema (YAML) for DATA to stdout, for a person to review and complete.

        Kinds, PII classes, tiers and quasi-identifier flags are guessed from the
        column names and at most ROWS rows. No value, bound or category of the
        data is printed: fill the TODO placeholders from public documentation.
        """

        def go() -> str:
            from dpsyn.schema_suggest import suggest_schema

            return suggest_schema(data, header=header, sep=sep, rows=rows)

        text = handle(go, as_json=False, verbose=verbose)
        typer.echo(text, nl=False)

    app.add_typer(schema_app, name="schema")
