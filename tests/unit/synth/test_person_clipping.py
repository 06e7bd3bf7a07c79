"""Per-person clipping (user-level DP-SGD): each person's summed gradient is clipped as a whole, persons are
Poisson-sampled with all their rows, and the steps are recorded at the person level."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from dpsyn.privacy import NoiseSource, PrivacyAccountant
from dpsyn.synth.bookkeeping import BookKeeping, bk_layers
from dpsyn.synth.dpgen import _ARNet, _one_hot
from dpsyn.synth.dpsgd import steps_and_rate, train_dpsgd

pytestmark = [pytest.mark.filterwarnings("ignore::dpsyn.errors.InsecureRNGWarning")]

SIZES = [3, 4, 2, 5]
C = 2.5


def _codes(n: int, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.stack([torch.randint(s, (n,), generator=g) for s in SIZES], 1)


def _loss(model, xb, criterion):
    return sum(criterion(lg, xb[:, j]) for j, lg in enumerate(model(_one_hot(xb, SIZES))))


def _net(seed: int = 1) -> _ARNet:
    torch.manual_seed(seed)
    return _ARNet(SIZES, 8)


def _units(n: int, seed: int = 2) -> torch.Tensor:
    """Codes 0..U−1, persons of 1 to 5 rows, rows of one person scattered over the batch."""
    g = torch.Generator().manual_seed(seed)
    sizes = torch.randint(1, 6, (n,), generator=g)
    codes = torch.repeat_interleave(torch.arange(n), sizes)[:n]
    return codes[torch.randperm(n, generator=g)]


def test_per_person_clipped_sum_equals_autograd_per_person():
    """Independent of the ghost formula: one backward per person of the person's summed loss, clipped, summed."""
    model, xb = _net(), _codes(40, seed=3)
    bound = 4.0  # persons' summed gradients have norms of about 2.5 to 6 here
    units = _units(40)
    params = list(model.parameters())
    crit = nn.CrossEntropyLoss(reduction="none")
    ref = [torch.zeros_like(p) for p in params]
    ref_norms = []
    for u in range(int(units.max()) + 1):
        rows = torch.nonzero(units == u).flatten()
        grads = torch.autograd.grad(_loss(model, xb[rows], crit).sum(), params)
        norm = torch.sqrt(sum((g * g).sum() for g in grads))
        ref_norms.append(norm)
        c = torch.clamp(bound / (norm + 1e-6), max=1.0)
        for r, g in zip(ref, grads, strict=True):
            r += c * g
    ref_norms = torch.stack(ref_norms)
    assert 0 < int((ref_norms > bound).sum()) < len(ref_norms)  # some persons clipped, some not
    with BookKeeping(model, bk_layers(model)[0]) as bk:
        got, norms = bk.clipped_sum(_loss, xb, crit, bound, units=units)
    torch.testing.assert_close(norms, ref_norms, rtol=1e-5, atol=1e-5)
    for p, r in zip(params, ref, strict=True):
        torch.testing.assert_close(got[p], r, rtol=1e-5, atol=1e-5)


def test_a_person_with_many_rows_moves_the_clipped_sum_by_at_most_c():
    """The sensitivity the accountant assumes: add one person with 30 rows to a batch."""
    model, xb = _net(), _codes(30, seed=4)
    units = _units(30)
    extra = _codes(30, seed=5)
    crit = nn.CrossEntropyLoss(reduction="none")
    with BookKeeping(model, bk_layers(model)[0]) as bk:
        base, _ = bk.clipped_sum(_loss, xb, crit, C, units=units)
        new_unit = torch.full((30,), int(units.max()) + 1)
        more, norms = bk.clipped_sum(_loss, torch.cat([xb, extra]), crit, C, units=torch.cat([units, new_unit]))
    assert norms[-1] > 3 * C  # the new person's own gradient is far over the bound, and it is clipped to C
    diff = torch.sqrt(sum(((more[p] - base[p]) ** 2).sum() for p in model.parameters()))
    assert float(diff) <= C * (1 + 1e-4)
    # clipping each row instead would let the same person move the sum by up to 30 C
    with BookKeeping(model, bk_layers(model)[0]) as bk:
        row_base, _ = bk.clipped_sum(_loss, xb, crit, C)
        row_more, _ = bk.clipped_sum(_loss, torch.cat([xb, extra]), crit, C)
    row_diff = torch.sqrt(sum(((row_more[p] - row_base[p]) ** 2).sum() for p in model.parameters()))
    assert float(row_diff) > 2 * C


def test_training_samples_persons_and_records_person_level_steps():
    data, units = _codes(300, seed=6), _units(300)
    persons = int(units.max()) + 1
    acct = PrivacyAccountant(epsilon=4.0, delta=1e-5, unit="pid", rows_per_unit=5)
    q, steps = steps_and_rate(persons, batch_size=20, epochs=1)
    sigma = acct.calibrate(sample_rate=q, steps=steps, label="t", person_level=True)
    train_dpsgd(_net(), data=data, loss_fn=_loss, accountant=acct, noise=NoiseSource(secure=False, seed=7),
                noise_multiplier=sigma, batch_size=20, epochs=1, max_grad_norm=C, lr=0.01, label="t",
                public_rows=persons, units=units)
    (m,) = acct.ledger
    per_epoch = -(-persons // 20)
    assert m.steps == per_epoch and m.sample_rate == pytest.approx(1 / per_epoch)
    assert m.noise_multiplier == pytest.approx(sigma)  # person level as given: no σ/k, no amplified rate
    assert acct.check() <= 4.0


def test_per_person_clipping_refuses_a_row_count_mismatch():
    data = _codes(50)
    acct = PrivacyAccountant(epsilon=4.0, delta=1e-5)
    with pytest.raises(ValueError, match="one person code per row"):
        train_dpsgd(_net(), data=data, loss_fn=_loss, accountant=acct, noise=NoiseSource(secure=False, seed=7),
                    noise_multiplier=1.0, batch_size=10, epochs=1, max_grad_norm=C, lr=0.01, label="t",
                    public_rows=50, units=torch.zeros(10, dtype=torch.int64))


# -- DP-SGD-S per person: a person's group is the group of their first row; bounds, counts and sizes per person ------
GC = dict(floor=0.05, compensate=0.0, rarity=0.0)


def _first_row_groups(groups: torch.Tensor, units: torch.Tensor) -> dict[int, int]:
    """Reference: each person's group, the group of the person's first row in data order."""
    out: dict[int, int] = {}
    for u, g in zip(units.tolist(), groups.tolist(), strict=True):  # in data order
        out.setdefault(u, g)
    return out


def _gc_run(*, group_clip: bool, units: torch.Tensor, data: torch.Tensor, acct: PrivacyAccountant, persons: int,
            clipper=None):
    from dpsyn.synth.group_clip import GroupClipConfig, GroupClipper

    q, steps = steps_and_rate(persons, batch_size=20, epochs=1)
    sigma = acct.calibrate(sample_rate=q, steps=steps, label="t", person_level=True)
    if group_clip and clipper is None:
        clipper = GroupClipper(SIZES[0], C, GroupClipConfig(column="c0", rule="equalize", **GC))
    train_dpsgd(_net(), data=data, loss_fn=_loss, accountant=acct, noise=NoiseSource(secure=False, seed=7),
                noise_multiplier=sigma, batch_size=20, epochs=1, max_grad_norm=C, lr=0.01, label="t",
                public_rows=persons, units=units, groups=data[:, 0] if group_clip else None, group_clip=clipper)
    return sigma, q, steps


def test_group_clipping_per_person_records_the_same_person_level_steps_as_per_person_clipping():
    """No group-privacy conversion: with units, DP-SGD-S's steps are recorded (σ, q, T) over persons, exactly as
    per-person clipping with one bound records them."""
    data, units = _codes(300, seed=6), _units(300)
    persons = int(units.max()) + 1
    hist = []
    for group_clip in (False, True):
        acct = PrivacyAccountant(epsilon=4.0, delta=1e-5, unit="pid", rows_per_unit=5)
        sigma, q, steps = _gc_run(group_clip=group_clip, units=units, data=data, acct=acct, persons=persons)
        hist.append(acct.history())
        assert acct.check() <= 4.0
    assert hist[0] == hist[1] == [(pytest.approx(sigma), pytest.approx(q), steps)]  # σ as given: no σ/5, no 1−(1−q)^5


def test_per_unit_bounds_clip_each_persons_summed_gradient_to_that_persons_bound():
    """A length-U bound tensor with units: each person's contribution (all their rows) has norm ≤ its own bound."""
    model, xb = _net(), _codes(40, seed=3)
    units = _units(40)
    n_units = int(units.max()) + 1
    crit = nn.CrossEntropyLoss(reduction="none")
    with BookKeeping(model, bk_layers(model)[0]) as bk:
        _, raw = bk.clipped_sum(_loss, xb, crit, 1e9, units=units)  # unclipped per-person norms
        bounds = torch.where(torch.arange(n_units) % 2 == 0, raw * 0.5, raw * 2.0).float()  # even: clipped
        total, norms = bk.clipped_sum(_loss, xb, crit, bounds, units=units)
        torch.testing.assert_close(norms, raw)
        parts = []
        for u in range(n_units):
            rows = torch.nonzero(units == u).flatten()
            part, _ = bk.clipped_sum(_loss, xb[rows], crit, bounds[u:u + 1], units=torch.zeros(len(rows),
                                                                                                  dtype=torch.int64))
            norm = float(torch.sqrt(sum((g ** 2).sum() for g in part.values())))
            assert norm <= float(bounds[u]) + 1e-5
            if u % 2 == 0:  # clipped: exactly at its bound; the unclipped person keeps their own norm
                assert norm == pytest.approx(float(bounds[u]), rel=1e-4) and float(raw[u]) > float(bounds[u])
            else:
                assert norm == pytest.approx(float(raw[u]), rel=1e-4)
            parts.append(part)
        for p in model.parameters():  # the batch's clipped sum is the sum of the persons' clipped sums
            torch.testing.assert_close(total[p], sum(part[p] for part in parts), rtol=1e-4, atol=1e-5)
        with pytest.raises(ValueError, match="one bound per unit"):
            bk.clipped_sum(_loss, xb, crit, torch.ones(40), units=units)  # one per row, not one per person
        with pytest.raises(ValueError, match="one bound per row"):
            bk.clipped_sum(_loss, xb, crit, torch.ones(n_units))


def test_group_clipping_per_person_bounds_and_counts_persons_by_their_first_row(monkeypatch):
    """Each step clips person p at C_{g(p)}, g(p) the group of p's first row (rows of one person fall in several
    groups here), and the 2K noisy counts get one entry per sampled person, not per row."""
    from dpsyn.synth.group_clip import GroupClipConfig, GroupClipper, float32_floor

    codes, units = _codes(300, seed=6), _units(300)
    data = torch.cat([codes, torch.arange(300)[:, None]], 1)  # last column: the row's index (the loss ignores it)
    persons = int(units.max()) + 1
    first = _first_row_groups(codes[:, 0], units)
    assert any(len(set(codes[units == u, 0].tolist())) > 1 for u in range(persons))  # mixed persons exist
    # the quantile rule, started from three different bounds (the few noisy counts of this run barely move them):
    # the group a person is clipped in matters
    clipper = GroupClipper(SIZES[0], C, GroupClipConfig(column="c0", rule="quantile", ema=0.0, **GC))
    clipper.quantiles = clipper.smoothed = np.array([0.3, 1.0, 2.0]) * C
    person_of = units
    seen: list[tuple] = []
    real_sum, real_update = BookKeeping.clipped_sum, GroupClipper.update

    def clipped_sum(self, loss_fn, batch, criterion, bound, *, units=None):
        assert units is not None and isinstance(bound, torch.Tensor)
        rows = batch[:, -1]
        n_units = int(units.max()) + 1
        person = [int(person_of[rows[units == u][0]]) for u in range(n_units)]
        expect = torch.from_numpy(float32_floor(clipper.bounds))[[first[p] for p in person]]
        assert len(bound) == n_units and torch.equal(bound, expect)
        seen.append(("sum", n_units, [first[p] for p in person], len(batch), len(set(expect.tolist())) > 1))
        return real_sum(self, loss_fn, batch, criterion, bound, units=units)

    def update(self, norms, groups, **kw):
        kind, n_units, groups_expected, _, _ = seen[-1]
        assert kind == "sum" and len(norms) == len(groups) == n_units  # one count per person
        assert groups.tolist() == groups_expected
        seen.append(("update", len(norms)))
        return real_update(self, norms, groups, **kw)

    monkeypatch.setattr(BookKeeping, "clipped_sum", clipped_sum)
    monkeypatch.setattr(GroupClipper, "update", update)
    acct = PrivacyAccountant(epsilon=4.0, delta=1e-5, unit="pid", rows_per_unit=5)
    _, _, steps = _gc_run(group_clip=True, units=units, data=data, acct=acct, persons=persons, clipper=clipper)
    sums = [s for s in seen if s[0] == "sum"]
    assert len(clipper.history) == steps and len([s for s in seen if s[0] == "update"]) == len(sums) >= steps - 2
    assert sum(s[1] for s in sums) < 0.6 * sum(s[3] for s in sums)  # persons: far fewer than rows
    assert sum(s[4] for s in sums) > len(sums) / 2  # most steps clip persons at different bounds


def test_group_size_histogram_with_a_unit_counts_persons_and_is_charged_per_person():
    from dpsyn.synth.group_clip import SIZES_LABEL, GroupClipConfig, measure_group_sizes, plan_group_sizes

    class _Zero:  # no noise: the counts themselves
        def normal_numpy(self, n, std):
            return np.zeros(n)

    groups = torch.tensor([0, 1, 1, 2, 0, 2, 2, 1])
    units = torch.tensor([3, 0, 3, 1, 2, 1, 4, 0])  # first rows: person 3 → 0, 0 → 1, 1 → 2, 2 → 0, 4 → 2
    acct = PrivacyAccountant(epsilon=1.0, delta=1e-5, unit="pid", rows_per_unit=3)
    cfg = GroupClipConfig(column="g", size_share=0.2)
    sigma = plan_group_sizes(cfg, acct, person_level=True)
    assert sigma == pytest.approx(acct.sigma_for_share(0.2, person_level=True))
    assert acct.planned_noise(SIZES_LABEL) == pytest.approx(sigma) and acct.planned[-1].noise_multiplier == sigma
    sizes = measure_group_sizes(groups.numpy(), 3, sigma, accountant=acct, noise=_Zero(), units=units.numpy())
    assert sizes.counts.tolist() == [2.0, 1.0, 2.0]  # persons, not rows ([2, 3, 3])
    (m,) = acct.ledger
    assert m.label == SIZES_LABEL and m.noise_multiplier == pytest.approx(sigma)  # as given: no σ/3
    # row level on the same accountant: counts rows and is converted by the bound (σ/3)
    rows = PrivacyAccountant(epsilon=1.0, delta=1e-5, unit="pid", rows_per_unit=3)
    s_rows = plan_group_sizes(cfg, rows)
    assert s_rows == pytest.approx(3 * sigma)
    assert measure_group_sizes(groups.numpy(), 3, s_rows, accountant=rows, noise=_Zero()).counts.tolist() == [2, 3, 3]
    assert rows.ledger[0].noise_multiplier == pytest.approx(sigma)
