"""Private-PGM estimation (``mbi`` 2.0) and sampling for the marginal backbone ``pgm``.

Everything here is post-processing of noisy marginals released by :mod:`dpsyn.synth.pgm`: domain compression
from a noisy one-way release, the graphical model estimated from noisy measurements (McKenna, Sheldon & Miklau
2019, "Graphical-model based estimation and inference for differential privacy"), and sampling rows from it.

The fitted :class:`GraphicalModel` keeps only numpy tables derived from the estimate (conditional probability
tables along the junction tree's elimination order, the log-potentials that touch the target, and how to
decompress each column): no jax object, no row. Rows are drawn with the caller's generator, each column by
systematic sampling within the groups of rows that share its parents (mbi's own ``synthetic_data`` rounds counts
the same way but uses numpy's global generator, which a reproducible, explicit-randomness library cannot).
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math

import numpy as np

__all__ = ["Compression", "GraphicalModel", "estimate_model", "junction_tree_cells", "pair_counts", "stratified_uniforms"]


#: XLA's backend optimisation level for the many small programs mbi compiles (a few hundred per fit, each op and
#: shape its own): at level 0 a process that fits pgm on 1,000 Adult rows at ε = 3 took 31 s instead of 38 s (median
#: of 4 A/B pairs); a full Adult fit (32,561 rows) took 65 s against 62 s (single runs: within the machine's noise);
#: diabetes130 (57,214 rows) 124 s against 147 s, but that baseline shared the machine with a test run, so it shows
#: only that large fits are not much slower. Set only when the process has no XLA_FLAGS of its own, before JAX
#: starts its backend.
XLA_FLAGS = "--xla_backend_optimization_level=0"


def _mbi():
    import os

    if "XLA_FLAGS" not in os.environ:
        os.environ["XLA_FLAGS"] = XLA_FLAGS
    import jax

    jax.config.update("jax_enable_x64", True)  # mbi warns that float32 stalls on large totals
    jax.config.update("jax_enable_compilation_cache", False)  # mbi's many small programs make a cache a cost
    import mbi

    return mbi


def _name(j: int) -> str:
    return f"c{j}"


class Compression:
    """Per column: the codes whose noisy one-way count is clearly non-zero keep their own cell; the others share
    one *rare* cell (MST's compression step, McKenna et al. 2021). Decompressing the rare cell draws one of its
    codes in proportion to its count's posterior mean given the noisy count (``stds``: the noise std per column;
    a flat prior on counts ≥ 0, so E[c | z] = z + s·φ(z/s)/Φ(z/s) > 0: a code within the noise keeps some mass,
    and a bin the noise hides is not emptied), or without ``stds`` to its clipped noisy count (uniformly if none
    is positive)."""

    def __init__(self, noisy: list[np.ndarray], thresholds: list[float], stds: list[float] | None = None,
                 shares: list[np.ndarray] | None = None):
        self.kept: list[np.ndarray] = []
        self.rare: list[np.ndarray] = []
        self.rare_p: list[np.ndarray] = []
        self.maps: list[np.ndarray] = []
        for j, (c, threshold) in enumerate(zip(noisy, thresholds, strict=True)):
            keep = np.flatnonzero(c >= threshold)
            rare = np.flatnonzero(c < threshold)
            if len(rare) <= 1:  # nothing to merge
                keep, rare = np.arange(len(c)), np.array([], dtype=np.int64)
            if len(keep) == 0:  # all rare: keep the largest noisy cell apart so the column is never a single cell
                keep = np.array([int(np.argmax(c))])
                rare = np.setdiff1d(np.arange(len(c)), keep)
            m = np.full(len(c), len(keep), dtype=np.int64)
            m[keep] = np.arange(len(keep))
            z = c if shares is None else np.asarray(shares[j], dtype=np.float64)
            if stds is None or not len(rare):
                p = np.clip(z[rare], 0, None) if len(rare) else np.zeros(0)
            else:
                p = posterior_mean_count(z[rare], stds[j])
            p = p / p.sum() if p.sum() > 0 else np.full(len(rare), 1.0 / max(len(rare), 1))
            self.kept.append(keep)
            self.rare.append(rare)
            self.rare_p.append(p)
            self.maps.append(m)

    @property
    def sizes(self) -> list[int]:
        return [len(k) + (1 if len(r) else 0) for k, r in zip(self.kept, self.rare, strict=True)]

    def compress(self, codes: np.ndarray) -> np.ndarray:
        return np.stack([self.maps[j][codes[:, j]] for j in range(codes.shape[1])], axis=1)

    def decompress(self, codes: np.ndarray, *, rng: np.random.Generator) -> np.ndarray:
        out = np.empty_like(codes)
        for j in range(codes.shape[1]):
            kept, rare = self.kept[j], self.rare[j]
            c = codes[:, j]
            is_rare = c >= len(kept)
            out[:, j] = kept[np.minimum(c, len(kept) - 1)]
            if is_rare.any():  # systematic, as the model's own draws (GraphicalModel.sample)
                u = stratified_uniforms(np.zeros(int(is_rare.sum()), dtype=np.int64), rng)
                pick = np.searchsorted(np.cumsum(self.rare_p[j]), u, side="right")
                out[is_rare, j] = rare[np.minimum(pick, len(rare) - 1)]
        return out


def stratified_uniforms(groups: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One U(0, 1) draw per row, systematic within each group: a group's m rows, in a random order, get
    (r + U_g)/m for r = 0..m-1 and one offset U_g ~ U(0, 1) per group. Each row's draw is uniform, so inverting a
    cdf with it samples that row from its distribution; a group's draws are spread evenly, so each code's count
    in the group is ⌊m·p⌋ or ⌈m·p⌉ (systematic sampling) instead of binomial."""
    n = len(groups)
    if n == 0:
        return np.zeros(0)
    order = np.lexsort((rng.random(n), groups))
    g = groups[order]
    start = np.r_[0, np.flatnonzero(g[1:] != g[:-1]) + 1]
    size = np.diff(np.r_[start, n])
    first = np.repeat(start, size)
    which = np.repeat(np.arange(len(start)), size)
    offset = rng.random(len(start))
    u = np.empty(n)
    u[order] = (np.arange(n) - first + offset[which]) / size[which]
    return u


def posterior_mean_count(noisy: np.ndarray, std: float) -> np.ndarray:
    """E[c | c + N(0, std²) = noisy] under a flat prior on c ≥ 0: the mean of N(noisy, std²) truncated at 0."""
    from scipy.special import log_ndtr

    if std <= 0:
        return np.clip(noisy, 0, None).astype(float)
    a = np.asarray(noisy, dtype=float) / std
    mills = np.exp(-0.5 * a * a - 0.5 * math.log(2 * math.pi) - log_ndtr(a))  # φ(a)/Φ(a)
    return np.clip(std * (a + mills), 0, None)


def pair_counts(codes: np.ndarray, sizes: list[int], clique: tuple[int, ...],
                weights: np.ndarray | None = None) -> np.ndarray:
    """The (flattened, C-order) contingency table of ``codes`` over the columns ``clique`` (rows weighted by
    ``weights`` if given)."""
    dims = [sizes[c] for c in clique]
    idx = np.ravel_multi_index(tuple(codes[:, c] for c in clique), dims)
    return np.bincount(idx, weights=weights, minlength=int(np.prod(dims))).astype(np.float64)


def junction_tree_cells(sizes: list[int], cliques: list[tuple[int, ...]]) -> int:
    """Cells of the junction tree a model over ``cliques`` would hold (the cost of estimating it)."""
    mbi = _mbi()
    dom = mbi.Domain([_name(j) for j in range(len(sizes))], sizes)
    cl = [tuple(_name(c) for c in q) for q in cliques] or [(_name(0),)]
    jtree, _ = mbi.junction_tree.make_junction_tree(dom, cl)
    return int(sum(dom.size(c) for c in mbi.junction_tree.maximal_cliques(jtree)))


class GraphicalModel:
    """An estimated graphical model over compressed codes, as numpy tables for forward sampling."""

    #: Mirror-descent iterations the estimate ran (set by :func:`estimate_model`; mbi runs whole blocks of 50).
    iters_run: int | None = None

    def __init__(self, sizes: list[int], order: list[int], parents: list[tuple[int, ...]],
                 cdfs: list[np.ndarray], target_terms: list[tuple[tuple[int, ...], np.ndarray]] | None):
        self.sizes, self.order, self.parents, self.cdfs = sizes, order, parents, cdfs
        self.target_terms = target_terms
        self.one_way: list[np.ndarray] = []

    def sample(self, n: int, *, rng: np.random.Generator, stratified: bool = True) -> np.ndarray:
        """``n`` rows of compressed codes drawn along the sampling order.

        ``stratified`` (default): each column is drawn by systematic sampling within each group of rows that share
        its parents' codes (:func:`stratified_uniforms`), so a group of m rows holds each code ⌊m·p⌋ or ⌈m·p⌉
        times, p its conditional probability; every row's marginal law is the model's, only the sampling noise
        across rows is smaller (mbi's own ``synthetic_data`` rounds the same way). False: i.i.d. rows."""
        out = np.zeros((n, len(self.sizes)), dtype=np.int64)
        for col, par, cdf in zip(self.order, self.parents, self.cdfs, strict=True):
            row = np.ravel_multi_index(tuple(out[:, p] for p in par), [self.sizes[p] for p in par]) if par else \
                np.zeros(n, dtype=np.int64)
            u = stratified_uniforms(row, rng) if stratified else rng.random(n)
            k = (cdf[row] < u[:, None]).sum(axis=1) if par else np.searchsorted(cdf[0], u, side="right")
            out[:, col] = np.minimum(k, self.sizes[col] - 1)
        return out

    def log_prob(self, codes: np.ndarray) -> np.ndarray:
        """log p(x) of each row of compressed codes under the model (the product of the sampling order's
        conditionals)."""
        n = len(codes)
        out = np.zeros(n)
        rows_n = np.arange(n)
        for col, par, cdf in zip(self.order, self.parents, self.cdfs, strict=True):
            row = np.ravel_multi_index(tuple(codes[:, p] for p in par), [self.sizes[p] for p in par]) if par else \
                np.zeros(n, dtype=np.int64)
            table = cdf[row]
            k = np.minimum(codes[:, col], table.shape[1] - 1)
            hi = table[rows_n, k]
            lo = np.where(k > 0, table[rows_n, np.maximum(k - 1, 0)], 0.0)
            out += np.log(np.maximum(hi - lo, 1e-300))
        return out

    def marginal(self, col: int) -> np.ndarray:
        """The model's one-way distribution of compressed column ``col``."""
        return self.one_way[col]

    def target_log_probs(self, codes: np.ndarray) -> np.ndarray:
        """log p(y | x) under the model for the last column y, from compressed feature codes ``codes[:, :-1]``."""
        k = self.sizes[-1]
        logit = np.zeros((len(codes), k))
        for others, table in self.target_terms or []:  # table: (sizes of others..., k)
            idx = tuple(codes[:, o] for o in others)
            logit += table[idx] if others else table[None, :]
        logit -= logit.max(axis=1, keepdims=True)
        return logit - np.log(np.exp(logit).sum(axis=1, keepdims=True))


def estimate_model(sizes: list[int], measurements: list[tuple[tuple[int, ...], np.ndarray, float]], *,
                   total: float, iters: int = 1000, one_way: list[tuple[np.ndarray, float, np.ndarray]] | None = None,
                   full_sizes: list[int] | None = None, min_iters: int | None = None) -> GraphicalModel:
    """Estimate a graphical model from noisy measurements with mbi's mirror descent.

    ``measurements``: (clique of compressed columns, noisy flattened counts, noise std per cell). ``one_way``:
    per column, (noisy counts over the *uncompressed* codes, noise std, compressed code of each original code);
    merged cells are measured as sums, weighted as mbi's ``LinearMeasurement.compress`` does.
    ``min_iters``: after that many iterations, stop at the first block of mbi's steps whose loss reaches the
    noise level (:func:`_descend`); ``iters`` is then the most it runs.
    """
    mbi = _mbi()
    d = len(sizes)
    names = [_name(j) for j in range(d)]
    dom = mbi.Domain(names, sizes)
    ms = []
    for j, (noisy, std, mapping) in enumerate(one_way or []):
        full = mbi.Domain([names[j]], [full_sizes[j]])
        m = mbi.LinearMeasurement(np.asarray(noisy, dtype=np.float64), (names[j],), stddev=float(std))
        if sizes[j] < full_sizes[j]:
            m = m.compress({names[j]: mapping}, full)
            m = dataclasses.replace(m, query=_weighted_query()(m.query.weights))
        ms.append(m)
    for clique, noisy, std in measurements:
        ms.append(mbi.LinearMeasurement(np.asarray(noisy, dtype=np.float64), tuple(names[c] for c in clique),
                                        stddev=float(std)))
    try:
        est, ran = _descend(mbi.estimation.MirrorDescent(), dom, ms, float(total), iters, min_iters, mbi)
        model = _tables(est, dom, names, mbi)
        model.iters_run = ran
        return model
    finally:
        _release_compiled_programs()


def _descend(md, dom, ms, total: float, iters: int, min_iters: int | None, mbi):
    """mbi's mirror descent: the loop of its ``Estimator.estimate`` (``_init``, ``_multi_step`` blocks of
    ``CALLBACK_EVERY`` steps, ``_finalize``), with two changes.

    ``_init`` runs as one compiled program (:func:`_compiled_init`): called eagerly, each of its JAX operations
    compiles a program of its own (about 190 on Adult, 8.7 s of a 19 s fit on 1,000 rows; one program: 2.8 s). The
    state it starts from is the same: zero potentials and the step size 2/(L·total) computed in Python as mbi's
    eager ``_init`` does (its marginals and loss are recomputed by the first step).

    With ``min_iters``, the discrepancy principle (Morozov) stops it: at the first block of steps, after
    ``min_iters``, whose weighted loss ½·Σ((Qμ − y)/σ)² is at most ½·(cells measured), the value the true marginals
    leave in expectation (each noisy cell is its true count plus a Gaussian of std σ). Descending further fits the
    noise: the estimate moves from the uniform start past the truth towards the noisy measurements' own
    inconsistencies. Reads the measurements and their public stds only (post-processing)."""
    import jax
    import jax.numpy as jnp

    loss_fn = mbi.marginal_loss.from_linear_measurements(ms, dom)
    state = _compiled_init()(md, dom, loss_fn, total)
    alpha = 2.0 / (float(loss_fn.lipschitz) * total)
    state = jax.tree.map(jnp.copy, state._replace(alpha=alpha))
    target = 0.5 * sum(int(np.size(m.noisy_measurement)) for m in ms)
    block = mbi.estimation.CALLBACK_EVERY
    ran = 0
    while ran < iters:  # whole blocks, as mbi runs ceil(iters / block) of them
        state = md._multi_step(state, loss_fn, total, ())
        ran += block
        if min_iters is not None and ran >= min_iters and float(state.loss) <= target:
            break
    return md._finalize(state, total), ran


@functools.cache
def _compiled_init():
    """mbi's ``MirrorDescent._init`` jitted once per process (estimator and domain static), so fits of the same
    structure reuse its program as mbi's own jitted ``_multi_step`` is reused."""
    import jax

    return jax.jit(lambda md, dom, loss_fn, total: md._init(dom, loss_fn, total), static_argnums=(0, 1))


@functools.cache
def _weighted_query():
    """mbi's ``WeightedQuery`` (a compressed measurement's weights) compared by value: mbi's own is compared by
    identity, so every fit with a compressed column had a new jit key and recompiled ``_init`` and ``_multi_step``
    even where an earlier fit in the process had the same structure."""
    import dataclasses

    mbi = _mbi()

    @dataclasses.dataclass(frozen=True, eq=False)
    class ByValue(mbi.marginal_loss.WeightedQuery):
        def __hash__(self) -> int:
            return hash(np.asarray(self.weights).tobytes())

        def __eq__(self, other: object) -> bool:
            return type(other) is type(self) and np.array_equal(self.weights, other.weights)

    return ByValue


#: JAX's compiled programs are dropped after this many fits. Every fit compiles its own programs (their shapes are
#: the table's); kept without bound they piled up memory maps (about 1,300 per fit on Adult) until a long-lived
#: process (a worker, a benchmark) hit the kernel's limit and LLVM failed to allocate after ~50 fits. Clearing
#: after every fit made fits of the same shapes recompile (about 3 s each on a 4-column table).
CLEAR_EVERY = 8
_fits_since_clear = 0


def _release_compiled_programs() -> None:
    global _fits_since_clear
    _fits_since_clear += 1
    if _fits_since_clear >= CLEAR_EVERY:
        import jax

        jax.clear_caches()
        _fits_since_clear = 0


def _aligned(attrs: tuple[str, ...], values: np.ndarray, target: tuple[str, ...]) -> np.ndarray:
    """``values`` (axes ``attrs``) with its axes in ``target``'s order and a length-1 axis for each attribute it
    lacks, ready to broadcast against a table over ``target``."""
    a = np.transpose(values, [attrs.index(t) for t in target if t in attrs])
    return a.reshape([values.shape[attrs.index(t)] if t in attrs else 1 for t in target])


def _logsumexp(values: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    if not axes:
        return values
    top = np.max(values, axis=axes, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore"):
        return np.squeeze(np.log(np.sum(np.exp(values - top), axis=axes, keepdims=True)) + top, axis=axes)


def _calibrated(est, dom, mbi) -> dict[tuple[str, ...], np.ndarray]:
    """Each junction-tree node's marginal (summing to 1) of the estimated model, by Shafer-Shenoy message passing
    in log space, in numpy: the same arithmetic as ``mbi.marginal_oracles.message_passing_stable`` on the model's
    potentials expanded to the tree's nodes, without JAX compiling a program for every operation and shape (about
    half of a small table's fit; ``tests/unit/synth/test_pgm.py`` checks the two agree)."""
    jtree, _ = mbi.junction_tree.make_junction_tree(dom, [tuple(c) for c in est.cliques])
    nodes = [tuple(n) for n in jtree.nodes]
    psi = {n: np.zeros([dom[a] for a in n]) for n in nodes}
    for cl in est.cliques:  # each potential into one node that holds its clique: the same joint distribution
        f = est.potentials[cl]
        attrs = tuple(f.domain.attributes)
        node = next(n for n in nodes if set(attrs) <= set(n))
        psi[node] = psi[node] + _aligned(attrs, np.asarray(f.values, dtype=np.float64), node)
    messages: dict[tuple, tuple[tuple[str, ...], np.ndarray]] = {}
    for i, j in mbi.junction_tree.message_passing_order(jtree):
        tau = psi[i]
        for k in jtree.neighbors(i):
            if k != j:
                tau = tau + _aligned(*messages[(k, i)], i)
        sep = tuple(a for a in i if a in j)
        messages[(i, j)] = (sep, _logsumexp(tau, tuple(ax for ax, a in enumerate(i) if a not in sep)))
    out = {}
    for n in nodes:
        b = psi[n]
        for k in jtree.neighbors(n):
            b = b + _aligned(*messages[(k, n)], n)
        out[n] = np.exp(b - _logsumexp(b, tuple(range(b.ndim))))
    return out


def _project(marginals: dict[tuple[str, ...], np.ndarray], attrs: tuple[str, ...]) -> np.ndarray:
    """The marginal over ``attrs`` (in that order) from a node that holds them all."""
    node, table = next((n, t) for n, t in marginals.items() if set(attrs) <= set(n))
    summed = table.sum(axis=tuple(ax for ax, a in enumerate(node) if a not in attrs))
    kept = tuple(a for a in node if a in attrs)
    return np.transpose(summed, [kept.index(a) for a in attrs])


def _tables(est, dom, names, mbi) -> GraphicalModel:
    cliques = [tuple(c) for c in est.cliques]
    jtree, elim = mbi.junction_tree.make_junction_tree(dom, cliques)
    nodes = [set(c) for c in jtree.nodes]
    marg = _calibrated(est, dom, mbi)
    index = {n: j for j, n in enumerate(names)}
    order, parents, cdfs, used = [], [], [], set()
    for col in elim[::-1]:
        rel = used & set().union(*[c for c in nodes if col in c])
        par = tuple(sorted(rel, key=index.get))
        p = np.asarray(_project(marg, par + (col,)), dtype=np.float64).reshape(-1, dom[col])
        p = np.clip(p, 0, None)
        s = p.sum(axis=1, keepdims=True)
        p = np.divide(p, s, out=np.full_like(p, 1.0 / dom[col]), where=s > 0)
        cdf = np.cumsum(p, axis=1)
        cdf[:, -1] = 1.0
        order.append(index[col])
        parents.append(tuple(index[c] for c in par))
        cdfs.append(cdf)
        used.add(col)
    target = names[-1]
    terms = []
    for cl in cliques:
        if target in cl:
            others = tuple(c for c in cl if c != target)
            f = est.potentials[cl]
            table = _aligned(tuple(f.domain.attributes), np.asarray(f.values, dtype=np.float64), others + (target,))
            terms.append((tuple(index[c] for c in others), table))
    model = GraphicalModel(list(dom.shape), order, parents, cdfs, terms)
    for n in names:
        p = np.clip(np.asarray(_project(marg, (n,)), dtype=np.float64), 0, None)
        model.one_way.append(p / p.sum())
    return model


def all_pairs(d: int) -> list[tuple[int, int]]:
    return list(itertools.combinations(range(d), 2))


def expected_abs_noise(std: float, cells: int) -> float:
    """E‖N(0, std²)^cells‖₁: the L1 error a Gaussian measurement of ``cells`` cells adds (AIM's penalty)."""
    return math.sqrt(2 / math.pi) * std * cells
