"""DP selection of a categorical domain from the rows: which values (codes) to keep, when no public list exists.

A schema's domains are public declarations (docs/privacy.md). For a column whose values come from a huge or
local code system (diagnosis or drug descriptions in an EHR export) no public list of the values *in use* may
exist; the values themselves are then a statistic of the private rows, and releasing them needs a mechanism.
:func:`select_values` is Gaussian partition selection with a threshold (Korolova et al. 2009; Wilson et al. 2020,
"Differentially private SQL with bounded user contribution"; Gopi et al. 2020, "Differentially private set
union"), at the person level:

1. each person contributes at most ℓ distinct values (``max_per_person``; a person holding more keeps ℓ of them
   chosen by secret uniforms, a person-local rule);
2. every value's count of persons gets N(0, (σ√ℓ)²) noise: one person moves at most ℓ counts by one each, so the
   L2 sensitivity is √ℓ and this part is a Gaussian mechanism with noise multiplier σ, recorded on the accountant
   (``person_level=True``);
3. a value is released only if its noisy count exceeds τ = 1 + σ√ℓ · Φ⁻¹(1 − δ_sel/ℓ). A value that only the
   added person holds has count 1 in the neighbouring data set and 0 (absent, never released) without them; at
   most ℓ such values exist, so the probability that any of them is released is at most ℓ · Φ̄((τ − 1)/(σ√ℓ)) =
   δ_sel. That δ_sel is reserved from the run's δ beforehand (``PrivacyAccountant.reserve_tail``).

At most ``max_values`` values are kept (the largest noisy counts: post-processing). Values outside the released
list become one public *other* token in the data that the synthesizer reads. The noisy counts never leave here.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy.stats import norm

from dpsyn.privacy.accountant import PrivacyAccountant
from dpsyn.privacy.noise import NoiseSource
from dpsyn.privacy.unit import bound_contributions

__all__ = ["OTHER", "selection_threshold", "select_values"]

#: The token every value outside a selected domain becomes (public).
OTHER = "__other__"


def selection_threshold(sigma: float, max_per_person: int, tail_delta: float) -> float:
    """τ of the module docstring: a count-1 value is released with probability ≤ ``tail_delta`` / ℓ."""
    if not (sigma > 0 and max_per_person >= 1 and 0 < tail_delta < 1):
        raise ValueError("selection needs sigma > 0, max_per_person ≥ 1 and a tail delta in (0, 1)")
    scale = sigma * math.sqrt(max_per_person)
    return 1.0 + scale * float(norm.isf(tail_delta / max_per_person))


def select_values(values: pd.Series, persons: np.ndarray, *, max_per_person: int, max_values: int, sigma: float,
                  tail_delta: float, accountant: PrivacyAccountant, noise: NoiseSource, label: str) -> list[str]:
    """The released domain (sorted by noisy count, most frequent first; the module docstring has the guarantee).

    ``values``: one value per row (missing values are not candidates); ``persons``: the rows' dense person codes.
    The tail δ must already be reserved on ``accountant`` (this function cannot check which tail is whose).
    """
    vals = values.astype("string")
    ok = vals.notna().to_numpy()
    frame = pd.DataFrame({"p": np.asarray(persons, dtype=np.int64)[ok], "v": vals[ok].to_numpy()})
    frame = frame.drop_duplicates()  # a person counts once per value
    if len(frame):
        keep = bound_contributions(frame["p"].to_numpy(), max_per_person, noise)
        frame = frame.loc[keep]
    counts = frame["v"].value_counts(sort=False)
    scale = sigma * math.sqrt(max_per_person)
    noisy = counts.to_numpy(dtype=np.float64) + noise.normal_numpy(len(counts), scale)
    accountant.record(label, noise_multiplier=sigma, sample_rate=1.0, steps=1, person_level=True)
    tau = selection_threshold(sigma, max_per_person, tail_delta)
    chosen = np.flatnonzero(noisy > tau)
    chosen = chosen[np.argsort(-noisy[chosen], kind="stable")][:max_values]
    return [str(x) for x in counts.index.to_numpy()[chosen]]
