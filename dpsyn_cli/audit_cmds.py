"""``dpsyn audit``: trace a synthetic file to its lineage, verify our watermark, review privacy risk.

Exit codes: 0 = ours (a verified per-record code or a statistical match);
1 = nothing of ours detected; 2 = bad input (missing or unreadable file,
row out of range, bad schema or ledger URL). Output never shows a data value
or a key, only codes, key ids, hashes, ε and p-values.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from dpsyn_cli.common import (
    EXIT_CHECK,
    EXIT_OK,
    AccountantName,
    AuditMethod,
    AuditModel,
    JsonOpt,
    LedgerOpt,
    VerboseOpt,
    handle,
    set_env_defaults,
)

PathArg = Annotated[Path, typer.Argument(help="A synthetic file (CSV or Parquet), whole or a fragment.")]
SchemaOpt = Annotated[
    str | None,
    typer.Option("--schema", help="Schema name or YAML path for the statistical test (default: those of recorded runs)."),
]
LineageOpt = Annotated[
    str | None, typer.Option("--ledger", help="Lineage ledger: sqlite:///PATH, a file or postgresql://... (default $DPSYN_HOME/lineage.db).")
]
AlphaOpt = Annotated[float, typer.Option("--alpha", help="Significance level of the statistical test.")]


def _lineage_lines(lin, runs: dict[str, dict] | None = None) -> list[str]:
    r = lin.release
    model = r.model.name + (f" v{r.model.version}" if r.model.version else "") if r.model.name else "not registered"
    window = ""
    if r.batch.window_start or r.batch.window_end:
        window = f", window {r.batch.window_start or '?'} … {r.batch.window_end or '?'}"
    checks = r.validation
    verdict = "passed" if checks.passed else ("failed" if checks.passed is False else "unknown")
    return [
        f"  dataset         {r.dataset.dataset_id}  sha256 {r.dataset.sha256[:16]}…  rows {r.dataset.rows}",
        f"  model           {model} ({r.model.synthesizer or '?'}, schema {r.model.table_schema or '?'})",
        f"  training run    {r.model.run_id} (MLflow)",
        *_orchestration_lines((runs or {}).get(r.model.run_id)),
        f"  training batch  {r.batch.batch_id[:16]}…  {r.batch.source}, {r.batch.rows} rows{window}",
        f"  privacy         ε={r.privacy.epsilon:.4f}  δ={r.privacy.delta:g}  ({r.privacy.accountant})",
        f"  validation      {verdict} ({len(checks.checks)} checks"
        + (f", failed: {', '.join(checks.failed)}" if checks.failed else "") + ")"
        + (f"  report {checks.path}" if checks.path else ""),
        f"  watermark       code {r.code}, key {r.key_id}, {r.timestamp}",
    ]


PREFECT_TIMEOUT_S = 3.0  # a Prefect API that does not answer within this is one line of the trace, not a wait


def _shown(t) -> list:
    """The lineages the trace prints: those of the codes found, else the statistical match's first five."""
    seen, out = set(), []
    for c in t.codes:
        if c.lineage is not None and c.code not in seen:
            seen.add(c.code)
            out.append(c.lineage)
    return out or list(t.candidates[:5])


def _prefect_flow_run(flow_run_id: str, timeout: float = PREFECT_TIMEOUT_S) -> dict:
    """The flow run's name and state from the Prefect API at PREFECT_API_URL (a short timeout, no retries); a
    ``note`` instead when no API is configured or it cannot be reached."""
    import os

    api = os.environ.get("PREFECT_API_URL")
    if not api:
        return {"note": "PREFECT_API_URL is not set: its state was not looked up"}
    try:
        from uuid import UUID

        from prefect.client.orchestration import get_client
        from prefect.settings import PREFECT_API_URL, PREFECT_CLIENT_MAX_RETRIES, temporary_settings

        with temporary_settings({PREFECT_API_URL: api, PREFECT_CLIENT_MAX_RETRIES: 0}), \
                get_client(sync_client=True, httpx_settings={"timeout": timeout}) as client:
            fr = client.read_flow_run(UUID(flow_run_id))
        return {"name": fr.name, "state": fr.state.name if fr.state else None}
    except Exception as e:  # unreachable, unknown id, refused: one line, never a traceback
        return {"note": f"the Prefect API at PREFECT_API_URL was not reached or does not know it ({type(e).__name__})"}


def orchestration(t) -> dict[str, dict]:
    """For each MLflow run of the lineages the trace shows: the orchestrator's run that made it (the MLflow tag
    ``dpsyn.run_id``: under Prefect the flow run's id) with its name and, when a Prefect API is configured, its
    state. Ids, names and state names only; a ``note`` says what could not be read (the tracking store does not
    hold the run, no Prefect API, an API that does not answer)."""
    import os

    known = {}  # MLflow run id → the dpsyn run's id the lineage ledger recorded (the flow run's under Prefect)
    for lin in _shown(t):
        known.setdefault(lin.release.model.run_id, lin.release.model.orchestrator_run_id)
    runs = list(known)
    if not runs:
        return {}
    out: dict[str, dict] = {}
    # an MLflow server that does not answer: one try of a few seconds, not MLflow's minutes of retries
    quick = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0", "MLFLOW_HTTP_REQUEST_TIMEOUT": "5"}
    saved = {k: os.environ.get(k) for k in quick}
    os.environ.update({k: v for k, v in quick.items() if saved[k] is None})
    try:
        for run_id in runs:
            out[run_id] = _orchestration_of(run_id, known.get(run_id))
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
    return out


def _orchestration_of(run_id: str, recorded: str | None = None) -> dict:
    """``recorded``: the dpsyn run id the lineage ledger holds for this MLflow run (used when MLflow cannot say)."""
    try:
        from tasks.tracking import orchestration as read_tags

        info = read_tags(run_id)
        missing = None if info is not None else "the MLflow run is not in this tracking store (MLFLOW_TRACKING_URI)"
    except Exception as e:
        info, missing = None, f"the MLflow run was not read ({type(e).__name__})"
    if info is None and recorded:  # the lineage ledger recorded the run's id: the flow run's, under Prefect
        info = {"orchestrator": "prefect", "run_id": recorded, "run_name": None}
    if info is None:
        return {"note": missing}
    entry = {"orchestrator": info["orchestrator"], "run_id": info["run_id"], "name": info["run_name"]}
    if info["orchestrator"] == "prefect" and info["run_id"]:
        found = _prefect_flow_run(info["run_id"])
        entry.update({"name": found.get("name", entry["name"]), "state": found.get("state"),
                      **({"note": found["note"]} if "note" in found else {})})
    if missing:  # the id came from the lineage ledger
        entry["note"] = "; ".join(x for x in (entry.get("note"), missing + ": run id from the lineage ledger") if x)
    return entry


def _orchestration_lines(entry: dict | None) -> list[str]:
    """``Prefect flow run: <id> <name> (<state>)``, and a note on what could not be looked up."""
    if not entry:
        return []
    if entry.get("orchestrator") == "prefect" and entry.get("run_id"):
        line = f"  Prefect flow run: {entry['run_id']} {entry.get('name') or ''}".rstrip()
        lines = [line + (f" ({entry['state']})" if entry.get("state") else "")]
        return lines + ([f"    ({entry['note']})"] if entry.get("note") else [])
    if entry.get("run_id"):
        return [f"  run id          {entry['run_id']} (not a Prefect flow run)"]
    return [f"  flow run        unknown: {entry['note']}"] if entry.get("note") else []


def _print_trace(t, *, as_json: bool) -> None:
    runs = orchestration(t)
    if as_json:
        typer.echo(json.dumps({"traced": t.traced, **t.model_dump(mode="json"), "orchestration": runs}))
        return
    where = f"{Path(t.path).name}" + (f" row {t.row}" if t.row is not None else "")
    typer.echo(f"{where}: {t.verdict}: {t.message}")
    if t.file_matches_release:
        typer.echo(f"  the file is byte-identical to released dataset {t.file_matches_release}")
    shown = set()
    for c in t.codes:
        if c.lineage is not None and c.code not in shown:
            shown.add(c.code)
            typer.echo(f"code {c.code} ({c.status}, {c.rows} row(s)):")
            for line in _lineage_lines(c.lineage, runs):
                typer.echo(line)
    if not shown and t.candidates:
        typer.echo(f"releases made with key {t.candidates[0].release.key_id} (most recent first):")
        for lin in t.candidates[:5]:
            for line in _lineage_lines(lin, runs):
                typer.echo(line)
        if len(t.candidates) > 5:
            typer.echo(f"  … and {len(t.candidates) - 5} more")


def _run(kind: str, path, *, row=None, schema, ledger, alpha, as_json: bool, verbose: bool):
    """trace_file (kind "trace") or verify_file ("verify") with the CLI's error handling."""

    set_env_defaults(verbose)

    def go():
        from dpsyn.lineage import Ledger, trace_file, verify_file

        _check_alpha(alpha)
        if kind == "verify":
            return verify_file(path, ledger=Ledger(ledger), schema=schema, alpha=alpha)
        return trace_file(path, row, ledger=Ledger(ledger), schema=schema, alpha=alpha)

    return handle(go, as_json=as_json, verbose=verbose)


PopulationOpt = Annotated[str | None, typer.Option(
    "--population", help="The population the real rows belong to (default: the schema's `population`, else its "
                         "name): the read is recorded in its budget ledger as a non-DP access.")]


def record_owner_access(ledger: str | None, population: str | None, schema, tool: str, note: str) -> None:
    """Owner tools read real rows without DP: record the access before reading, so the budget ledger shows it."""
    from dpsyn.privacy.budget import BudgetLedger

    BudgetLedger(ledger).record_access(population or schema.population or schema.name, tool, note)


def register(app: typer.Typer) -> None:
    """Add the ``audit`` sub-commands to ``app``."""
    audit = typer.Typer(name="audit", help="Trace synthetic files to their lineage; verify our watermark.",
                        no_args_is_help=True)

    @audit.command("trace")
    def trace(
        path: PathArg,
        row: Annotated[int | None, typer.Option("--row", help="Trace only this data row (0-based).")] = None,
        schema: SchemaOpt = None,
        ledger: LineageOpt = None,
        alpha: AlphaOpt = 1e-3,
        as_json: JsonOpt = False,
        verbose: VerboseOpt = False,
    ) -> None:
        """Print the lineage of a file or of one row: code, dataset, model, run, training batch, ε, validation."""
        t = _run("trace", path, row=row, schema=schema, ledger=ledger, alpha=alpha, as_json=as_json, verbose=verbose)
        _print_trace(t, as_json=as_json)
        raise typer.Exit(EXIT_OK if t.traced else EXIT_CHECK)

    @audit.command("verify")
    def verify(
        path: PathArg,
        schema: SchemaOpt = None,
        ledger: LineageOpt = None,
        alpha: AlphaOpt = 1e-3,
        as_json: JsonOpt = False,
        verbose: VerboseOpt = False,
    ) -> None:
        """Check per-record codes against the ledger and run the statistical test; print p-value and key id."""
        t = _run("verify", path, schema=schema, ledger=ledger, alpha=alpha, as_json=as_json, verbose=verbose)
        s = t.statistical or {}
        if as_json:
            typer.echo(json.dumps({
                "detected": t.traced, "method": t.method, "p_value": s.get("p_value"), "z": s.get("z"),
                "key_id": s.get("key_id"), "test": s.get("test"), "units": s.get("units"), "n_values": s.get("n_values"),
                "schema": t.schema_used, "codes": {c.code: c.status for c in t.codes},
                "rows_verified": {c.code: c.rows_verified for c in t.codes},
                "file_matches_release": t.file_matches_release, "verdict": t.verdict, "message": t.message,
            }))
        else:
            from dpsyn.lineage.models import VERDICTS

            verdict = "ours" if t.traced else ("NOT VERIFIED" if t.verdict in ("copied", "unverified")
                                               else "NOT DETECTED")
            typer.echo(f"{Path(t.path).name}: {verdict} ({t.verdict}: {VERDICTS[t.verdict]})")
            for c in t.codes[:10]:
                checked = f", content verified in {c.rows_verified}" if c.rows_verified is not None else ""
                typer.echo(f"  code {c.code}: {c.status.replace('_', ' ')} ({c.rows} row(s){checked})")
            if s:
                key = s.get("key_id") or "none"
                typer.echo(f"  statistical test: p={s['p_value']:.3g}  key id matched: {key}  "
                           f"(best test {s['test']}, z={s['z']:.2f}; {s['units']} units over {s['n_values']} values; "
                           f"schema {t.schema_used})")
            else:
                typer.echo("  statistical test: not run (no schema with matching columns, or no key)")
        raise typer.Exit(EXIT_OK if t.traced else EXIT_CHECK)

    @audit.command("batch")
    def batch(
        data: Annotated[Path, typer.Option("--data", help="The file to check (the data owner's copy).")],
        batch_id: Annotated[str, typer.Option("--batch-id", help="A release's training batch id (its manifest).")],
        ledger: LineageOpt = None,
        as_json: JsonOpt = False,
        verbose: VerboseOpt = False,
    ) -> None:
        """Is DATA the training batch BATCH_ID of a release? Compares keyed digests (needs the pipeline's key).

        Exit 0: the file is the batch's input, byte for byte; 1: it is not, or the key is not available here.
        """
        set_env_defaults(verbose)

        def go():
            from dpsyn.lineage import Ledger
            from dpsyn.lineage.batch import verify_batch
            from dpsyn.watermark import load_keys

            if not data.is_file():
                from dpsyn.errors import InputError

                raise InputError(f"--data file not found: {data}")
            return verify_batch(data, batch_id, ledger=Ledger(ledger), keys=load_keys())

        v = handle(go, as_json=as_json, verbose=verbose)
        if as_json:
            typer.echo(v.model_dump_json())
        else:
            typer.echo({"match": f"{data.name} is the input of training batch {batch_id} (key {v.key_id})",
                        "differs": f"{data.name} is NOT the input of training batch {batch_id}",
                        "no_key": f"the batch's digests were made with key {v.key_id}, which is not available here",
                        "no_digest": f"training batch {batch_id} was recorded without digests"}[v.verdict])
        raise typer.Exit(EXIT_OK if v.verdict == "match" else EXIT_CHECK)

    @audit.command("risk")
    def risk(
        train: Annotated[Path, typer.Option("--train", help="The real rows the synthesizer was trained on.")],
        holdout: Annotated[Path, typer.Option("--holdout", help="Real rows of the same population it never saw.")],
        synthetic: Annotated[Path, typer.Option("--synthetic", help="The synthetic table.")],
        schema: Annotated[str, typer.Option("--schema", help="Schema YAML path or shipped schema name.")],
        sensitive: Annotated[list[str] | None, typer.Option(
            "--sensitive", help="Sensitive column (repeat); default: the schema's L2 categorical columns.")] = None,
        population: PopulationOpt = None,
        ledger: LedgerOpt = None,
        as_json: JsonOpt = False,
        verbose: VerboseOpt = False,
    ) -> None:
        """Attribute inference (TPR at low FPR, members vs non-members) and distance to closest record.

        Reads real rows without noise: a review tool for the data owner, its output is not a DP release. The
        read is recorded in the population's budget ledger as a non-DP access (``dpsyn budget show``).
        """

        set_env_defaults(verbose)

        def go():
            from dpsyn.audit.risk import attribute_inference, dcr_diagnostic
            from dpsyn.io import coerce_to_schema, read_table
            from dpsyn.lineage import read_any
            from dpsyn.masking import mask_table
            from dpsyn.schema import load_schema
            from dpsyn.watermark import WM_COLUMN, strip_text_codes

            sch = load_schema(schema)
            record_owner_access(ledger, population, sch, "audit risk", f"train {train.name}, holdout {holdout.name}")
            a, _ = mask_table(read_table(train, sch), sch)
            h, _ = mask_table(read_table(holdout, sch), sch)
            syn = strip_text_codes(read_any(synthetic).drop(columns=[WM_COLUMN], errors="ignore"))
            present = sch.model_copy(update={"columns": [c for c in sch.columns if c.name in syn.columns]})
            syn = coerce_to_schema(syn, present, source="synthetic file", check_domains=False)
            return attribute_inference(a, h, syn, sch, sensitive or None), dcr_diagnostic(a, h, syn, sch)

        attrs, dcr = handle(go, as_json=as_json, verbose=verbose, progress="attribute inference and DCR")
        if as_json:
            typer.echo(json.dumps({"attributes": [x.model_dump() for x in attrs], "dcr": dcr.model_dump()}))
            raise typer.Exit(EXIT_OK)
        for x in attrs:
            t = x.tpr_at_fpr
            typer.echo(f"{x.column}: accuracy members {x.accuracy_members:.3f}, non-members {x.accuracy_non_members:.3f} "
                       f"(majority {x.accuracy_majority:.3f}); member advantage {x.member_advantage:+.3f}; "
                       f"TPR at FPR 0.1%/1%/10%: {t['0.001']:.3f}/{t['0.01']:.3f}/{t['0.1']:.3f}")
        typer.echo(f"DCR: {dcr.share_closer_to_train:.3f} of {dcr.rows} synthetic rows closer to training than holdout "
                   f"rows (0.5: no preference); exact copies of training rows {dcr.exact_copies_of_train:.3f}, of "
                   f"holdout rows {dcr.exact_copies_of_holdout:.3f}")
        raise typer.Exit(EXIT_OK)

    @audit.command("fairness")
    def fairness(
        data: Annotated[Path, typer.Option("--data", help="The sensitive table (CSV or Parquet).")],
        schema: Annotated[str, typer.Option("--schema", help="Schema YAML path or shipped schema name.")],
        group: Annotated[str, typer.Option("--group", help="Column whose values are the groups (e.g. sex, race).")],
        test: Annotated[Path | None, typer.Option("--test", help="Held-out real rows (default: a seeded 20% split).")] = None,
        model: Annotated[AuditModel, typer.Option("--model", help="task (the DP task model) or dpdsyn.")] = "task",
        method: Annotated[AuditMethod, typer.Option("--method", help="dpsgd, dpsgd-s, or both (side by side).")] = "dpsgd",
        epsilon: Annotated[float, typer.Option("--epsilon", help="ε of every audited model.")] = 10.0,
        rounds: Annotated[int, typer.Option("--rounds", help="R: the audit trains 2R models.")] = 20,
        rows: Annotated[int, typer.Option("--rows", help="Training rows drawn for the audit, persons under a schema's privacy unit "
                                                  "(0: all).")] = 2000,
        seed: Annotated[int, typer.Option("--seed")] = 0,
        accountant: Annotated[AccountantName, typer.Option("--accountant",
                                                           help="prv or rdp (faster to calibrate).")] = "prv",
        plot: Annotated[Path | None, typer.Option("--plot", help="Write the GPR bar chart here (PNG).")] = None,
        group_clip: Annotated[list[str] | None, typer.Option(
            "--group-clip", metavar="KEY=VALUE",
            help="A DP-SGD-S setting (GroupClipConfig, docs/privacy.md), repeatable: e.g. --group-clip rule=quantile "
                 "--group-clip floor=0.05 for the seed's rule.")] = None,
        population: PopulationOpt = None,
        ledger: LedgerOpt = None,
        as_json: JsonOpt = False,
        verbose: VerboseOpt = False,
    ) -> None:
        """Per-group membership-inference risk (GPR) and Δ = max − min, with utility and outcome fairness.

        Trains 2R + 1 models on the private rows: a review tool for the data owner; its output is per-group
        aggregates, not a DP release (docs/privacy.md).
        """

        set_env_defaults(verbose)
        method, model, accountant = (str(getattr(x, "value", x)) for x in (method, model, accountant))

        def go():
            from pydantic import ValidationError

            from dpsyn.audit.fairness_audit import run_fairness_audit
            from dpsyn.config import FairnessAuditConfig
            from dpsyn.errors import ConfigError
            from dpsyn.schema import load_schema

            record_owner_access(ledger, population, load_schema(schema), "audit fairness", f"data {data.name}")
            methods = ["dpsgd", "dpsgd-s"] if method == "both" else [method]
            clip = _key_values(group_clip or [], "--group-clip")
            try:
                configs = [FairnessAuditConfig(data=data, table_schema=schema, group=group, test=test, model=model,
                                               method=m, epsilon=epsilon, rounds=rounds, rows=rows or None, seed=seed,
                                               accountant=accountant, group_clip=clip)
                           for m in methods]
            except ValidationError as e:
                bad = "; ".join(f"--{'-'.join(map(str, x['loc'])).replace('_', '-')}: {x['msg'].removeprefix('Value error, ')}"
                                for x in e.errors())
                raise ConfigError(f"bad option: {bad}") from None
            return [run_fairness_audit(c) for c in configs]

        results = handle(go, as_json=as_json, verbose=verbose, progress=f"fairness audit of {group}")
        if plot is not None:
            from dpsyn.audit.fairness import plot_group_risk

            names = {"dpsgd": "DP-SGD", "dpsgd-s": "DP-SGD-S"}
            plot_group_risk({names[r.config["method"]]: r.risk for r in results}, plot)
        if as_json:
            typer.echo(json.dumps([r.model_dump(mode="json") for r in results]))
            raise typer.Exit(EXIT_OK)
        for r in results:
            typer.echo(r.to_markdown() + "\n")
        if plot is not None:
            typer.echo(f"bar chart: {plot}")
        raise typer.Exit(EXIT_OK)

    app.add_typer(audit, name="audit")


def _key_values(items: list[str], option: str) -> dict:
    """``["rule=quantile", "floor=0.05"]`` → ``{"rule": "quantile", "floor": 0.05}`` (values parsed as JSON when they can be)."""
    from dpsyn.errors import ConfigError

    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"{option} takes KEY=VALUE (got '{item}'), e.g. {option} rule=quantile")
        try:
            out[key.strip()] = json.loads(value)
        except json.JSONDecodeError:
            out[key.strip()] = value
    return out


def _check_alpha(alpha: float) -> None:
    if not 0 < alpha < 1:
        from dpsyn.errors import ConfigError

        raise ConfigError(f"--alpha must be between 0 and 1 (got {alpha:g})")
