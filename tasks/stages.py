"""The ``synthesize`` pipeline's stages as Prefect tasks (scrub and mask run per partition: tasks/scale.py).

Each task reads its inputs from, and writes its outputs to, a private work
folder (mode 0700, removed when the flow ends), and returns only small,
value-free summaries (counts, hashes, ε).
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
import uuid
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd
from prefect import task
from prefect.cache_policies import NO_CACHE

from dpsyn.config import SynthesizeConfig
from dpsyn.home import dpsyn_home
from dpsyn.privacy import PrivacyAccountant
from dpsyn.progress import report

PRIVATE = dict(cache_policy=NO_CACHE, persist_result=False, retries=0)

SCRUBBED = "scrubbed.parquet"
MASKED = "masked.parquet"
MODEL = "model.pkl"
PRIVACY = "privacy.json"
SYNTHETIC = "synthetic.parquet"
WATERMARKED = "watermarked.parquet"
HOLDOUT = "holdout.parquet"
REPORT = "validation.json"
REPORT_HTML = "validation_report.html"
GE_DOCS = "ge_data_docs"  # Great Expectations Data Docs of the synthetic table (schemas with rules)
GE_RESULT = "ge_validation_result.json"
CANARIES = "canaries.parquet"  # in-run audit (validation.audit): made-up records and their secret coins
CANARY_COINS = "canary_coins.npy"
REAL_STATISTICS = "real_statistics.npz"  # exact real-side counts merged from the partitions (tasks/scale.py)
BATCH_DIGESTS = "batch_digests.json"  # keyed digests of the batch, for the lineage ledger only
BATCH = "batch.json"  # the training batch: random id, exact row counts, content hash (private: never published)
COUNTS = "counts.json"  # the released noisy row counts (DP; they set every size-dependent quantity)
OPERATOR = "operator"  # reports with exact counts for the data owner, kept in $DPSYN_HOME/operator/<run id>


def _done(stage: str) -> None:
    report(f"stage: {stage}", 1, 1)


@task(name="make-workdir", **PRIVATE)
def make_workdir() -> str:
    """A fresh private folder for this run's intermediate files."""
    root = dpsyn_home() / "work"
    root.mkdir(parents=True, exist_ok=True)
    work = root / uuid.uuid4().hex
    work.mkdir(mode=0o700)
    return str(work)


@task(name="remove-workdir", **PRIVATE)
def remove_workdir(work: str, keep_reports_as: str | None = None) -> None:
    """Remove the work folder; with ``keep_reports_as`` (a run id), first move its operator reports (exact counts
    of the scrub and mask stages: inside the trust boundary) to ``$DPSYN_HOME/operator/<run id>/`` (mode 0700)."""
    reports = Path(work) / OPERATOR
    if keep_reports_as and reports.is_dir():
        root = dpsyn_home() / OPERATOR
        root.mkdir(mode=0o700, parents=True, exist_ok=True)
        dest = root / keep_reports_as
        if not dest.exists():
            shutil.move(str(reports), dest)
            os.chmod(dest, 0o700)
    shutil.rmtree(work, ignore_errors=True)


def check_guarantee(config: SynthesizeConfig) -> dict:
    """The guarantee the run will state (manifest, MLflow), after refusing what would break it: noise from a seeded
    (non-secure) source, and k-anonymity (a data-dependent recoding with no DP bound) unless explicitly accepted."""
    from dpsyn.errors import ConfigError
    from dpsyn.privacy import NEIGHBOURING

    if not config.privacy.secure_rng:
        raise ConfigError("privacy.secure_rng: false draws DP noise from a seeded generator (library tests only); a "
                          "synthesize run publishes and registers, which needs the secure noise source")
    if config.mask.k is not None:
        if not config.accept_non_dp_masking:
            raise ConfigError("mask.k (k-anonymity) recodes the rows by a data-dependent rule with no DP bound, so the "
                              "run's (ε, δ) would not hold for the input; set accept_non_dp_masking: true to run "
                              "anyway (the manifest then states no DP guarantee), or drop mask.k")
        return {"neighbouring": NEIGHBOURING, "differential_privacy": False,
                "statement": "none for the input rows: k-anonymity recoded them by a data-dependent rule before the "
                             "DP mechanisms ran (accept_non_dp_masking)"}
    return {"neighbouring": NEIGHBOURING, "differential_privacy": True,
            "statement": f"the whole release is (ε, δ)-DP for {NEIGHBOURING} of the scrubbed and masked input "
                         "(docs/privacy.md)"}


def count_estimate(counts: dict) -> int:
    """The public (noisy) count of all real rows read, from :func:`release_counts`' result."""
    from dpsyn.privacy import NoisyCounts

    return NoisyCounts.from_dict(counts).estimate()


def _run_accountant(config: SynthesizeConfig, schema) -> PrivacyAccountant:
    p = config.privacy
    return PrivacyAccountant(epsilon=p.epsilon, delta=p.resolved_delta(schema.population_size),
                             accountant=p.accountant)


def load_counts(work: str):
    from dpsyn.privacy import NoisyCounts

    return NoisyCounts.from_dict(json.loads((Path(work) / COUNTS).read_text()))


@task(name="release-counts", **PRIVATE)
def release_counts(config: SynthesizeConfig, work: str) -> dict:
    """The run's accountant, and its first mechanism: the noisy sizes of the training rows (and the holdout), one
    Gaussian release; the validation gate's share is planned next. Returns the noisy counts (DP)."""
    from dpsyn.privacy import NoiseSource, plan_counts
    from dpsyn.privacy import release_counts as release
    from dpsyn.schema import load_schema
    from dpsyn.validation import plan_validation

    schema = load_schema(config.table_schema)
    batch = json.loads((Path(work) / BATCH).read_text())
    groups = {"train": batch["train_rows"]}
    if (Path(work) / HOLDOUT).exists():
        groups["holdout"] = batch["holdout_rows"]
    accountant = _run_accountant(config, schema)
    plan = plan_counts(accountant, config.privacy.count_share, groups=tuple(groups))
    try:
        counts = release(groups, plan, accountant=accountant, noise=NoiseSource(secure=config.privacy.secure_rng))
        plan_validation(accountant, config.validation,
                        n_train=counts.estimate("train") if "holdout" in groups else None)
    finally:
        (Path(work) / PRIVACY).write_text(json.dumps(accountant.state_dict()))
    (Path(work) / COUNTS).write_text(json.dumps(counts.to_dict()))
    return counts.to_dict()


@task(name="fit-synthesizer", **PRIVATE)
def fit(config: SynthesizeConfig, work: str) -> dict:
    """Fit the DP synthesizer on the run's accountant (the counts and the gate's share already on it)."""
    from dpsyn.privacy import PrivacyAccountant
    from dpsyn.schema import load_schema
    from dpsyn.synth import create

    schema = load_schema(config.table_schema)
    masked = pd.read_parquet(Path(work) / MASKED)
    p = config.privacy
    state = Path(work) / PRIVACY
    accountant = PrivacyAccountant.from_state_dict(json.loads(state.read_text()))
    counts = load_counts(work)
    synth = create(config.synthesizer, config.synthesizer_config, privacy=p)
    training = masked
    if config.validation.audit:  # canaries join by secret coins; the real rows' guarantee is unchanged
        from dpsyn.privacy import NoiseSource
        from dpsyn.privacy.audit import insert_canaries

        coins = NoiseSource(secure=p.secure_rng)
        training, canaries, included = insert_canaries(masked, schema, config.validation.audit_canaries, noise=coins)
        canaries.to_parquet(Path(work) / CANARIES, index=False)
        np.save(Path(work) / CANARY_COINS, included)
        counts = counts.with_extra("canaries", config.validation.audit_canaries / 2)  # expected, public
    try:
        synth.fit(training, schema, accountant=accountant, rows=counts)
    finally:  # a crash mid-training still leaves what was spent on record
        state.write_text(json.dumps(accountant.state_dict()))
    with open(Path(work) / MODEL, "wb") as f:
        pickle.dump(synth, f)
    _done("DP synthesis")
    return {"params": synth.params(), "training": getattr(synth, "training_", {}), **accountant.summary()}


@task(name="sample", **PRIVATE)
def sample(config: SynthesizeConfig, work: str) -> int:
    """Sample the synthetic table, as many rows as ``n_samples`` or else the noisy count of all real rows; more rows
    than a partition (``scale.partition_rows``) are drawn in chunks of that size (each a full ``sample`` call:
    raked to the model's noisy marginals on its own), streamed to disk."""
    with open(Path(work) / MODEL, "rb") as f:
        synth = pickle.load(f)
    n = config.n_samples or load_counts(work).estimate()
    chunk = config.scale.partition_rows or n
    if n <= chunk:
        synth.sample(n, random_state=config.sample_seed).to_parquet(Path(work) / SYNTHETIC, index=False)
    else:
        from dpsyn.scale import merge_parquet, partition_seed

        parts = []
        for i, start in enumerate(range(0, n, chunk)):  # post-processing of the DP model: no budget
            parts.append(Path(work) / f"synthetic-{i:05d}.parquet")
            synth.sample(min(chunk, n - start), random_state=partition_seed(config.sample_seed, i)).to_parquet(
                parts[-1], index=False)
            report("sample (chunks)", i + 1, -(-n // chunk))
        merge_parquet(parts, Path(work) / SYNTHETIC)
        for p in parts:
            p.unlink()
    _done("sample")
    return n


@task(name="watermark", **PRIVATE)
def watermark(config: SynthesizeConfig, work: str, batch_id: str, run_id: str) -> dict:
    """Embed the keyed statistical mark (if enabled), then the per-record HMAC code in ``_wm`` and text cells."""
    from dpsyn.schema import ColumnKind, load_schema
    from dpsyn.watermark import apply_watermark, embed_statistical_with_report, load_key, record_code

    schema = load_schema(config.table_schema)
    if config.watermark.key_block:
        from tasks.audit import key_from_block

        key = key_from_block(config.watermark.key_block)
    else:
        key = load_key()
    ts = datetime.now(UTC).isoformat(timespec="seconds")
    code = record_code(key, batch_id=batch_id, run_id=run_id, timestamp=ts)
    _keep_batch_digests(config, work, key)
    synth = pd.read_parquet(Path(work) / SYNTHETIC)
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
    apply_watermark(synth, code, text_columns=text_cols).to_parquet(Path(work) / WATERMARKED, index=False)
    _done("watermark")
    return {"code": code, "key_id": key.key_id, "timestamp": ts, "statistical": stat}


def _keep_batch_digests(config: SynthesizeConfig, work: str, key) -> None:
    """Keyed digests of the training batch (the input file, the masked rows) for the lineage ledger: HMACs under
    the pipeline's key, so the owner can verify a file against a release while nobody without the key can test
    a guess of the rows against them (the batch id itself is random). Kept in the work folder until publish."""
    from dpsyn.io import file_sha256
    from dpsyn.watermark import batch_digest

    batch = json.loads((Path(work) / BATCH).read_text())
    digests = {"input_digest": batch_digest(key, file_sha256(config.data), kind="input"),
               "content_digest": batch_digest(key, batch["content_sha256"], kind="content"),
               "digest_key_id": key.key_id}
    (Path(work) / BATCH_DIGESTS).write_text(json.dumps(digests))


@task(name="validate", **PRIVATE)
def validate(config: SynthesizeConfig, work: str) -> dict:
    """The DP fidelity gate; its reads of the real rows are charged to the run's accountant."""
    from dpsyn.privacy import NoiseSource, PrivacyAccountant
    from dpsyn.schema import load_schema
    from dpsyn.validation import gate_rules
    from dpsyn.validation import validate as run_gate

    schema = load_schema(config.table_schema)
    state = Path(work) / PRIVACY
    accountant = PrivacyAccountant.from_state_dict(json.loads(state.read_text()))
    from dpsyn.watermark import WM_COLUMN, strip_text_codes

    ho = Path(work) / HOLDOUT
    counts = Path(work) / REAL_STATISTICS
    real_stats = None
    if counts.exists():  # merged exact counts of the partitions (flows/partitioned.py): noise is added once
        from dpsyn.validation.stats import RealStatistics

        real_stats = RealStatistics.load(counts)
    # the rows themselves only where a check needs them: counts from scratch, or the utility check's DP model
    real = pd.read_parquet(Path(work) / MASKED) if real_stats is None or ho.exists() else None

    # the gate judges exactly what would be published (watermark included), less the code column
    synth = strip_text_codes(pd.read_parquet(Path(work) / WATERMARKED).drop(columns=[WM_COLUMN], errors="ignore"))
    noise = NoiseSource(secure=config.privacy.secure_rng)
    holdout = pd.read_parquet(ho) if ho.exists() else None
    try:
        rep = run_gate(real, synth, schema, config.validation, accountant=accountant, noise=noise, holdout=holdout,
                       real_stats=real_stats, counts=load_counts(work))
    finally:
        state.write_text(json.dumps(accountant.state_dict()))
    accountant.check()
    if (Path(work) / CANARIES).exists():  # the in-run one-run audit (post-processing: no budget)
        from dpsyn.privacy.audit import audit_model

        with open(Path(work) / MODEL, "rb") as f:
            model = pickle.load(f)
        result = audit_model(model, pd.read_parquet(Path(work) / CANARIES), np.load(Path(work) / CANARY_COINS),
                             pd.read_parquet(Path(work) / SYNTHETIC), schema, delta=accountant.delta)
        rep.add_audit(result, claimed_epsilon=accountant.target_epsilon)
    (Path(work) / REPORT).write_text(rep.model_dump_json(indent=2))
    context = {"schema": config.table_schema, "synthesizer": config.synthesizer,
               "epsilon spent (run, so far)": f"{accountant.epsilon():.4f}", "delta": f"{accountant.delta:g}",
               "accountant": accountant.name}
    (Path(work) / REPORT_HTML).write_text(rep.to_html(title=f"dpsyn validation: {schema.name}", context=context))
    rules = gate_rules(config.validation, schema)
    if rules is not None:  # GE's own result and Data Docs, for the synthetic (public) table only
        from dpsyn.validation.rules import data_docs

        ge_result, _ = data_docs(synth, rules, schema, Path(work) / GE_DOCS)
        (Path(work) / GE_DOCS / GE_RESULT).write_text(json.dumps(ge_result, indent=2, default=str))
    from tasks.artifacts import publish_validation_report

    publish_validation_report(rep)
    _done("validate")
    return rep.model_dump()


@task(name="privacy-summary", **PRIVATE)
def privacy_summary(work: str) -> dict | None:
    """The run's accountant summary as last saved (None if synthesis never started)."""
    from dpsyn.privacy import PrivacyAccountant

    state = Path(work) / PRIVACY
    if not state.exists():
        return None
    return PrivacyAccountant.from_state_dict(json.loads(state.read_text())).summary(curve=True)


@task(name="publish", **PRIVATE)
def publish(config: SynthesizeConfig, work: str, manifest: dict) -> dict:
    """Write the synthetic table, report and manifest, record the release in the lineage ledger, then
    rename the folder into place at once (a published file is always traceable)."""
    from dpsyn.io import file_sha256, staged_dir, write_table
    from dpsyn.lineage import Release, record_release

    final = Path(config.out).absolute()
    dataset_id = uuid.uuid4().hex
    with staged_dir(config.out, overwrite=config.overwrite) as stage:
        synth = pd.read_parquet(Path(work) / WATERMARKED)
        write_table(synth, stage / "synthetic.csv")
        shutil.copy(Path(work) / REPORT, stage / "validation_report.json")
        shutil.copy(Path(work) / REPORT_HTML, stage / REPORT_HTML)
        manifest = {**manifest, "dataset_id": dataset_id, "synthetic_sha256": file_sha256(stage / "synthetic.csv")}
        (stage / "manifest.json").write_text(json.dumps(manifest, indent=2, default=str))
        digests = json.loads((Path(work) / BATCH_DIGESTS).read_text())
        release = Release.from_manifest(
            manifest, dataset_sha256=manifest["synthetic_sha256"], path=final / "synthetic.csv", rows=len(synth),
            batch_digests=digests,
            validation=json.loads((Path(work) / REPORT).read_text()), validation_path=final / "validation_report.json",
            window_start=config.batch_window_start, window_end=config.batch_window_end,
            model_name=manifest.get("model", {}).get("name"), model_version=manifest.get("model", {}).get("version"),
            dataset_id=dataset_id,
        )
        record_release(release, url=config.lineage_url)
        os.chmod(stage, 0o755)
    _done("publish")
    return {"output": str(final), "dataset_id": dataset_id, "synthetic_sha256": manifest["synthetic_sha256"]}
