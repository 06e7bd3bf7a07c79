"""The release inventory: every value a run writes anywhere, and why writing it is safe.

Each entry classifies the keys of one *place* (the output folder's files, the manifest, MLflow params, metrics,
tags and artifacts, the registry, Prefect artifacts, states and logs, the lineage and budget ledgers) as

* ``public``: public configuration or knowledge (the config, the schema, file names the user gave, ids we drew
  at random, the code's own constants);
* ``dp``: a DP output charged to the run's accountant, or post-processing of DP outputs only; ``how`` names the
  mechanism (its label on the accountant) or what it is computed from;
* ``private``: a function of the private rows without noise, kept inside the trust boundary; ``how`` says where it
  lives and who may read it.

Nothing ``private`` may reach a place that is published (the output folder, MLflow, the registry, Prefect).
``tests/integration/test_release_inventory.py`` runs a ``synthesize`` run, a drift run and a ``validate`` run,
enumerates every key they wrote, and fails on any key that no entry matches, and on any published value that
contains the input's exact row counts or a content hash of its rows. docs/privacy.md carries the argument for
each mechanism named here.

Keys are matched with :func:`fnmatch.fnmatchcase` patterns (``*`` matches anything, ``/`` included); lists in
JSON documents are flattened with ``[]`` (``checks[].value``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Literal

__all__ = ["INVENTORY", "PUBLISHED_PLACES", "Entry", "classify", "flatten_keys", "markdown_table", "unclassified"]

Kind = Literal["public", "dp", "private"]


@dataclass(frozen=True)
class Entry:
    place: str  # e.g. "mlflow.metric"
    pattern: str  # fnmatch pattern over the key
    kind: Kind
    how: str  # public: what it is; dp: the mechanism or what it is computed from; private: where it stays


#: Places a run publishes: a ``private`` entry may not name one of them.
PUBLISHED_PLACES = (
    "output.file", "output.manifest", "output.validation_report", "output.synthetic_column", "mlflow.param",
    "mlflow.metric", "mlflow.tag", "mlflow.artifact", "mlflow.registry_tag", "mlflow.logged_model_tag",
    "prefect.artifact", "prefect.flow_param", "prefect.state", "prefect.log", "validate.output",
)

_VALIDATION = "validation.fidelity (the gate's one Gaussian release)"
_ROWS = "rows (the noisy row counts, one Gaussian release)"
_POST = "post-processing of the DP model and the DP statistics"
_CONFIG = "the run's configuration (SynthesizeConfig / DriftMonitorConfig), given by the user"

_E = Entry
INVENTORY: tuple[Entry, ...] = (
    # -- the output folder ------------------------------------------------------------------------------------------
    _E("output.file", "synthetic.csv", "dp", "samples of the DP model (post-processing), watermarked with keyed codes"),
    _E("output.file", "validation_report.json", "dp", _VALIDATION),
    _E("output.file", "validation_report.html", "dp", _VALIDATION + " drawn as a page"),
    _E("output.file", "manifest.json", "public", "the keys below"),
    _E("output.synthetic_column", "_wm", "public", "the release's record code: HMAC of random ids and a timestamp"),
    _E("output.synthetic_column", "*", "public", "column names of the schema (the values are DP samples)"),
    # -- the manifest -----------------------------------------------------------------------------------------------
    _E("output.manifest", "mlflow_run_id", "public", "id drawn by MLflow"),
    _E("output.manifest", "schema", "public", _CONFIG),
    _E("output.manifest", "synthesizer", "public", _CONFIG),
    _E("output.manifest", "population", "public", "the population named by the config or the schema"),
    _E("output.manifest", "training_batch.batch_id", "public", "uuid4 drawn at random (dpsyn.pipeline.prepare.merge)"),
    _E("output.manifest", "training_batch.source", "public", "the input's file name, given by the user"),
    _E("output.manifest", "training_batch.rows_estimate", "dp", _ROWS),
    _E("output.manifest", "training_batch.window_*", "public", _CONFIG),
    _E("output.manifest", "watermark.code", "public", "HMAC of the random batch id, run id and timestamp"),
    _E("output.manifest", "watermark.key_id", "public", "hash prefix of the pipeline's key"),
    _E("output.manifest", "watermark.timestamp", "public", "wall-clock time of the run"),
    _E("output.manifest", "watermark.statistical", "public", _CONFIG + " (statistical mark off)"),
    _E("output.manifest", "watermark.statistical.strength", "public", _CONFIG),
    _E("output.manifest", "watermark.statistical.grid", "public", _CONFIG),
    _E("output.manifest", "watermark.statistical.categorical", "public", _CONFIG),
    _E("output.manifest", "watermark.statistical.columns[]", "public", "schema columns the mark may move"),
    _E("output.manifest", "watermark.statistical.moved", "dp", "cells of the synthetic table moved by the mark: "
       + _POST),
    _E("output.manifest", "epsilon_spent", "dp", "the accountant's composition of the run's mechanisms (their noise "
       "scales are public or DP)"),
    _E("output.manifest", "delta", "public", "the config's δ or the public rule on the schema's population size"),
    _E("output.manifest", "accountant", "public", _CONFIG),
    _E("output.manifest", "guarantee.*", "public", "the guarantee the code states (dpsyn.privacy.NEIGHBOURING)"),
    _E("output.manifest", "cumulative_epsilon", "dp", "sum of the population's committed ε (budget ledger)"),
    _E("output.manifest", "gate_passed", "dp", "verdict from the gate's noisy statistics: " + _POST),
    _E("output.manifest", "model.name", "public", _CONFIG + " or dpsyn-<schema>"),
    _E("output.manifest", "model.version", "public", "version number the registry assigned (counts runs)"),
    _E("output.manifest", "dataset_id", "public", "uuid4 drawn at random"),
    _E("output.manifest", "synthetic_sha256", "dp", "SHA-256 of synthetic.csv, a DP output"),
    # -- the validation report (every real-side number is a noisy release) -------------------------------------------
    _E("output.validation_report", "checks[].name", "public", "check names from the schema's columns and rules"),
    _E("output.validation_report", "checks[].column", "public", "schema column names"),
    _E("output.validation_report", "checks[].statistic", "public", "statistic kinds"),
    _E("output.validation_report", "checks[].value", "dp", _VALIDATION + "; synthetic-side values: " + _POST),
    _E("output.validation_report", "checks[].threshold", "dp", "config thresholds plus sampling allowances from the "
       "noisy count; rule thresholds from the noisy real rate"),
    _E("output.validation_report", "checks[].limit", "dp", "threshold + z × noise std (from noisy counts)"),
    _E("output.validation_report", "checks[].noise_std", "dp", "σ × sensitivity bound from the noisy counts' lower "
       "bound"),
    _E("output.validation_report", "checks[].passed", "dp", _POST),
    _E("output.validation_report", "histograms[].column", "public", "schema column names"),
    _E("output.validation_report", "histograms[].labels[]", "public", "the schema's categories and bins"),
    _E("output.validation_report", "histograms[].real[]", "dp", _VALIDATION),
    _E("output.validation_report", "histograms[].synthetic[]", "dp", _POST),
    _E("output.validation_report", "histograms[].noise_std", "dp", "σ × sensitivity bound from the noisy counts"),
    _E("output.validation_report", "audit", "dp", "the in-run audit's result: " + _POST + " (off here)"),
    _E("output.validation_report", "audit.*", "dp", "the in-run audit's result: post-processing of the DP model"),
    _E("output.validation_report", "noise_std", "dp", "σ × sensitivity bound from the noisy counts"),
    _E("output.validation_report", "utility", "dp", _VALIDATION + " (no utility check)"),
    _E("output.validation_report", "utility.auc_*", "dp", _VALIDATION),
    _E("output.validation_report", "utility.holdout_rows", "dp", _ROWS),
    _E("output.validation_report", "utility.positive", "public", "the schema's positive target value"),
    _E("output.validation_report", "n_real", "dp", _ROWS),
    _E("output.validation_report", "n_synthetic", "dp", "synthetic rows: the config's n_samples or the noisy count"),
    _E("output.validation_report", "noise_margin", "public", "z of the config's false-alarm rate"),
    _E("output.validation_report", "pair_noise_margin", "public", "z of the config's false-alarm rate over the pairs"),
    # -- dpsyn validate --json (printed to the terminal) ---------------------------------------------------------------
    _E("validate.output", "passed", "dp", _POST),
    _E("validate.output", "failed[]", "public", "names of failed checks (schema columns and rules)"),
    _E("validate.output", "failed", "public", "names of failed checks (none)"),
    _E("validate.output", "checks[].name", "public", "check names"),
    _E("validate.output", "checks[].column", "public", "schema column names"),
    _E("validate.output", "checks[].statistic", "public", "statistic kinds"),
    _E("validate.output", "checks[].value", "dp", _VALIDATION),
    _E("validate.output", "checks[].threshold", "dp", "thresholds and allowances from the noisy count"),
    _E("validate.output", "checks[].limit", "dp", "threshold + z × noise std"),
    _E("validate.output", "checks[].noise_std", "dp", "σ × sensitivity bound from the noisy count"),
    _E("validate.output", "checks[].passed", "dp", _POST),
    _E("validate.output", "noise_std", "dp", "σ × sensitivity bound from the noisy count"),
    _E("validate.output", "epsilon_spent", "dp", "the accountant's composition"),
    _E("validate.output", "delta", "public", "the config's δ or the public rule"),
    # -- MLflow -----------------------------------------------------------------------------------------------------
    _E("mlflow.param", "*noise_seed", "private", "a seed of the DP noise would let anyone subtract it: never logged "
       "(the flow excludes it; insecure, seeded runs are refused)"),
    _E("mlflow.param", "synth.*", "public", "the synthesizer's settings (config; the noise seed is excluded)"),
    _E("mlflow.param", "training.*", "dp", "σ, q, steps and bounds of each mechanism: from public settings and the "
       "noisy count; DP-SGD-S shares and bounds from released noisy counts"),
    *(_E("mlflow.param", f, "public", _CONFIG) for f in ("data", "table_schema", "out", "overwrite", "synthesizer",
                                                            "n_samples", "sample_seed", "experiment", "lineage_url",
                                                            "batch_window_start", "batch_window_end",
                                                            "register_model", "model_name", "versioned_output",
                                                            "accept_non_dp_masking", "reference", "retrain")),
    *(_E("mlflow.param", f"{f}.*", "public", _CONFIG + " (privacy.noise_seed excluded)")
      for f in ("synthesizer_config", "privacy", "scrub", "mask", "validation", "watermark", "budget", "scale",
                "drift", "synthesize")),
    *(_E("mlflow.param", f, "public", _CONFIG + " (an empty setting)")
      for f in ("synthesizer_config", "scrub", "mask", "watermark", "budget", "scale")),
    _E("mlflow.metric", "ks.*", "dp", _VALIDATION),
    _E("mlflow.metric", "tvd.*", "dp", _VALIDATION),
    _E("mlflow.metric", "tvd2.*", "dp", _VALIDATION),
    _E("mlflow.metric", "rule_*", "dp", _VALIDATION),
    _E("mlflow.metric", "auc_drop.*", "dp", _VALIDATION),
    _E("mlflow.metric", "epsilon_lower_bound.*", "dp", "the in-run audit: post-processing"),
    _E("mlflow.metric", "utility_auc_*", "dp", _VALIDATION),
    _E("mlflow.metric", "gate_passed", "dp", _POST),
    _E("mlflow.metric", "gate_failed_checks", "dp", _POST),
    _E("mlflow.metric", "validation_noise_std", "dp", "σ × sensitivity bound from the noisy counts"),
    _E("mlflow.metric", "rows_real_estimate", "dp", _ROWS),
    _E("mlflow.metric", "rows_synthetic", "dp", "the config's n_samples or the noisy count"),
    _E("mlflow.metric", "cumulative_epsilon", "dp", "sum of the population's committed ε"),
    _E("mlflow.metric", "epsilon_spent", "dp", "the accountant's composition"),
    _E("mlflow.metric", "target_epsilon", "public", _CONFIG),
    _E("mlflow.metric", "delta", "public", "the run's δ (config or public rule)"),
    _E("mlflow.metric", "epsilon_alone.*", "dp", "each mechanism's ε alone (public σ, q, T)"),
    _E("mlflow.metric", "noise_multiplier.*", "dp", "σ calibrated from public settings and the noisy count"),
    _E("mlflow.metric", "sample_rate.*", "dp", "q from the noisy count"),
    _E("mlflow.metric", "steps.*", "dp", "T from the noisy count"),
    _E("mlflow.metric", "drifted", "dp", "drift verdict: post-processing of drift.check"),
    _E("mlflow.metric", "max_ks", "dp", "drift.check (one Gaussian release)"),
    _E("mlflow.metric", "max_psi", "dp", "drift.check (one Gaussian release)"),
    _E("mlflow.metric", "rows_reference", "dp", "rows (the drift check's noisy batch sizes)"),
    _E("mlflow.metric", "rows_new", "dp", "rows (the drift check's noisy batch sizes)"),
    _E("mlflow.tag", "mlflow.*", "public", "MLflow's own tags (user, source, run name, logged models)"),
    _E("mlflow.tag", "dpsyn.flow", "public", "the flow's name"),
    _E("mlflow.tag", "dpsyn.data_file", "public", "the input's file name, given by the user"),
    _E("mlflow.tag", "dpsyn.data_path", "public", "the input's path, given by the user (config)"),
    _E("mlflow.tag", "dpsyn.new_batch_file", "public", "the new batch's file name, given by the user"),
    _E("mlflow.tag", "dpsyn.population", "public", "the population named by the config or the schema"),
    _E("mlflow.tag", "dpsyn.reference_*", "public", "registered model name and version"),
    _E("mlflow.tag", "dpsyn.alert", "dp", "a refusal computed from the budget ledger's committed ε"),
    _E("mlflow.tag", "dpsyn.neighbouring", "public", "the guarantee's neighbouring relation"),
    _E("mlflow.tag", "dpsyn.guarantee", "public", "the guarantee the code states"),
    _E("mlflow.tag", "dpsyn.accountant", "public", _CONFIG),
    _E("mlflow.tag", "dpsyn.epsilon_spent", "dp", "the accountant's composition"),
    _E("mlflow.tag", "dpsyn.training_batch", "public", "uuid4 drawn at random"),
    _E("mlflow.tag", "dpsyn.watermark_code", "public", "HMAC of random ids and a timestamp"),
    _E("mlflow.tag", "dpsyn.watermark_key_id", "public", "hash prefix of the pipeline's key"),
    _E("mlflow.tag", "dpsyn.gate_passed", "dp", _POST),
    _E("mlflow.tag", "dpsyn.model_uri", "public", "id drawn by MLflow"),
    _E("mlflow.tag", "dpsyn.registered_*", "public", "registered model name and version"),
    _E("mlflow.tag", "dpsyn.lineage.batch_rows", "dp", _ROWS + " (mirrored from the lineage ledger)"),
    _E("mlflow.tag", "dpsyn.lineage.epsilon", "dp", "the accountant's composition (mirrored)"),
    _E("mlflow.tag", "dpsyn.lineage.gate_passed", "dp", _POST + " (mirrored)"),
    _E("mlflow.tag", "dpsyn.lineage.dataset_sha256", "dp", "SHA-256 of synthetic.csv, a DP output (mirrored)"),
    _E("mlflow.tag", "dpsyn.lineage.*", "public", "the lineage ledger's ids, names, δ (mirrored; see lineage.*)"),
    _E("mlflow.artifact", "privacy/privacy.json", "dp", "the accountant's summary: mechanisms (σ, q, T) and ε"),
    _E("mlflow.artifact", "privacy/epsilon_delta.png", "dp", "ε(δ) of the recorded mechanisms"),
    _E("mlflow.artifact", "reports/validation_report.json", "dp", _VALIDATION),
    _E("mlflow.artifact", "reports/validation_report.html", "dp", _VALIDATION),
    _E("mlflow.artifact", "reports/training_batch.json", "public", "the manifest's training_batch (random id, file "
       "name, noisy count)"),
    _E("mlflow.artifact", "reports/great_expectations/*", "dp", "Great Expectations on the synthetic table only: "
       + _POST),
    _E("mlflow.artifact", "reports/drift_report.*", "dp", "drift.check and rows: noisy shares and KS"),
    _E("mlflow.artifact", "model/*", "dp", "the fitted synthesizer: DP weights, noisy marginals, public encoding "
       "(a contract test searches the pickle for training values)"),
    _E("mlflow.registry_tag", "epsilon", "dp", "the accountant's composition"),
    _E("mlflow.registry_tag", "delta", "public", "the run's δ"),
    _E("mlflow.registry_tag", "training_batch", "public", "uuid4 drawn at random"),
    _E("mlflow.registry_tag", "gate_passed", "dp", _POST),
    _E("mlflow.registry_tag", "cumulative_epsilon", "dp", "sum of the population's committed ε"),
    _E("mlflow.logged_model_tag", "mlflow.*", "public", "MLflow's own tags"),
    _E("mlflow.logged_model_tag", "dpsyn.kind", "public", "a constant"),
    # -- Prefect ----------------------------------------------------------------------------------------------------
    _E("prefect.flow_param", "config.*", "public", _CONFIG + " (Prefect stores flow-run parameters; a noise_seed "
       "there seeds nothing: secure runs ignore it and seeded runs are refused)"),
    _E("prefect.artifact", "validation-report", "dp", _VALIDATION + " as Markdown"),
    _E("prefect.artifact", "validation-checks", "dp", _VALIDATION + " as a table"),
    _E("prefect.artifact", "drift-report", "dp", "drift.check and rows, as Markdown"),
    _E("prefect.state", "*:Completed:*", "public", "Prefect's state names and its own messages"),
    _E("prefect.state", "*:Running:*", "public", "Prefect's state names"),
    _E("prefect.state", "*:Pending:*", "public", "Prefect's state names"),
    _E("prefect.state", "*:Scheduled:*", "public", "Prefect's state names"),
    _E("prefect.log", "Beginning flow run *", "public", "Prefect's engine"),
    _E("prefect.log", "Beginning subflow run *", "public", "Prefect's engine"),
    _E("prefect.log", "Created task run *", "public", "Prefect's engine"),
    _E("prefect.log", "Executing *", "public", "Prefect's engine"),
    _E("prefect.log", "Finished in state *", "public", "Prefect's engine (state names)"),
    _E("prefect.log", "Finished task run *", "public", "Prefect's engine (state names)"),
    _E("prefect.log", "Finished flow run *", "public", "Prefect's engine (state names)"),
    _E("prefect.log", "input scrubbed and masked; the scrub and mask reports are kept for the data owner", "public",
       "a constant message"),
    _E("prefect.log", "drift check: *", "dp", "the drift verdict and noisy statistics (drift.check)"),
    _E("prefect.log", "privacy: *", "dp", "a mechanism's σ, q, T (from public settings and the noisy count)"),
    _E("prefect.log", "validation: *", "dp", "how many of the gate's checks passed (post-processing)"),
    _E("prefect.log", "budget: *", "dp", "ids, the reserved ε/δ (config) and the committed ε (the accountant)"),
    _E("prefect.log", "lineage: *", "public", "random ids"),
    _E("prefect.log", "DP-SGD *", "public", "which clipping path ran (a property of the model's structure)"),
    # -- the ledgers (owner-side databases) ---------------------------------------------------------------------------
    _E("lineage.training_batches", "batch_id", "public", "uuid4 drawn at random"),
    _E("lineage.training_batches", "source", "public", "the input's file name"),
    _E("lineage.training_batches", "rows", "dp", _ROWS),
    _E("lineage.training_batches", "window_*", "public", _CONFIG),
    _E("lineage.training_batches", "recorded_at", "public", "wall-clock time"),
    _E("lineage.batch_digests", "batch_id", "public", "uuid4 drawn at random"),
    _E("lineage.batch_digests", "input_digest", "private", "HMAC under the pipeline's secret key of the input file's "
       "SHA-256: the lineage ledger only (never published); without the key it reveals nothing, with it the owner "
       "verifies a file (dpsyn audit batch)"),
    _E("lineage.batch_digests", "content_digest", "private", "HMAC under the pipeline's key of the masked rows' "
       "content hash: the lineage ledger only"),
    _E("lineage.batch_digests", "key_id", "public", "hash prefix of the pipeline's key"),
    _E("lineage.batch_digests", "recorded_at", "public", "wall-clock time"),
    _E("lineage.training_runs", "*", "public", "ids, schema, synthesizer, model name/version, ε (DP), δ, accountant"),
    _E("lineage.datasets", "rows", "dp", "synthetic rows (config or the noisy count)"),
    _E("lineage.datasets", "validation_json", "dp", "check names and verdicts: " + _POST),
    _E("lineage.datasets", "gate_passed", "dp", _POST),
    _E("lineage.datasets", "sha256", "dp", "SHA-256 of synthetic.csv, a DP output"),
    _E("lineage.datasets", "*", "public", "ids, paths, watermark settings, timestamps"),
    _E("lineage.codes", "*", "public", "record codes (HMACs of random ids), key ids, timestamps"),
    _E("lineage.meta", "*", "public", "the ledger's version"),
    _E("budget.reservations", "spent_*", "dp", "the accountant's composition (or the whole reservation)"),
    _E("budget.reservations", "*", "public", "ids, purposes, notes (file names), reserved ε/δ (config), states, "
       "timestamps"),
    _E("budget.populations", "*", "public", "population names, caps, timestamps"),
    _E("budget.accesses", "*", "public", "which owner tool read the population, and when"),
    _E("budget.meta", "*", "public", "the ledger's version"),
    # -- inside the trust boundary (never in a published place) --------------------------------------------------------
    _E("operator.file", "scrub_report.json", "private", "$DPSYN_HOME/operator/<run id>/ (0700): exact entity counts "
       "per column, for the data owner"),
    _E("operator.file", "mask_report.json", "private", "$DPSYN_HOME/operator/<run id>/: exact unreadable-value "
       "counts, k-anonymity's data-chosen levels"),
    _E("operator.file", "training_batch.json", "private", "$DPSYN_HOME/operator/<run id>/: exact row counts and "
       "the content hash of the masked rows"),
    _E("work.file", "*", "private", "$DPSYN_HOME/work/<id>/ (0700), removed when the run ends: rows, exact counts"),
)


def flatten_keys(obj, prefix: str = "") -> list[str]:
    """The keys of a JSON document, nested keys joined with ``.``, list items as ``[]`` (scalars and empty
    containers are leaves)."""
    out: list[str] = []
    if isinstance(obj, dict) and obj:
        for k, v in obj.items():
            out.extend(flatten_keys(v, f"{prefix}.{k}" if prefix else str(k)))
    elif isinstance(obj, list) and obj:
        for v in obj:
            out.extend(flatten_keys(v, f"{prefix}[]"))
    else:
        out.append(prefix)
    return sorted(set(out))


def classify(place: str, key: str) -> Entry | None:
    """The first entry of :data:`INVENTORY` for ``place`` whose pattern matches ``key`` (None: unclassified)."""
    key = key.replace("[]", "\x01")  # "[]" marks list items, not an fnmatch character set
    for e in INVENTORY:
        if e.place == place and fnmatchcase(key, e.pattern.replace("[]", "\x01")):
            return e
    return None


def unclassified(items: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """The (place, key) pairs that no entry classifies, and those classified ``private`` in a published place."""
    bad = []
    for place, key in items:
        e = classify(place, key)
        if e is None or (e.kind == "private" and place in PUBLISHED_PLACES):
            bad.append((place, key))
    return sorted(set(bad))


def markdown_table() -> str:
    """The inventory as the Markdown table docs/privacy.md carries (a unit test keeps the two equal)."""
    kinds = {"public": "public", "dp": "DP", "private": "**private**"}
    rows = ["| place | key | class | mechanism, source or where it stays |", "|---|---|---|---|"]
    for e in INVENTORY:
        key = e.pattern.replace("|", "\\|")
        rows.append(f"| {e.place} | `{key}` | {kinds[e.kind]} | {e.how} |")
    return "\n".join(rows)
