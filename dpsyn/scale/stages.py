"""What one partition goes through: read and scrub, then mask and split off the holdout.

Each function is one library call for one Prefect task (tasks/scale.py). The
input frame is never modified; outputs are new frames and count-only reports.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from dpsyn.masking import MaskConfig, MaskReport
from dpsyn.pii import ScrubConfig, ScrubReport
from dpsyn.privacy import NoiseSource
from dpsyn.scale.config import Partition
from dpsyn.scale.merge import row_hashes
from dpsyn.scale.partition import read_partition
from dpsyn.schema import TableSchema

__all__ = ["DATETIME_DTYPE", "MaskedPartition", "mask_partition", "scrub_partition"]

DATETIME_DTYPE = "datetime64[us]"


def scrub_partition(path: str | Path, schema: TableSchema, part: Partition,
                    config: ScrubConfig | None = None) -> tuple[pd.DataFrame, ScrubReport]:
    """Read one partition as the schema declares and scrub it (:func:`dpsyn.pii.scrub_table`); the raw rows
    stay in memory."""
    from dpsyn.pii import scrub_table

    return scrub_table(read_partition(path, schema, part), schema, config)


@dataclass
class MaskedPartition:
    train: pd.DataFrame  # rows the synthesizer sees
    holdout: pd.DataFrame | None  # rows set aside for the utility check (None: no holdout)
    report: MaskReport
    hashes: np.ndarray  # row hashes of the masked partition before the split (the training batch's content)
    dtypes: list[str]


def mask_partition(scrubbed: pd.DataFrame, schema: TableSchema, config: MaskConfig | None = None, *,
                   holdout_share: float = 0.0, noise: NoiseSource | None = None) -> MaskedPartition:
    """Mask one scrubbed partition (:func:`dpsyn.masking.mask_table`) and, with ``holdout_share`` > 0, send each
    row to the holdout by a secret coin flip from ``noise`` (:func:`dpsyn.validation.utility.split_holdout`).

    k-anonymity needs the whole table: with ``config.k`` set, pass the whole table as one partition.
    """
    from dpsyn.masking import mask_table

    masked, report = mask_table(scrubbed, schema, config)
    report.raise_if_nonconforming(schema.name)
    # one resolution for dates in every partition (pandas infers s, us or ns from each partition's strings)
    for col in schema.columns:
        if col.name in masked.columns and pd.api.types.is_datetime64_any_dtype(masked[col.name]):
            masked[col.name] = masked[col.name].astype(DATETIME_DTYPE)
    hashes = row_hashes(masked)
    dtypes = [str(t) for t in masked.dtypes]
    holdout = None
    if holdout_share > 0:
        from dpsyn.validation.utility import split_holdout

        if noise is None:
            raise ValueError("a holdout split needs the run's noise source (secret coins)")
        masked, holdout = split_holdout(masked, holdout_share, noise=noise)
    return MaskedPartition(train=masked, holdout=holdout, report=report, hashes=hashes, dtypes=dtypes)
