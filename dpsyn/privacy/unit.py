"""The privacy unit: bound each person's rows, and release how many rows persons have.

A schema may declare a person column and a public bound k (``privacy_unit``, :class:`dpsyn.schema.PrivacyUnit`).
Then every run is DP for adding or removing one person with all their rows:

* :func:`bound_contributions` keeps at most k rows of each person before any mechanism reads the table: a
  person's kept rows are the k with the smallest secret uniform draws among *that person's* rows, so the rule is
  a randomized map applied to each person on their own (adding or removing a person leaves every other person's
  kept rows distributed as before). How many rows were dropped is never returned.
* the accountant then records every row-level mechanism at the person level (``rows_per_unit`` = k;
  :mod:`dpsyn.privacy.accountant`).
* :func:`release_unit_sizes` releases the histogram of rows per person (1..k) with Gaussian noise; one person
  moves one bin by one, so its L2 sensitivity is 1 at the person level. It is what a synthetic table's fresh
  person ids follow (:func:`assign_fresh_ids`, post-processing).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dpsyn.privacy.accountant import PrivacyAccountant
from dpsyn.privacy.noise import NoiseSource

__all__ = ["PERSON_CODE", "UNIT_SIZES_LABEL", "assign_fresh_ids", "bound_contributions", "bound_table",
           "person_codes", "plan_unit_sizes", "release_unit_sizes", "unit_sizes"]

#: The column a prepared table carries the person of each row in (random dense codes, never the raw id): inside
#: the trust boundary only (the run's work folder).
PERSON_CODE = "_person"
#: The accountant's label of the rows-per-person histogram.
UNIT_SIZES_LABEL = "rows_per_person"


def person_codes(persons: pd.Series, noise: NoiseSource) -> np.ndarray:
    """Dense codes 0..P−1 for the persons of ``persons`` (one code per distinct id, in a secret random order:
    the codes carry no order of the raw ids). A missing id is a person of its own (it cannot be joined)."""
    keys = persons.astype("string")
    codes, uniques = pd.factorize(keys, use_na_sentinel=True)
    missing = codes < 0
    if missing.any():
        codes = codes.copy()
        codes[missing] = len(uniques) + np.arange(int(missing.sum()))
    n_persons = int(codes.max()) + 1 if len(codes) else 0
    order = np.argsort(noise.uniform(n_persons), kind="stable")
    relabel = np.empty(n_persons, dtype=np.int64)
    relabel[order] = np.arange(n_persons)
    return relabel[codes]


def bound_contributions(codes: np.ndarray, k: int, noise: NoiseSource) -> np.ndarray:
    """A boolean mask keeping at most ``k`` rows of each person (``codes``: dense person codes per row): the
    rows with the k smallest secret uniforms within each person."""
    codes = np.asarray(codes, dtype=np.int64)
    u = noise.uniform(len(codes))
    order = np.lexsort((u, codes))  # by person, then by the secret draw
    sorted_codes = codes[order]
    starts = np.r_[0, np.flatnonzero(np.diff(sorted_codes)) + 1] if len(codes) else np.array([], dtype=np.int64)
    rank = np.arange(len(codes)) - np.repeat(starts, np.diff(np.r_[starts, len(codes)]))
    keep = np.zeros(len(codes), dtype=bool)
    keep[order[rank < k]] = True
    return keep


def bound_table(df: pd.DataFrame, column: str, k: int, noise: NoiseSource, *,
                table: str = "the table") -> tuple[pd.DataFrame, np.ndarray]:
    """``df`` with at most ``k`` rows per person of ``column`` (a new frame, index reset; ``df`` is not modified)
    and the kept rows' person codes. A frame that already carries :data:`PERSON_CODE` (prepared by a run) is
    bounded on those codes."""
    from dpsyn.errors import ConfigError

    if PERSON_CODE in df.columns:  # rows added after preparation (an audit's canaries) have none: each its own
        raw = pd.to_numeric(df[PERSON_CODE], errors="coerce")
        codes = np.array(raw.fillna(-1), dtype=np.int64)  # a copy: pandas may hand out a read-only view
        missing = np.flatnonzero(codes < 0)
        if len(missing):
            codes[missing] = int(codes.max()) + 1 + np.arange(len(missing))
    elif column in df.columns:
        codes = person_codes(df[column], noise)
    else:
        raise ConfigError(f"{table} has no column '{column}', the schema's privacy unit: keep the person column in "
                          "the input (dpsyn bounds each person's rows, then drops it)")
    keep = bound_contributions(codes, k, noise)
    return df.loc[keep].reset_index(drop=True), codes[keep]


def unit_sizes(codes: np.ndarray, k: int) -> np.ndarray:
    """Exact histogram of rows per person over 1..k (private: it goes to :func:`release_unit_sizes` only)."""
    per_person = np.bincount(np.asarray(codes, dtype=np.int64))
    per_person = per_person[per_person > 0]
    if per_person.size and per_person.max() > k:
        raise ValueError("a person has more rows than the contribution bound: bound the rows first")
    return np.bincount(per_person, minlength=k + 1)[1:].astype(np.float64)


def plan_unit_sizes(accountant: PrivacyAccountant, share: float) -> float:
    """Plan the rows-per-person release: its σ alone costs ``share`` × ε (person-level sensitivity 1)."""
    sigma = accountant.sigma_for_share(share, person_level=True)
    accountant.plan(UNIT_SIZES_LABEL, noise_multiplier=sigma, person_level=True)
    return sigma


def release_unit_sizes(sizes: np.ndarray, sigma: float, *, accountant: PrivacyAccountant,
                       noise: NoiseSource) -> list[float]:
    """The noisy histogram of rows per person (1..k), recorded on ``accountant``. ``sizes`` never leaves here."""
    noisy = np.asarray(sizes, dtype=np.float64) + noise.normal_numpy(len(sizes), sigma)
    accountant.record(UNIT_SIZES_LABEL, noise_multiplier=sigma, sample_rate=1.0, steps=1, person_level=True)
    return [float(x) for x in noisy]


def assign_fresh_ids(n: int, noisy_sizes: list[float] | None, rng: np.random.Generator) -> pd.Series:
    """Person ids for ``n`` synthetic rows: fresh random tokens (never a real id), persons' row counts drawn from
    the noisy rows-per-person histogram (clipped at zero; one row each if it holds no mass). Post-processing."""
    k = len(noisy_sizes) if noisy_sizes else 1
    p = np.clip(np.asarray(noisy_sizes if noisy_sizes else [1.0], dtype=np.float64), 0.0, None)
    p = p / p.sum() if p.sum() > 0 else np.r_[1.0, np.zeros(k - 1)]
    sizes: list[int] = []
    total = 0
    while total < n:
        draw = rng.choice(np.arange(1, k + 1), size=max(16, (n - total) // max(1, k) + 1), p=p)
        for s in draw:
            sizes.append(int(min(s, n - total)))
            total += sizes[-1]
            if total >= n:
                break
    person = np.repeat(np.arange(len(sizes)), sizes)
    rng.shuffle(person)
    tokens = np.array([f"p{x:012x}" for x in rng.choice(2**48, size=len(sizes), replace=False)], dtype=object)
    return pd.Series(tokens[person], dtype="string")
