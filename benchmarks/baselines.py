"""Trivial DP baselines for the suite (benchmarks/suite.py): a synthesizer must beat these to be worth its code.

Both follow dpsyn's synthesizer contract (``fit`` charges the run's accountant, the row count is the base class's
noisy release) and spend the rest of ε on one Gaussian release:

* ``independent``: every column's one-way histogram. A row adds one to one cell of each of the d histograms,
  so the concatenated vector has L2 sensitivity √d; noise std σ√d per cell, σ calibrated to the rest of ε.
  Columns are sampled independently from the clipped noisy histograms.
* ``naive_bayes``: the target's histogram and every feature × target histogram. A row adds one to one cell of
  each of these d tables (1 + (d − 1)), so the sensitivity is again √d. Rows are sampled as y ~ p̂(y), then each
  feature from p̂(x_j | y), independently (DP naive Bayes as a generator).
"""

from __future__ import annotations

import math

import numpy as np
from pydantic import BaseModel, ConfigDict

from dpsyn.synth.base import Synthesizer

__all__ = ["Independent", "NaiveBayes"]


class _Config(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _probs(c: np.ndarray, axis: int = -1) -> np.ndarray:
    c = np.clip(c, 0, None)
    s = c.sum(axis=axis, keepdims=True)
    return np.divide(c, s, out=np.full_like(c, 1.0 / c.shape[axis]), where=s > 0)


def _draw(p: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return np.minimum((p.cumsum(axis=1) < rng.random((len(p), 1))).sum(axis=1), p.shape[1] - 1)


class Independent(Synthesizer):
    name = "independent"
    config_class = _Config

    def _fit(self, codes, *, accountant):
        sigma = accountant.calibrate(sample_rate=1.0, steps=1, label="independent.one_way")
        std = sigma * math.sqrt(codes.shape[1])
        self.p_ = [_probs(np.bincount(codes[:, j], minlength=k) + self.noise_.normal_numpy(k, std))
                   for j, k in enumerate(self.encoder_.sizes)]
        accountant.record("independent.one_way", noise_multiplier=sigma, sample_rate=1.0, steps=1)

    def _sample_codes(self, n, *, rng):
        return np.stack([rng.choice(len(p), size=n, p=p) for p in self.p_], axis=1)


class NaiveBayes(Synthesizer):
    name = "naive_bayes"
    config_class = _Config

    def _fit(self, codes, *, accountant):
        sizes, d = self.encoder_.sizes, codes.shape[1]
        sigma = accountant.calibrate(sample_rate=1.0, steps=1, label="naive_bayes.tables")
        std, k = sigma * math.sqrt(d), sizes[-1]
        self.py_ = _probs(np.bincount(codes[:, -1], minlength=k) + self.noise_.normal_numpy(k, std))
        self.px_y_ = []  # per feature: (k, size_j) = p(x_j | y)
        for j, s in enumerate(sizes[:-1]):
            t = np.bincount(codes[:, -1] * s + codes[:, j], minlength=k * s).astype(float)
            self.px_y_.append(_probs((t + self.noise_.normal_numpy(k * s, std)).reshape(k, s)))
        accountant.record("naive_bayes.tables", noise_multiplier=sigma, sample_rate=1.0, steps=1)

    def _sample_codes(self, n, *, rng):
        y = rng.choice(len(self.py_), size=n, p=self.py_)
        return np.stack([_draw(t[y], rng) for t in self.px_y_] + [y], axis=1)
