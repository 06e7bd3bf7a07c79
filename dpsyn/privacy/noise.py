"""Gaussian noise and Poisson sampling for DP mechanisms, from a cryptographically secure source.

Opacus' ``secure_mode`` needs ``torchcsprng``, which has no wheel for current
PyTorch. :class:`NoiseSource` gives the same protection without it. The secure
construction (``secure=True``, the production default):

* **Bits.** An AES-256 keystream in counter mode (CTR), from the ``cryptography``
  package (OpenSSL; AES-NI where the CPU has it). The 256-bit key and the 128-bit
  initial counter block come from ``os.urandom``. AES-CTR under a secret random key
  is the generator of NIST SP 800-90A's CTR_DRBG: its output cannot be told from
  uniform bytes without the key. The stream is re-keyed from ``os.urandom`` every
  2^30 bytes (far below AES's distinguishing bounds) and whenever the process id
  differs from the one that keyed it (checked on every draw, plus an
  ``os.register_at_fork`` hook), so a child made by ``os.fork`` never replays its
  parent's noise. Pickling a source drops its key; the copy keys itself afresh.
  A key lives in the process's memory until the next re-key, as the noise it makes does.
* **Uniforms.** 64 bits of the stream per uniform; the top 52 bits k give
  (k + 1/2) / 2^52, strictly inside (0, 1), computed exactly (no rounding: the
  double 1.k minus 1 − 2^-53).
* **Normals.** Box-Muller in float64 on pairs of uniforms (u1, u2):
  r = sqrt(-2 ln u1), θ = 2π u2, the normals r cos θ and r sin θ.
* **Floating-point defence.** Every noise value is the sum of 4 such normals
  divided by 2 (so still N(0, 1)), the 4 taken from 4 *distinct* uniform pairs
  (the cosine and sine of one pair always go to different values), as Opacus does
  in secure mode: it defeats the floating-point attacks on the Gaussian mechanism
  (Mironov 2012; Holohan & Braghin 2021, arXiv:2107.10138 §5.1). The value is then
  scaled by the std and cast to the requested dtype.
* **Poisson sampling** (:meth:`NoiseSource.poisson_sample`): the gaps between
  selected rows are drawn as geometric variables, G = ⌊ln U / ln(1 − q)⌋, so that
  every row is selected independently with probability q (a Bernoulli process)
  at a cost of about one uniform per *selected* row instead of one per row.

With ``secure=False`` (tests, experiments) noise comes from a seeded
``torch.Generator`` so runs reproduce; a loud :class:`InsecureRNGWarning`
says so once per source. This path is unchanged by the secure construction
above, and its Poisson sampling keeps one uniform per row (``uniform(n) < q``),
so seeded runs reproduce their earlier draws.
"""

from __future__ import annotations

import math
import os
import threading
import warnings
import weakref
from typing import TYPE_CHECKING

import numpy as np

from dpsyn.errors import InsecureRNGWarning

if TYPE_CHECKING:
    import torch

__all__ = ["NoiseSource"]

_ONE_BITS = np.uint64(0x3FF0000000000000)  # exponent bits of 1.0: 1.k for a 52-bit k
_HALF_ULP = 2.0**-53
_REKEY_BYTES = 1 << 30  # re-key the AES-CTR stream after this many bytes
_CHUNK = 1 << 18  # values per chunk of a large draw (bounds the reused buffers to about 40 MiB per source)
_GAPS_PER_ROUND = 1 << 22  # most geometric gaps drawn at once by poisson_sample


class _Keystream:
    """AES-256-CTR keystream keyed from ``os.urandom``; re-keyed after fork and every 2^30 bytes.

    Also owns reusable work buffers (fresh large arrays cost page faults on every draw).
    Thread-safe: one lock around each draw.
    """

    _live: weakref.WeakSet = weakref.WeakSet()

    def __init__(self):
        self.lock = threading.Lock()
        self._enc = None
        self._pid = -1
        self._used = 0
        self._zeros = bytearray()
        self._bytes = np.empty(0, dtype=np.uint8)
        self._f64 = np.empty(0)
        self._f64b = np.empty(0)
        self.rekeys = 0
        _Keystream._live.add(self)

    def _rekey(self) -> None:
        from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

        self._enc = Cipher(algorithms.AES(os.urandom(32)), modes.CTR(os.urandom(16))).encryptor()
        self._pid = os.getpid()
        self._used = 0
        self.rekeys += 1

    def forget(self) -> None:
        """Drop the key (after fork: the child keys itself afresh); a new lock, in case a thread held it."""
        self._enc = None
        self.lock = threading.Lock()

    def words(self, n: int) -> np.ndarray:
        """``n`` uint64 words of keystream: a view into a reused buffer, valid until the next call."""
        nbytes = 8 * n
        if len(self._zeros) < nbytes:
            self._zeros = bytearray(nbytes)
            self._bytes = np.empty(nbytes + 16, dtype=np.uint8)  # update_into wants block size - 1 spare bytes
        if self._enc is None or self._pid != os.getpid() or self._used + nbytes > _REKEY_BYTES:
            self._rekey()
        self._enc.update_into(memoryview(self._zeros)[:nbytes], self._bytes)
        self._used += nbytes
        return self._bytes[:nbytes].view(np.uint64)

    def uniforms(self, n: int, out: np.ndarray | None = None) -> np.ndarray:
        """``n`` uniforms (k + 1/2) / 2^52 in (0, 1), k the top 52 bits of a word (into ``out`` when given).

        Built exactly: the bits 1.k (a double in [1, 2)) minus (1 − 2^-53); every value is representable.
        """
        raw = self.words(n)
        np.right_shift(raw, np.uint64(12), out=raw)
        np.bitwise_or(raw, _ONE_BITS, out=raw)
        u = np.empty(n) if out is None else out
        np.subtract(raw.view(np.float64), 1.0 - _HALF_ULP, out=u)
        return u

    def work(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        if len(self._f64) < n:
            self._f64, self._f64b = np.empty(n), np.empty(n)
        return self._f64[:n], self._f64b[:n]

    def std_normal(self, m: int, out: np.ndarray) -> None:
        """``m`` ≥ 2 values into ``out`` (float64), each (sum of 4 Box-Muller normals from 4 distinct pairs) / 2.

        4m uniforms: the first 2m are the u1 (radius) of pairs 0 … 2m−1, the last 2m their u2 (angle).
        """
        import torch

        u, cos_buf = self.work(4 * m)
        self.uniforms(4 * m, out=u)
        t = torch.from_numpy(u)
        r, theta = t[: 2 * m], t[2 * m:]
        r.log_().mul_(-2.0)
        np.sqrt(u[: 2 * m], out=u[: 2 * m])
        theta.mul_(2.0 * math.pi)
        c = torch.from_numpy(cos_buf[: 2 * m])
        torch.cos(theta, out=c)
        s = theta.sin_()
        c.mul_(r)
        s.mul_(r)
        # value i: cosines of pairs i and m+i, sines of pairs i-1 and m+i-1 (mod 2m): 4 distinct pairs when m ≥ 2
        o = torch.from_numpy(out)
        torch.add(c[:m], c[m:], out=o)
        o[1:] += s[: m - 1]
        o[0] += s[2 * m - 1]
        o += s[m - 1: 2 * m - 1]
        o *= 0.5


def _after_fork_in_child() -> None:
    for ks in list(_Keystream._live):
        ks.forget()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


class NoiseSource:
    """Draws N(0, std²) noise and random samples for DP mechanisms.

    Parameters
    ----------
    secure : bool
        Use the AES-CTR CSPRNG keyed from the OS (production; see the module docstring).
        ``False`` uses a seeded generator.
    seed : int, optional
        Seed for the non-secure generator; ignored when ``secure``.
    """

    def __init__(self, *, secure: bool = True, seed: int | None = None):
        self.secure = secure
        self._gen = None
        self._stream = _Keystream() if secure else None
        if not secure:
            warnings.warn(
                "DP noise is drawn from a seeded, non-cryptographic RNG: fine for tests and experiments, "
                "not for releases. Set privacy.secure_rng=true for production runs.",
                InsecureRNGWarning,
                stacklevel=2,
            )
            import torch

            self._gen = torch.Generator()
            self._gen.manual_seed(int(seed) if seed is not None else int.from_bytes(os.urandom(8), "little") >> 1)

    # a pickled secure source carries no key: the copy re-keys from os.urandom
    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        if self.secure:
            state["_stream"] = None
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        if self.secure:
            self._stream = _Keystream()

    def _secure_normal64(self, n: int, std: float) -> np.ndarray:
        """``n`` float64 values N(0, std²) from the secure stream."""
        out = np.empty(max(n, 2))
        with self._stream.lock:
            for lo in range(0, len(out), _CHUNK):
                hi = min(lo + _CHUNK, len(out))
                if hi - lo < 2:  # a lone last value: redraw the last two so each uses 4 distinct pairs
                    lo = hi - 2
                self._stream.std_normal(hi - lo, out[lo:hi])
        out *= std
        return out[:n]

    def normal(self, shape: tuple[int, ...] | torch.Size, std: float, *, dtype=None) -> torch.Tensor:
        """A tensor of N(0, std²) noise (``dtype`` default ``torch.float32``)."""
        import torch  # at call time: reading a config or failing pre-flight loads no torch

        dtype = torch.float32 if dtype is None else dtype
        shape = tuple(shape)
        if std == 0:
            return torch.zeros(shape, dtype=dtype)
        n = int(np.prod(shape)) if shape else 1
        if self.secure:
            return torch.from_numpy(self._secure_normal64(n, std)).to(dtype).reshape(shape)
        return torch.normal(0.0, std, size=shape, generator=self._gen).to(dtype)

    def normal_list(self, shapes: list[torch.Size], std: float, *, dtype=None) -> list[torch.Tensor]:
        """N(0, std²) noise for several tensors at once (e.g. one per parameter).

        Secure: one draw for all, split (same distribution as one :meth:`normal` per shape, cheaper).
        Seeded: one :meth:`normal` per shape in order, so the draws equal those of separate calls.
        """
        import torch

        dtype = torch.float32 if dtype is None else dtype
        shapes = [tuple(s) for s in shapes]
        if not self.secure or std == 0:
            return [self.normal(s, std, dtype=dtype) for s in shapes]
        sizes = [int(np.prod(s)) if s else 1 for s in shapes]
        flat = torch.from_numpy(self._secure_normal64(sum(sizes), std)).to(dtype)
        return [part.reshape(s) for part, s in zip(torch.split(flat, sizes), shapes, strict=True)]

    def uniform(self, n: int) -> np.ndarray:
        """``n`` uniforms in (0, 1), e.g. for coin flips."""
        if self.secure:
            out = np.empty(n)
            with self._stream.lock:
                for lo in range(0, n, _CHUNK):
                    hi = min(lo + _CHUNK, n)
                    self._stream.uniforms(hi - lo, out=out[lo:hi])
            return out
        import torch

        return torch.rand(n, generator=self._gen, dtype=torch.float64).numpy()

    def poisson_sample(self, n: int, q: float) -> np.ndarray:
        """Sorted indices of a Poisson sample of ``range(n)``: each row independently with probability ``q``.

        Secure: geometric gaps G = ⌊ln U / ln(1 − q)⌋ (P(G ≥ k) = (1 − q)^k), about n·q uniforms.
        Seeded: ``flatnonzero(uniform(n) < q)``, the draws of earlier versions.
        """
        if not self.secure:
            return np.flatnonzero(self.uniform(n) < q)
        if n <= 0 or q <= 0:
            return np.empty(0, dtype=np.int64)
        if q >= 1:
            return np.arange(n, dtype=np.int64)
        log1mq = math.log1p(-q)
        parts, pos = [], -1  # pos: index of the last selected row
        while True:
            left = n - 1 - pos  # rows after pos
            # enough gaps for all of them nearly always (else another round), at most _GAPS_PER_ROUND at a time
            k = min(int(left * q + 6.0 * math.sqrt(left * q) + 16), _GAPS_PER_ROUND)
            gaps = np.floor(np.log(self.uniform(k)) / log1mq)  # float64 geometric(q) on {0, 1, ...}
            np.minimum(gaps, float(n), out=gaps)  # keeps huge gaps (tiny q) inside int64
            idx = pos + np.cumsum(gaps.astype(np.int64) + 1)
            stop = int(np.searchsorted(idx, n))
            parts.append(idx[:stop])
            if stop < k:
                return np.concatenate(parts)
            pos = int(idx[-1])

    def seed(self) -> int:
        """A 31-bit seed for auxiliary RNGs (model initialisation)."""
        if self.secure:
            return int.from_bytes(os.urandom(4), "little") >> 1
        import torch

        return int(torch.randint(0, 2**31 - 1, (1,), generator=self._gen))

    def normal_like(self, reference: torch.Tensor, std: float) -> torch.Tensor:
        return self.normal(reference.shape, std, dtype=reference.dtype).to(reference.device)

    def normal_numpy(self, n: int, std: float) -> np.ndarray:
        if self.secure and std != 0:
            return self._secure_normal64(n, std)
        import torch

        return self.normal((n,), std, dtype=torch.float64).numpy()
