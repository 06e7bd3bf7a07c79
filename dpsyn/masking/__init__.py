"""Sensitivity masking by tier: generalize what the schema says, drop what it must not keep.

* L1 columns (very high: IDs, biometrics, exact location) are dropped, unless
  the schema gives them a public generalization hierarchy, which is applied.
* Any column with ``generalize`` is mapped through that hierarchy (e.g. an
  ICD-9 code to its 3-character category) before its domain is checked.
* Identifier columns never reach the synthesizer.
* Optionally (``MaskConfig(k=...)``), the quasi-identifier columns are made
  k-anonymous by generalization, then suppression (:mod:`dpsyn.masking.kanon`).
* Tiers also give the synthesizer per-column clip weights (:mod:`dpsyn.masking.tiers`).

Hierarchies are a name-keyed registry of pure, data-independent functions
(:mod:`dpsyn.masking.hierarchies`): they read no statistic of the private rows,
so they cost no privacy budget. k-anonymity does depend on the other rows; see
docs/masking.md for what that means for the DP guarantee. Reports hold column
names and counts, never values.
"""

from __future__ import annotations

from dpsyn.masking.hierarchies import (
    Hierarchy,
    age_band,
    age_band_5,
    age_band_10,
    describe_hierarchies,
    get_hierarchy,
    icd9_category,
    icd9_chapter,
    icd10_category,
    list_hierarchies,
    month,
    postcode_prefix,
    register_hierarchy,
    suppress,
    year,
    zip3,
)
from dpsyn.masking.kanon import KAnonymityReport, equivalence_class_sizes, k_anonymize
from dpsyn.masking.mask import DEFAULT_K, MaskConfig, MaskReport, mask_table
from dpsyn.masking.tiers import DEFAULT_CLIP_WEIGHTS, per_column_clip_norms, tier_clip_weights

__all__ = [
    "DEFAULT_CLIP_WEIGHTS",
    "DEFAULT_K",
    "Hierarchy",
    "KAnonymityReport",
    "MaskConfig",
    "MaskReport",
    "age_band",
    "age_band_5",
    "age_band_10",
    "describe_hierarchies",
    "equivalence_class_sizes",
    "get_hierarchy",
    "icd9_category",
    "icd9_chapter",
    "icd10_category",
    "k_anonymize",
    "list_hierarchies",
    "mask_table",
    "month",
    "per_column_clip_norms",
    "postcode_prefix",
    "register_hierarchy",
    "suppress",
    "tier_clip_weights",
    "year",
    "zip3",
]
