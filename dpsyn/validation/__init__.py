"""The validation gate: fidelity checks whose real-data side is itself DP (docs/validation.md, docs/privacy.md).

The package's face; the parts: :mod:`~dpsyn.validation.config` (settings), :mod:`~dpsyn.validation.gate` (the
gate and its release), :mod:`~dpsyn.validation.fidelity` (the exact statistics), :mod:`~dpsyn.validation.stats`
(exact counts, mergeable over partitions), :mod:`~dpsyn.validation.report` (checks and verdict),
:mod:`~dpsyn.validation.rules` (clinical rules, Great Expectations), :mod:`~dpsyn.validation.utility` (TSTR vs a
DP reference), :mod:`~dpsyn.validation.html` (the report page), :mod:`~dpsyn.validation.metrics` (non-private
benchmark metrics).
"""

from dpsyn.validation.config import DatasetGateConfig, ValidationConfig
from dpsyn.validation.fidelity import column_histograms, fidelity_statistics, pair_statistics
from dpsyn.validation.gate import (
    VALIDATION_LABEL,
    gate_rules,
    plan_validation,
    real_statistics_for,
    validate,
    validate_files,
)
from dpsyn.validation.report import CheckResult, ColumnHistogram, ValidationReport
from dpsyn.validation.stats import RealStatistics

__all__ = ["VALIDATION_LABEL", "CheckResult", "ColumnHistogram", "DatasetGateConfig", "RealStatistics", "ValidationConfig",
           "ValidationReport", "column_histograms", "fidelity_statistics", "gate_rules", "pair_statistics",
           "plan_validation", "real_statistics_for", "validate", "validate_files"]
