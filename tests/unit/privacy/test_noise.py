"""NoiseSource: the AES-CTR CSPRNG (uniforms, Box-Muller, 4-normal sums, re-keying) and Poisson sampling."""

from __future__ import annotations

import math
import os
import pickle

import numpy as np
import pytest
import torch
from scipy import stats

from dpsyn.privacy import NoiseSource
from dpsyn.privacy import noise as noise_mod

pytestmark = pytest.mark.filterwarnings("ignore::dpsyn.errors.InsecureRNGWarning")


def test_secure_normal_moments_and_normality_over_a_million_draws():
    z = NoiseSource(secure=True).normal_numpy(1_000_000, 1.0)
    assert abs(z.mean()) < 0.005  # 5 standard errors
    assert z.var() == pytest.approx(1.0, abs=0.007)  # sd of the variance ≈ 0.0014
    assert stats.kstest(z, "norm").pvalue > 1e-6
    assert abs(stats.kurtosis(z)) < 0.025  # excess kurtosis of a normal: 0 (sd ≈ 0.005)


def test_secure_normal_scales_shapes_and_dtypes():
    ns = NoiseSource(secure=True)
    z = ns.normal((400, 500), 3.0)
    assert z.shape == (400, 500) and z.dtype == torch.float32
    assert float(z.std()) == pytest.approx(3.0, rel=0.01)
    assert ns.normal((), 1.0).shape == () and ns.normal((1,), 1.0).shape == (1,)
    assert ns.normal_numpy(1, 1.0).shape == (1,) and ns.normal_numpy(3, 1.0).dtype == np.float64
    assert torch.equal(ns.normal((2, 2), 0.0), torch.zeros(2, 2))
    parts = ns.normal_list([torch.Size([300, 200]), torch.Size([200]), torch.Size([])], 2.0)
    assert [tuple(p.shape) for p in parts] == [(300, 200), (200,), ()]
    flat = torch.cat([p.reshape(-1) for p in parts])
    assert float(flat.std()) == pytest.approx(2.0, rel=0.02)
    wide = ns.normal_list([torch.Size([300]), torch.Size([300])], 1.0, dtype=torch.float64)
    assert wide[0].dtype == torch.float64
    assert len(set(torch.cat(wide).tolist())) == 600  # fresh values for every tensor


def test_large_draws_are_chunked_without_gaps_or_repeats(monkeypatch):
    monkeypatch.setattr(noise_mod, "_CHUNK", 100)  # 20,001 values: 200 chunks and a lone last value
    z = NoiseSource(secure=True).normal_numpy(20_001, 1.0)
    assert len(set(z.tolist())) == 20_001 and np.all(np.isfinite(z))
    assert abs(z.mean()) < 0.04 and z.std() == pytest.approx(1.0, abs=0.03)
    assert stats.kstest(z, "norm").pvalue > 1e-6
    u = NoiseSource(secure=True).uniform(1_001)
    assert len(set(u.tolist())) == 1_001 and np.all((u > 0) & (u < 1))


def _stub_words(monkeypatch, words: np.ndarray) -> None:
    def fake(self, n):
        assert n == len(words)
        return words.copy()

    monkeypatch.setattr(noise_mod._Keystream, "words", fake)


def test_uniforms_are_exact_midpoints_strictly_inside_the_unit_interval(monkeypatch):
    ns = NoiseSource(secure=True)
    top = np.uint64(2**64 - 1)
    _stub_words(monkeypatch, np.array([0, top, 1 << 12, 1 << 63], dtype=np.uint64))
    u = ns.uniform(4)
    assert u.tolist() == [2.0**-53, 1 - 2.0**-53, 3 * 2.0**-53, 0.5 + 2.0**-53]  # (k + 1/2) / 2^52, k = top 52 bits


def test_uniforms_are_uniform_in_the_open_unit_interval():
    u = NoiseSource(secure=True).uniform(1_000_000)
    assert np.all((u > 0) & (u < 1))
    assert abs(u.mean() - 0.5) < 0.0015
    assert stats.kstest(u, "uniform").pvalue > 1e-6


def test_each_value_sums_four_box_muller_normals_from_four_distinct_pairs(monkeypatch):
    """Value i = (cos of pairs i, m+i; sin of pairs i−1, m+i−1 (mod 2m)) / 2 — never the cos and sin of one pair."""
    m = 5
    rng = np.random.default_rng(0)
    words = rng.integers(0, 2**63, 4 * m, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    u = ((words >> np.uint64(12)).astype(np.float64) + 0.5) / 2.0**52
    r, theta = np.sqrt(-2 * np.log(u[: 2 * m])), 2 * math.pi * u[2 * m:]
    cos, sin = r * np.cos(theta), r * np.sin(theta)
    expected = [(cos[i] + cos[m + i] + sin[(i - 1) % (2 * m)] + sin[(m + i - 1) % (2 * m)]) / 2 for i in range(m)]
    _stub_words(monkeypatch, words)
    got = NoiseSource(secure=True).normal_numpy(m, 1.0)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


def test_fork_rekeys_the_child():
    ns = NoiseSource(secure=True)
    ns.uniform(8)  # keyed in the parent
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        try:
            os.write(write_end, ns.uniform(8).tobytes())
        finally:
            os._exit(0)
    os.close(write_end)
    child = np.frombuffer(os.read(read_end, 64), dtype=np.float64)
    os.close(read_end)
    os.waitpid(pid, 0)
    parent = ns.uniform(8)
    assert child.shape == (8,)
    assert not np.array_equal(child, parent)  # without a re-key both would continue the same stream


def test_fork_rekey_does_not_rely_on_the_fork_hook_alone(monkeypatch):
    """The pid check catches a stale key even when the at-fork hook did not run (e.g. a pid change without it)."""
    ns = NoiseSource(secure=True)
    ns.uniform(1)
    assert ns._stream.rekeys == 1
    monkeypatch.setattr(os, "getpid", lambda: -12345)
    ns.uniform(1)
    assert ns._stream.rekeys == 2


def test_stream_rekeys_periodically(monkeypatch):
    monkeypatch.setattr(noise_mod, "_REKEY_BYTES", 8 * 1000)
    ns = NoiseSource(secure=True)
    ns.uniform(600)
    ns.uniform(600)  # 9,600 bytes > 8,000: a new key for the second draw
    ns.uniform(100)
    assert ns._stream.rekeys == 2


def test_pickled_secure_source_carries_no_key():
    ns = NoiseSource(secure=True)
    ns.uniform(4)
    blob = pickle.dumps(ns)
    assert len(blob) < 400  # no buffers, no cipher state
    copy = pickle.loads(blob)
    assert copy._stream.rekeys == 0
    assert not np.array_equal(copy.uniform(8), ns.uniform(8))


@pytest.mark.parametrize("secure,gaps_per_round", [(True, None), (True, 16), (False, None)],
                         ids=["secure", "secure-many-rounds", "seeded"])
def test_poisson_sample_selects_each_row_independently_at_rate_q(monkeypatch, secure, gaps_per_round):
    if gaps_per_round:
        monkeypatch.setattr(noise_mod, "_GAPS_PER_ROUND", gaps_per_round)  # continue from the last row many times
    ns = NoiseSource(secure=secure, seed=3)
    n, q, draws = 500, 0.07, 1000
    hits = np.zeros(n)
    pairs = 0
    sizes = []
    for _ in range(draws):
        idx = ns.poisson_sample(n, q)
        assert np.all(np.diff(idx) > 0) and (len(idx) == 0 or (idx[0] >= 0 and idx[-1] < n))
        hits[idx] += 1
        pairs += int(np.sum(np.diff(idx) == 1))  # both of two neighbouring rows selected
        sizes.append(len(idx))
    se = math.sqrt(q * (1 - q) / (n * draws))
    assert abs(hits.mean() / draws - q) < 5 * se
    assert stats.chisquare(hits).pvalue > 1e-6  # no row favoured (first, last, after a gap, ...)
    assert np.var(sizes) == pytest.approx(n * q * (1 - q), rel=0.2)  # Binomial(n, q) batch sizes
    assert pairs / ((n - 1) * draws) == pytest.approx(q * q, rel=0.15)  # independence of neighbours


def test_poisson_sample_edges():
    ns = NoiseSource(secure=True)
    assert ns.poisson_sample(10, 1.0).tolist() == list(range(10))
    assert ns.poisson_sample(10, 0.0).size == 0 and ns.poisson_sample(0, 0.5).size == 0
    assert ns.poisson_sample(3, 1e-300).size == 0
    big = ns.poisson_sample(10_000_000, 0.5)  # more gaps than one round draws
    assert abs(len(big) - 5_000_000) < 5 * math.sqrt(2_500_000)
    assert np.all(np.diff(big) > 0) and big[-1] < 10_000_000


def test_seeded_source_is_unchanged():
    """The seeded path draws what earlier versions drew (seeded tests and runs reproduce)."""
    a = NoiseSource(secure=False, seed=11)
    gen = torch.Generator()
    gen.manual_seed(11)
    torch.testing.assert_close(a.normal((3, 4), 2.0), torch.normal(0.0, 2.0, size=(3, 4), generator=gen))
    np.testing.assert_array_equal(a.uniform(5), torch.rand(5, generator=gen, dtype=torch.float64).numpy())
    idx = a.poisson_sample(50, 0.3)
    np.testing.assert_array_equal(idx, np.flatnonzero(torch.rand(50, generator=gen, dtype=torch.float64).numpy() < 0.3))
    b = NoiseSource(secure=False, seed=11)
    shapes = [torch.Size([2, 3]), torch.Size([4])]
    c = NoiseSource(secure=False, seed=11)
    for x, y in zip(b.normal_list(shapes, 1.5), [c.normal(s, 1.5) for s in shapes], strict=True):
        assert torch.equal(x, y)
