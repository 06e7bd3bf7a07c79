"""Gaussian noise for DP mechanisms, from a cryptographically secure source.

Opacus' ``secure_mode`` needs ``torchcsprng``, which has no wheel for current
PyTorch. :class:`NoiseSource` gives the same protection without it:

* uniform bits come from the operating system's CSPRNG (``os.urandom``),
  turned into normals by the Box-Muller transform;
* each noise draw is the sum of 4 normals scaled by 1/2, as Opacus does in
  secure mode, which defeats the floating-point attacks on the Gaussian
  mechanism (Mironov 2012; Holohan & Braghin 2021, arXiv:2107.10138 §5.1).

With ``secure=False`` (tests, experiments) noise comes from a seeded
``torch.Generator`` so runs reproduce; a loud :class:`InsecureRNGWarning`
says so once per source.
"""

from __future__ import annotations

import math
import os
import warnings

import numpy as np
import torch

from dpsyn.errors import InsecureRNGWarning

__all__ = ["NoiseSource"]

_TWO_POW_53 = float(1 << 53)


def _urandom_uniform(n: int) -> np.ndarray:
    """``n`` uniforms in (0, 1) with 53 random bits each, from os.urandom."""
    raw = np.frombuffer(os.urandom(8 * n), dtype=np.uint64) >> np.uint64(11)
    return (raw.astype(np.float64) + 0.5) / _TWO_POW_53


def _urandom_normal(n: int) -> np.ndarray:
    m = (n + 1) // 2
    u1, u2 = _urandom_uniform(m), _urandom_uniform(m)
    r = np.sqrt(-2.0 * np.log(u1))
    z = np.concatenate([r * np.cos(2 * math.pi * u2), r * np.sin(2 * math.pi * u2)])
    return z[:n]


class NoiseSource:
    """Draws N(0, std²) noise for DP mechanisms.

    Parameters
    ----------
    secure : bool
        Use the OS CSPRNG (production). ``False`` uses a seeded generator.
    seed : int, optional
        Seed for the non-secure generator; ignored when ``secure``.
    """

    def __init__(self, *, secure: bool = True, seed: int | None = None):
        self.secure = secure
        self._gen = None
        if not secure:
            warnings.warn(
                "DP noise is drawn from a seeded, non-cryptographic RNG: fine for tests and experiments, "
                "not for releases. Set privacy.secure_rng=true for production runs.",
                InsecureRNGWarning,
                stacklevel=2,
            )
            self._gen = torch.Generator()
            self._gen.manual_seed(int(seed) if seed is not None else int.from_bytes(os.urandom(8), "little") >> 1)

    def normal(self, shape: tuple[int, ...] | torch.Size, std: float, *, dtype=torch.float32) -> torch.Tensor:
        """A tensor of N(0, std²) noise."""
        shape = tuple(shape)
        if std == 0:
            return torch.zeros(shape, dtype=dtype)
        n = int(np.prod(shape)) if shape else 1
        if self.secure:
            z = _urandom_normal(4 * n).reshape(4, n).sum(axis=0) / 2.0
            return torch.from_numpy(z * std).to(dtype).reshape(shape)
        return torch.normal(0.0, std, size=shape, generator=self._gen).to(dtype)

    def uniform(self, n: int) -> np.ndarray:
        """``n`` uniforms in (0, 1), e.g. for Poisson sampling."""
        if self.secure:
            return _urandom_uniform(n)
        return torch.rand(n, generator=self._gen, dtype=torch.float64).numpy()

    def seed(self) -> int:
        """A 31-bit seed for auxiliary RNGs (model initialisation)."""
        if self.secure:
            return int.from_bytes(os.urandom(4), "little") >> 1
        return int(torch.randint(0, 2**31 - 1, (1,), generator=self._gen))

    def normal_like(self, reference: torch.Tensor, std: float) -> torch.Tensor:
        return self.normal(reference.shape, std, dtype=reference.dtype).to(reference.device)

    def normal_numpy(self, n: int, std: float) -> np.ndarray:
        return self.normal((n,), std, dtype=torch.float64).numpy()
