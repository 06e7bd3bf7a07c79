"""The synthesize run's stages after the input is prepared: counts, fit, sample, watermark, gate, publish.

Each stage reads its inputs from the run's work folder and writes its outputs there (:class:`WorkDir`); it
returns only small, value-free summaries (ids, ε, DP statistics). The run's accountant is saved to the folder
after every mechanism, so a crash mid-stage still leaves what was spent on record.
"""

from __future__ import annotations

import json
import logging
import os
import pickle
import shutil
import uuid
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd

from dpsyn.config import SynthesizeConfig
from dpsyn.pipeline.context import RunContext
from dpsyn.pipeline.workdir import WorkDir
from dpsyn.privacy import NoiseSource, NoisyCounts, PrivacyAccountant
from dpsyn.progress import report
from dpsyn.schema import load_schema

logger = logging.getLogger(__name__)

__all__ = ["count_estimate", "fit", "load_accountant", "load_counts", "privacy_summary", "publish", "release_counts",
           "sample", "validate", "watermark"]


def _done(stage: str) -> None:
    report(f"stage: {stage}", 1, 1)


def _heartbeat(ctx: RunContext) -> None:
    """Tell the budget ledger the run is alive (``dpsyn budget show`` shows it for runs on other hosts)."""
    from dpsyn.privacy.budget import BudgetLedger

    try:
        BudgetLedger(ctx.ledger_url).heartbeat(ctx.budget_key)
    except Exception:  # a heartbeat is advice: a busy or missing ledger must not stop the run
        logger.debug("budget heartbeat not recorded")


def load_accountant(work: WorkDir) -> PrivacyAccountant:
    return PrivacyAccountant.from_state_dict(work.read_json(WorkDir.PRIVACY))


def _save_accountant(work: WorkDir, accountant: PrivacyAccountant) -> None:
    work.write_json(WorkDir.PRIVACY, accountant.state_dict())


def load_counts(work: WorkDir) -> NoisyCounts:
    return NoisyCounts.from_dict(work.read_json(WorkDir.COUNTS))


def count_estimate(counts: dict) -> int:
    """The public (noisy) count of all real rows read, from :func:`release_counts`' result."""
    return NoisyCounts.from_dict(counts).estimate()


def release_counts(config: SynthesizeConfig, ctx: RunContext) -> dict:
    """The run's accountant and its first mechanism: the noisy sizes of the training rows (and the holdout), one
    Gaussian release; the validation gate's share is planned next. Returns the noisy counts (DP)."""
    from dpsyn.privacy import plan_counts
    from dpsyn.privacy import release_counts as release
    from dpsyn.privacy.unit import PERSON_CODE, plan_unit_sizes, release_unit_sizes, unit_sizes
    from dpsyn.validation import plan_validation

    work = ctx.workdir
    batch = work.read_json(WorkDir.BATCH)
    groups = {"train": batch["train_rows"]}
    if work.exists(WorkDir.HOLDOUT):
        groups["holdout"] = batch["holdout_rows"]
    schema = load_schema(config.table_schema)
    accountant = PrivacyAccountant(epsilon=ctx.epsilon, delta=ctx.delta, accountant=config.privacy.accountant,
                                   **schema.unit_kwargs())
    plan = plan_counts(accountant, config.privacy.count_share, groups=tuple(groups))
    noise = NoiseSource(secure=config.privacy.secure_rng)
    try:
        sizes_sigma = plan_unit_sizes(accountant, config.privacy.count_share) if schema.privacy_unit else None
        counts = release(groups, plan, accountant=accountant, noise=noise)
        if schema.privacy_unit is not None:  # how many rows the training persons have: one release of its own
            persons = pd.read_parquet(work / WorkDir.MASKED, columns=[PERSON_CODE])[PERSON_CODE].to_numpy()
            sizes = unit_sizes(persons, schema.privacy_unit.max_rows_per_person)
            counts = counts.with_unit_sizes(release_unit_sizes(sizes, sizes_sigma, accountant=accountant, noise=noise))
        plan_validation(accountant, config.validation,
                        n_train=counts.estimate("train") if "holdout" in groups else None)
    finally:
        _save_accountant(work, accountant)
    work.write_json(WorkDir.COUNTS, counts.to_dict())
    return counts.to_dict()


def fit(config: SynthesizeConfig, ctx: RunContext) -> dict:
    """Fit the DP synthesizer on the run's accountant (the counts and the gate's share already on it)."""
    _heartbeat(ctx)
    from dpsyn.synth import create

    work = ctx.workdir
    schema = load_schema(config.table_schema)
    masked = pd.read_parquet(work / WorkDir.MASKED)
    accountant = load_accountant(work)
    counts = load_counts(work)
    synth = create(config.synthesizer, config.synthesizer_config, privacy=config.privacy)
    training = masked
    if config.validation.audit:  # canaries join by secret coins; the real rows' guarantee is unchanged
        from dpsyn.audit.canaries import insert_canaries

        coins = NoiseSource(secure=config.privacy.secure_rng)
        training, canaries, included = insert_canaries(masked, schema, config.validation.audit_canaries, noise=coins)
        canaries.to_parquet(work / WorkDir.CANARIES, index=False)
        np.save(work / WorkDir.CANARY_COINS, included)
        counts = counts.with_extra("canaries", config.validation.audit_canaries / 2)  # expected, public
    try:
        synth.fit(training, schema, accountant=accountant, rows=counts)
    finally:  # a crash mid-training still leaves what was spent on record
        _save_accountant(work, accountant)
    with open(work / WorkDir.MODEL, "wb") as f:
        pickle.dump(synth, f)
    _done("DP synthesis")
    return {"params": synth.params(), "training": getattr(synth, "training_", {}), **accountant.summary()}


def sample(config: SynthesizeConfig, ctx: RunContext) -> int:
    """Sample the synthetic table, as many rows as ``n_samples`` or else the noisy count of all real rows; more rows
    than a partition (``scale.partition_rows``) are drawn in chunks of that size (each a full ``sample`` call:
    raked to the model's noisy marginals on its own), streamed to disk."""
    _heartbeat(ctx)
    from dpsyn.pipeline.merge import merge_parquet
    from dpsyn.pipeline.partition import partition_seed

    work = ctx.workdir
    with open(work / WorkDir.MODEL, "rb") as f:
        synth = pickle.load(f)
    from dpsyn.validation import gate_rules
    from dpsyn.validation.repair import enforce_hard_rules

    schema = load_schema(config.table_schema)
    rules = gate_rules(config.validation, schema)
    n = config.n_samples or load_counts(work).estimate()
    chunk = config.scale.partition_rows or n

    def draw(rows: int, seed) -> pd.DataFrame:
        """Sample, then redraw the rows that break a hard rule from those that do not (post-processing)."""
        df = synth.sample(rows, random_state=seed, within_bin=config.within_bin)
        df, replaced = enforce_hard_rules(df, rules, schema, np.random.default_rng(seed))
        if replaced:
            logger.info("sample: %d synthetic rows broke a hard rule and were redrawn from compliant rows", replaced)
            df = synth.with_fresh_persons(df, np.random.default_rng(seed))  # a redrawn row copied its person
        return df

    if n <= chunk:
        draw(n, config.sample_seed).to_parquet(work / WorkDir.SYNTHETIC, index=False)
    else:
        parts = []
        for i, start in enumerate(range(0, n, chunk)):  # post-processing of the DP model: no budget
            parts.append(work / f"synthetic-{i:05d}.parquet")
            draw(min(chunk, n - start), partition_seed(config.sample_seed, i)).to_parquet(parts[-1], index=False)
            report("sample (chunks)", i + 1, -(-n // chunk))
        merge_parquet(parts, work / WorkDir.SYNTHETIC)
        for p in parts:
            p.unlink()
    _done("sample")
    return n


def watermark(config: SynthesizeConfig, ctx: RunContext, *, batch_id: str, key=None) -> dict:
    """Embed the keyed statistical mark (if enabled), then the per-record HMAC code in ``_wm`` and text cells.

    ``key``: the pipeline's watermark key (default :func:`dpsyn.watermark.load_key`)."""
    _heartbeat(ctx)
    from dpsyn.schema import ColumnKind
    from dpsyn.watermark import apply_watermark, embed_statistical_with_report, load_key, record_code

    work = ctx.workdir
    schema = load_schema(config.table_schema)
    key = key or load_key()
    ts = datetime.now(UTC).isoformat(timespec="seconds")
    code = record_code(key, batch_id=batch_id, run_id=ctx.tracker_run_id or ctx.run_id, timestamp=ts)
    _keep_batch_digests(config, work, key)
    synth = pd.read_parquet(work / WorkDir.SYNTHETIC)
    wm = config.watermark
    stat = None
    if wm.statistical:
        synth, rep = embed_statistical_with_report(
            synth, schema, key, strength=wm.strength, grid=wm.grid, categorical=wm.categorical,
            random_state=config.sample_seed,
        )
        stat = {"strength": wm.strength, "grid": wm.grid, "categorical": wm.categorical,
                "columns": sorted(rep.moved), "moved": sum(rep.moved.values())}
    text_cols = [c.name for c in schema.columns if c.kind == ColumnKind.text and c.name in synth.columns]
    apply_watermark(synth, code, key=key, text_columns=text_cols).to_parquet(work / WorkDir.WATERMARKED, index=False)
    _done("watermark")
    return {"code": code, "key_id": key.key_id, "timestamp": ts, "statistical": stat}


def _keep_batch_digests(config: SynthesizeConfig, work: WorkDir, key) -> None:
    """Keyed digests of the training batch (the input file, the masked rows) for the lineage ledger: HMACs under
    the pipeline's key, so the owner can verify a file against a release while nobody without the key can test
    a guess of the rows against them (the batch id itself is random). Kept in the work folder until publish."""
    from dpsyn.io import file_sha256
    from dpsyn.watermark import batch_digest

    batch = work.read_json(WorkDir.BATCH)
    work.write_json(WorkDir.BATCH_DIGESTS, {
        "input_digest": batch_digest(key, file_sha256(config.data), kind="input"),
        "content_digest": batch_digest(key, batch["content_sha256"], kind="content"), "digest_key_id": key.key_id})


def validate(config: SynthesizeConfig, ctx: RunContext) -> dict:
    """The DP fidelity gate on exactly what would be published (less ``_wm``); its reads of the real rows are
    charged to the run's accountant. Writes the report (JSON, HTML, Great Expectations Data Docs)."""
    _heartbeat(ctx)
    from dpsyn.load import strip_watermark
    from dpsyn.validation import RealStatistics, gate_rules
    from dpsyn.validation import validate as run_gate

    work = ctx.workdir
    schema = load_schema(config.table_schema)
    accountant = load_accountant(work)
    ho, counts_file = work / WorkDir.HOLDOUT, work / WorkDir.REAL_STATISTICS
    real_stats = RealStatistics.load(counts_file) if counts_file.exists() else None
    # the rows themselves only where a check needs them: counts from scratch, or the utility check's DP model
    real = pd.read_parquet(work / WorkDir.MASKED) if real_stats is None or ho.exists() else None
    synth = strip_watermark(pd.read_parquet(work / WorkDir.WATERMARKED))
    noise = NoiseSource(secure=config.privacy.secure_rng)
    holdout = pd.read_parquet(ho) if ho.exists() else None
    try:
        rep = run_gate(real, synth, schema, config.validation, accountant=accountant, noise=noise, holdout=holdout,
                       real_stats=real_stats, counts=load_counts(work))
    finally:
        _save_accountant(work, accountant)
    accountant.check()
    if work.exists(WorkDir.CANARIES):  # the in-run one-run audit (post-processing: no budget)
        from dpsyn.audit.canaries import audit_model

        with open(work / WorkDir.MODEL, "rb") as f:
            model = pickle.load(f)
        result = audit_model(model, pd.read_parquet(work / WorkDir.CANARIES), np.load(work / WorkDir.CANARY_COINS),
                             pd.read_parquet(work / WorkDir.SYNTHETIC), schema, delta=accountant.delta)
        rep.add_audit(result, claimed_epsilon=accountant.target_epsilon)
    (work / WorkDir.REPORT).write_text(rep.model_dump_json(indent=2))
    context = {"schema": config.table_schema, "synthesizer": config.synthesizer,
               "epsilon spent (run, so far)": f"{accountant.epsilon():.4f}", "delta": f"{accountant.delta:g}",
               "accountant": accountant.name}
    (work / WorkDir.REPORT_HTML).write_text(rep.to_html(title=f"dpsyn validation: {schema.name}", context=context))
    rules = gate_rules(config.validation, schema)
    if rules is not None:  # GE's own result and Data Docs, for the synthetic (public) table only
        from dpsyn.validation.rules import data_docs

        ge_result, _ = data_docs(synth, rules, schema, work / WorkDir.GE_DOCS)
        (work / WorkDir.GE_DOCS / WorkDir.GE_RESULT).write_text(
            json.dumps(ge_result, indent=2, default=str))
    _done("validate")
    return rep.model_dump()


def privacy_summary(ctx: RunContext) -> dict | None:
    """The run's accountant summary as last saved (None if no mechanism was planned yet)."""
    work = ctx.workdir
    if not work.exists(WorkDir.PRIVACY):
        return None
    return load_accountant(work).summary(curve=True)


def publish(config: SynthesizeConfig, ctx: RunContext, manifest: dict, *, out: Path) -> dict:
    """Write the synthetic table, report and manifest into a staging folder, record the release in the lineage
    ledger, then rename the folder to ``out`` at once (a published file is always traceable)."""
    from dpsyn.io import file_sha256, staged_dir, write_table
    from dpsyn.lineage import Release, record_release

    work = ctx.workdir
    final = Path(out).absolute()
    dataset_id = uuid.uuid4().hex
    def remember(stage: Path) -> None:  # a stop before the rename: abort removes the folder and withdraws the record
        work.write_json(WorkDir.STAGING, {"path": str(stage), "dataset_id": dataset_id,
                                          "lineage_url": config.lineage_url})

    with staged_dir(out, overwrite=config.overwrite, on_stage=remember) as stage:
        synth = pd.read_parquet(work / WorkDir.WATERMARKED)
        write_table(synth, stage / "synthetic.csv")
        shutil.copy(work / WorkDir.REPORT, stage / "validation_report.json")
        shutil.copy(work / WorkDir.REPORT_HTML, stage / WorkDir.REPORT_HTML)
        manifest = {**manifest, "dataset_id": dataset_id, "synthetic_sha256": file_sha256(stage / "synthetic.csv")}
        (stage / "manifest.json").write_text(json.dumps(manifest, indent=2, default=str))
        release = Release.from_manifest(
            manifest, dataset_sha256=manifest["synthetic_sha256"], path=final / "synthetic.csv", rows=len(synth),
            batch_digests=work.read_json(WorkDir.BATCH_DIGESTS),
            validation=work.read_json(WorkDir.REPORT), validation_path=final / "validation_report.json",
            window_start=config.batch_window_start, window_end=config.batch_window_end,
            model_name=manifest.get("model", {}).get("name"), model_version=manifest.get("model", {}).get("version"),
            dataset_id=dataset_id,
        )
        record_release(release, url=config.lineage_url)
        os.chmod(stage, 0o755)
    _done("publish")
    return {"output": str(final), "dataset_id": dataset_id, "synthetic_sha256": manifest["synthetic_sha256"]}
