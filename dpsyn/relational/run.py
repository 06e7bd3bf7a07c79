"""One run over a dataset of related tables: reserve, read, scrub and mask, fit, sample, gate, watermark, publish one
folder, settle.

The budget protocol is the single-table run's (write-ahead, dpsyn/privacy/budget): the whole (ε, δ) is reserved in
the population's lifetime budget before any file is read; a run that fails after reading is charged what it
reserved (a crash never under-counts), a run stopped by its gate what it spent; one that fails before reading
releases it. Each table is scrubbed and masked (:mod:`dpsyn.relational.prepare`) before anything is fitted. The gate across tables (:mod:`dpsyn.relational.gate`) judges the synthetic tables before anything is
published: a failing (or, unless allowed, an uninformative) gate publishes nothing and writes its report (DP) to
``reports``. A release is one folder: one CSV per table, each with its own watermark code
(:mod:`dpsyn.relational.release`), ``validation_report.json``/``.html`` and ``manifest.json``, recorded in the
lineage ledger (one release per table) and published in one rename.
"""

from __future__ import annotations

import json
import logging
import uuid
from datetime import UTC, datetime
from pathlib import Path

from dpsyn.errors import GateFailedError
from dpsyn.home import dpsyn_home
from dpsyn.io import check_output_dir, probe_writable
from dpsyn.masking import MaskConfig
from dpsyn.pii import ScrubConfig
from dpsyn.privacy import NoiseSource, PrivacyConfig
from dpsyn.privacy.budget import BudgetLedger
from dpsyn.relational.gate import DatasetGateConfig, child_rules, gate_dataset
from dpsyn.relational.io import read_dataset, write_dataset
from dpsyn.relational.prepare import check_mask, prepare_dataset
from dpsyn.relational.release import lineage_releases, watermark_tables
from dpsyn.relational.schema import load_dataset_schema
from dpsyn.relational.synth import create_relational

__all__ = ["reports_dir", "run_dataset"]

logger = logging.getLogger(__name__)


def reports_dir(run_id: str) -> Path:
    """Where a dataset run's gate report goes when nothing is published: ``$DPSYN_HOME/reports/<run id>``."""
    return dpsyn_home() / "reports" / run_id


def run_dataset(dataset: str | Path, data: str | Path, out: str | Path, *, privacy: PrivacyConfig | dict,
                config=None, synthesizer: str = "relational", gate: DatasetGateConfig | dict | None = None,
                allow_uninformative: bool = False, reports: str | Path | None = None,
                ledger_url: str | None = None, lineage_url: str | None = None,
                lifetime_epsilon: float | None = None, overwrite: bool = False, run_id: str | None = None,
                key=None, scrub=None, mask=None) -> dict:
    """Synthesize every table of ``dataset`` (a dataset schema path or shipped name) from the files in ``data``
    and publish them at ``out`` if the gate across tables passes; returns the manifest.

    ``reports``: where the gate's report goes when nothing is published (default ``$DPSYN_HOME/reports/<run
    id>``); ``allow_uninformative`` publishes a dataset too small for the gate to judge at this ε, the manifest
    saying so; ``key``: the watermark key (default :func:`dpsyn.watermark.load_key`); ``scrub``, ``mask``: a
    :class:`dpsyn.pii.ScrubConfig` and a :class:`dpsyn.masking.MaskConfig` (or their dicts) for every table."""
    from dpsyn.lineage import Ledger
    from dpsyn.watermark import load_key

    ds = load_dataset_schema(dataset)
    scrub = scrub if isinstance(scrub, ScrubConfig) else ScrubConfig(**(scrub or {}))
    mask = mask if isinstance(mask, MaskConfig) else MaskConfig(**(mask or {}))
    check_mask(mask)  # before any budget is reserved
    privacy = privacy if isinstance(privacy, PrivacyConfig) else PrivacyConfig(**privacy)
    gate = gate if isinstance(gate, DatasetGateConfig) else DatasetGateConfig(**(gate or {}))
    out = Path(out)
    check_output_dir(out, overwrite=overwrite)
    probe_writable(out)
    key = key or load_key()
    population = ds.population or ds.name
    delta = privacy.resolved_delta(ds.root_schema.population_size)
    run_id = run_id or uuid.uuid4().hex
    reports = Path(reports) if reports is not None else reports_dir(run_id)
    budget_key = f"relational:{run_id}"
    ledger = BudgetLedger(ledger_url)
    ledger.reserve(population, budget_key, epsilon=privacy.epsilon, delta=delta, cap=lifetime_epsilon,
                   purpose="relational", note=f"dataset {ds.name}", unit=ds.person.key)
    read = published = False
    recorded: list[str] = []
    lineage = Ledger(lineage_url)
    try:
        ledger.mark_read(budget_key)
        read = True
        tables = prepare_dataset(ds, read_dataset(ds, data), scrub=scrub, mask=mask)
        model = create_relational(synthesizer, config, privacy=privacy.model_copy(update={"delta": delta}))
        model.fit(tables, ds, gate_share=gate.share)
        synthetic = model.sample(rules=child_rules(model, gate))  # hard rules held by construction
        report = gate_dataset(model, tables, synthetic, gate, noise=NoiseSource(secure=privacy.secure_rng))
        del tables
        summary = model.privacy_
        context = {"run id": run_id, "dataset": ds.name, "ε spent": f"{summary['epsilon_spent']:.4f}",
                   "δ": f"{summary['delta']:g}", "guarantee": summary["neighbouring"]}
        verdict = report.verdict
        if verdict == "failed" or (verdict == "uninformative" and not allow_uninformative):
            report.write(reports, context=context)
            ledger.commit(budget_key, epsilon=float(summary["epsilon_spent"]), delta=float(summary["delta"]),
                          note=f"dataset {ds.name}: gate {verdict}, nothing published")
            report.raise_if_failed(allow_uninformative=allow_uninformative,
                                   report_at=str(reports / "validation_report.html"),
                                   details={"run_id": run_id, "epsilon_spent": float(summary["epsilon_spent"]),
                                            "delta": float(summary["delta"])})
        ts = datetime.now(UTC).isoformat(timespec="seconds")
        batch_id = uuid.uuid4().hex
        marked, codes = watermark_tables(synthetic, ds, key=key, run_id=run_id, batch_id=batch_id, timestamp=ts)
        checks = report.checks()
        manifest = {
            "run_id": run_id,
            "dataset": ds.name,
            "dataset_fingerprint": ds.fingerprint(),
            "population": population,
            "synthesizer": model.name,
            "created_at": ts,
            "tables": {name: {"file": f"{name}.csv", "rows": int(len(df)), "columns": list(df.columns),
                              "watermark_code": codes[name]} for name, df in marked.items()},
            "privacy": {k: summary[k] for k in ("accountant", "neighbouring", "target_epsilon", "delta",
                                                "tail_delta", "epsilon_spent", "mechanisms")},
            "budget_shares": model.shares_,
            "gate": {"verdict": verdict, "checks": len(checks),
                     "failed": [c["name"] for c in checks if c["status"] == "failed"],
                     "uninformative": [c["name"] for c in checks if c["status"] == "uninformative"],
                     "report": "validation_report.html"},
            "watermark": {"key_id": key.key_id, "timestamp": ts, "training_batch": batch_id},
        }

        def record(stage: Path) -> None:
            for rel in lineage_releases(manifest, stage, key_id=key.key_id, timestamp=ts, batch_id=batch_id,
                                        persons_estimate=int(model.root_model_.public_rows_),
                                        report_path=str(out / "validation_report.html"),
                                        checks=[c["name"] for c in checks], failed=manifest["gate"]["failed"]):
                recorded.append(lineage.record(rel))

        files = {"validation_report.json": json.dumps(report.to_dict(), indent=2, sort_keys=True, default=str),
                 "validation_report.html": report.to_html(context=context)}
        write_dataset(marked, out, manifest=manifest, overwrite=overwrite, files=files, before_publish=record)
        published = True
        ledger.commit(budget_key, epsilon=float(summary["epsilon_spent"]), delta=float(summary["delta"]),
                      note=f"dataset {ds.name}")
    except BaseException as e:
        for dataset_id in [] if published else recorded:
            lineage.withdraw(dataset_id)  # recorded, then the rename failed: never published
        r = ledger.get(budget_key)
        if r is not None and r.state == "reserved":
            if read:
                ledger.commit(budget_key, epsilon=r.reserved_epsilon, delta=r.reserved_delta,
                              note="failed after reading: charged what it reserved")
            else:
                ledger.release(budget_key)
        if isinstance(e, GateFailedError):
            logger.info("relational: gate %s, nothing published (report: %s)", e.details.get("gate"), reports)
        raise
    logger.info("relational: published %s (%d tables)", out, len(marked))
    return manifest
