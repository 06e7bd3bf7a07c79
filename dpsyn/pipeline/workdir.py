"""The private work folder of one run: which file holds what, and how the run's state survives between stages.

A run keeps every intermediate in ``$DPSYN_HOME/work/<run id>/`` (mode 0700): rows only ever in this folder,
exact counts only here and in the operator reports. Stages exchange files, not frames, so they can run as
separate Prefect tasks (or processes) and a failure handler can find the run's state from its id alone
(:meth:`WorkDir.for_run`). When the run ends the folder is removed; the operator reports (exact counts for the
data owner) move to ``$DPSYN_HOME/operator/<tracker run id>/``.

Every folder under the work root (mode 0700) names its owner process in ``owner.json`` (pid, host): a run killed
outright (SIGKILL) leaves its folder behind, and the next dpsyn command's sweep
(:func:`dpsyn.pipeline.lifecycle.sweep`) closes the run and removes it once that process is gone. Other private
scratch files (the demo's raw-identifier input) live in :func:`dpsyn.home.scratch_dir` folders there, swept the same way.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from dpsyn.home import OWNER_FILE, dpsyn_home, make_work_root, work_root, write_owner

__all__ = ["WorkDir"]


@dataclass(frozen=True)
class WorkDir:
    """Paths of one run's work folder (the file protocol every stage follows)."""

    path: Path

    SCRUBBED = "scrubbed.parquet"
    MASKED = "masked.parquet"  # training rows, scrubbed and masked (a row group per partition)
    HOLDOUT = "holdout.parquet"  # rows set aside by secret coins for the gate's utility check
    REAL_STATISTICS = "real_statistics.npz"  # exact real-side counts merged from the partitions
    BATCH = "batch.json"  # the training batch: random id, exact counts, content hash (private)
    COUNTS = "counts.json"  # the released noisy row counts (DP)
    PRIVACY = "privacy.json"  # the run accountant's state, saved after every mechanism
    MODEL = "model.pkl"
    SYNTHETIC = "synthetic.parquet"
    WATERMARKED = "watermarked.parquet"
    BATCH_DIGESTS = "batch_digests.json"  # keyed digests of the batch, for the lineage ledger only
    REPORT = "validation.json"
    REPORT_HTML = "validation_report.html"
    GE_DOCS = "ge_data_docs"  # Great Expectations Data Docs of the synthetic table (schemas with rules)
    GE_RESULT = "ge_validation_result.json"
    CANARIES = "canaries.parquet"  # in-run audit: made-up records and their secret coins
    CANARY_COINS = "canary_coins.npy"
    RUN = "run.json"  # the run's context (ids, reservation, what has happened), for stages and failure handlers
    STAGING = "staging.json"  # the release's staging folder while it is written (removed by abort if left)
    OWNER = OWNER_FILE  # the process that owns the folder (pid, host): the sweep removes it once that is gone
    PARTS = "parts"  # per-partition files of the prepare stage
    OPERATOR = "operator"  # reports with exact counts for the data owner

    @staticmethod
    def root() -> Path:
        return work_root()

    @classmethod
    def for_run(cls, run_id: str) -> WorkDir:
        """The work folder of run ``run_id`` (it may not exist)."""
        if not run_id or "/" in run_id or run_id in (".", ".."):
            raise ValueError("a run id names one folder")
        return cls(cls.root() / run_id)

    @classmethod
    def create(cls, run_id: str) -> WorkDir:
        """A fresh private folder for run ``run_id`` (mode 0700)."""
        work = cls.for_run(run_id)
        make_work_root()
        work.path.mkdir(mode=0o700)
        write_owner(work.path)
        return work

    def __truediv__(self, name: str) -> Path:
        return self.path / name

    def exists(self, name: str) -> bool:
        return (self.path / name).exists()

    def read_json(self, name: str):
        return json.loads((self.path / name).read_text())

    def write_json(self, name: str, obj, *, indent: int | None = None) -> Path:
        p = self.path / name
        tmp = p.with_name(p.name + ".tmp")
        tmp.write_text(json.dumps(obj, indent=indent, default=str))
        os.replace(tmp, p)  # a reader (or a failure handler) never sees half a file
        return p

    def part(self, kind: str, index: int, suffix: str = "parquet") -> Path:
        folder = self.path / self.PARTS
        folder.mkdir(mode=0o700, exist_ok=True)
        return folder / f"{kind}-{index:05d}.{suffix}"

    def operator_dir(self) -> Path:
        folder = self.path / self.OPERATOR
        folder.mkdir(mode=0o700, exist_ok=True)
        return folder

    def remove(self, *, keep_reports_as: str | None = None) -> None:
        """Remove the folder; with ``keep_reports_as`` first move its operator reports to
        ``$DPSYN_HOME/operator/<keep_reports_as>/`` (mode 0700: inside the trust boundary)."""
        reports = self.path / self.OPERATOR
        if keep_reports_as and reports.is_dir():
            root = dpsyn_home() / self.OPERATOR
            root.mkdir(mode=0o700, parents=True, exist_ok=True)
            dest = root / keep_reports_as
            if not dest.exists():
                shutil.move(str(reports), dest)
                os.chmod(dest, 0o700)
        shutil.rmtree(self.path, ignore_errors=True)

