"""``dpsyn scrub`` and ``dpsyn scan``: PII commands.

``dpsyn scrub --data PATH --schema PATH --out PATH``
    reads the table as its schema declares, scrubs PII (dpsyn.pii), applies
    the sensitivity masking (dpsyn.masking) and writes the result atomically
    (CSV or Parquet, by the suffix of ``--out``). Exit 2 for bad input, 1 when
    PII is left after scrubbing (nothing is written).
``dpsyn scan PATH...``
    searches files and folders (CSV, Parquet, JSON, text logs, SQLite stores
    such as MLflow's and Prefect's, artifact folders) and exits 1 if it finds
    PII, printing the entity type, file and location of each finding, never
    the value.

Wire into the main app with ``register(app)``. Heavy imports (Presidio,
spaCy, pandas) happen inside the commands.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Annotated

import typer

from dpsyn_cli.common import (
    EXIT_CHECK,
    EXIT_INCOMPLETE,
    EXIT_INPUT,
    JsonOpt,
    VerboseOpt,
    fail,
    handle,
    read_config_file,
    set_env_defaults,
)

__all__ = ["register", "scan", "scrub"]

ConfigOpt = Annotated[
    Path | None,
    typer.Option("--config", help="PII settings (YAML or JSON of dpsyn.pii.ScrubConfig: operators, column_operators, ...)."),
]


def _load_config(path: Path | None, model):
    """A pydantic config from a YAML/JSON file; errors name the field, never the input."""
    from pydantic import ValidationError

    from dpsyn.errors import ConfigError

    if path is None:
        return model()
    raw = read_config_file(path)
    try:
        return model.model_validate(raw)
    except ValidationError as e:
        first = e.errors(include_url=False, include_input=False)[0]
        where = ".".join(str(x) for x in first["loc"])
        raise ConfigError(f"invalid PII setting {where} in {path.name}: {first['msg']}") from None


def scrub(
    data: Annotated[Path, typer.Option("--data", help="The sensitive table (CSV or Parquet).")],
    schema: Annotated[str, typer.Option("--schema", help="Schema YAML path or shipped schema name.")],
    out: Annotated[Path, typer.Option("--out", help="Output file (.csv or .parquet).")],
    config: ConfigOpt = None,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace an existing output file.")] = False,
    as_json: JsonOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Scrub PII from DATA and apply the schema's masking; write the result to OUT."""

    started = time.time()
    set_env_defaults(verbose)
    dest = Path(out)
    if dest.suffix.lower() not in (".csv", ".parquet", ".pq"):
        raise fail(f"--out must end in .csv or .parquet: {dest.name}", EXIT_INPUT, as_json=as_json)
    if dest.exists() and (dest.is_dir() or not overwrite):
        raise fail(f"output exists: {dest} (pass --overwrite to replace a file)", EXIT_INPUT, as_json=as_json)
    if dest.exists() and Path(data).exists() and dest.resolve() == Path(data).resolve():
        raise fail(f"--out is the input file {dest.name}: the input is never modified; choose another --out",
                   EXIT_INPUT, as_json=as_json)

    def go() -> dict:
        from dpsyn.io import read_table, write_table
        from dpsyn.masking import mask_table
        from dpsyn.pii import ScrubConfig, scrub_table
        from dpsyn.schema import load_schema

        cfg = _load_config(config, ScrubConfig)
        sch = load_schema(schema)
        df = read_table(data, sch, check_domains=True)
        clean, rep = scrub_table(df, sch, cfg)
        masked = mask_table(clean, sch)
        masked, mask_rep = masked if isinstance(masked, tuple) else (masked, None)
        dest.parent.mkdir(parents=True, exist_ok=True)
        write_table(masked, dest)
        mask_dict = None
        if mask_rep is not None:
            dump = getattr(mask_rep, "to_dict", None) or getattr(mask_rep, "model_dump", None)
            mask_dict = dump() if dump is not None else None
        return {
            "output": str(dest),
            "rows": int(len(masked)),
            "columns": [str(c) for c in masked.columns],
            "scrub": rep.to_dict(),
            "mask": mask_dict,
        }

    result = handle(go, as_json=as_json, verbose=verbose, progress=f"scrub {Path(data).name}")
    result["seconds"] = round(time.time() - started, 1)
    if as_json:
        typer.echo(json.dumps(result, default=str))
        return
    s = result["scrub"]
    replaced = sum(sum(v.values()) for k, v in s["counts"].items() if k in s["scrubbed_columns"])
    typer.echo(
        f"wrote {result['output']}: {result['rows']} rows, {len(result['columns'])} columns\n"
        f"  PII ({s['mode']} mode): dropped {', '.join(s['dropped_columns']) or 'no columns'}; "
        f"transformed {', '.join(s['transformed_columns']) or 'none'}; "
        f"{replaced} replacement(s) in text column(s) {', '.join(s['scrubbed_columns']) or '(none)'}"
    )


def scan(
    paths: Annotated[list[Path], typer.Argument(help="Files or folders to search (folders recursively).")],
    config: Annotated[
        Path | None, typer.Option("--config", help="Scan settings (YAML or JSON of dpsyn.pii.scan.ScanConfig).")
    ] = None,
    max_rows: Annotated[
        int | None, typer.Option("--max-rows", help="Rows or lines searched per file or table (default: all; a cap "
                                                    "that stops a file early makes the exit code 3).")
    ] = None,
    person_scope: Annotated[
        str | None,
        typer.Option(
            "--person-scope",
            help="Where names are looked for: columns (name columns; default), text (also free-text columns), all, none.",
        ),
    ] = None,
    as_json: JsonOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Search files and folders for PII; exit 1 if any is found. Prints where, never what."""

    set_env_defaults(verbose)
    if max_rows is not None and max_rows < 1:
        raise fail("--max-rows must be at least 1", EXIT_INPUT, as_json=as_json)
    if person_scope is not None and person_scope not in ("columns", "text", "all", "none"):
        raise fail("--person-scope must be one of: columns, text, all, none", EXIT_INPUT, as_json=as_json)

    def go():
        from dpsyn.pii.scan import ScanConfig, scan_paths

        cfg = _load_config(config, ScanConfig)
        update = {k: v for k, v in (("max_rows", max_rows), ("person_scope", person_scope)) if v is not None}
        if update:
            cfg = ScanConfig.model_validate({**cfg.model_dump(), **update})
        return scan_paths(list(paths), config=cfg)

    rep = handle(go, as_json=as_json, verbose=verbose, progress="scan for PII")
    if as_json:
        typer.echo(json.dumps({**rep.to_dict(), "clean": rep.clean}))
    else:
        for f in rep.findings:
            typer.echo(f"{f.entity}\t{f.file}\t{f.location}\t{f.score:.2f}")
        for c in rep.capped:
            typer.echo(f"note: {c['file']}: {c['what']}", err=True)
        searched = f"{len(rep.files_scanned)} file(s) searched, {len(rep.skipped)} skipped ({rep.mode} mode)"
        if rep.clean and rep.capped:
            typer.echo(f"no PII found in what was searched, but {len(rep.capped)} file(s) were searched only in part "
                       f"(a cap): the rest was not looked at; {searched}", err=True)
        elif rep.clean:
            typer.echo(f"no PII found: {searched}")
        else:
            counts = ", ".join(f"{e}={n}" for e, n in rep.counts.items())
            typer.echo(f"PII found: {rep.total_findings} finding(s) ({counts}); {searched}", err=True)
    if not rep.clean:
        raise typer.Exit(EXIT_CHECK)
    if rep.capped:
        raise typer.Exit(EXIT_INCOMPLETE)


def register(app: typer.Typer) -> None:
    """Add ``scrub`` and ``scan`` to a Typer app."""
    app.command("scrub")(scrub)
    app.command("scan")(scan)
