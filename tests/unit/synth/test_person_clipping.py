"""Per-person clipping (user-level DP-SGD): each person's summed gradient is clipped as a whole, persons are
Poisson-sampled with all their rows, and the steps are recorded at the person level."""

from __future__ import annotations

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


def test_per_person_clipping_refuses_group_clipping_and_row_count_mismatch():
    from dpsyn.synth.group_clip import GroupClipConfig, GroupClipper

    data = _codes(50)
    acct = PrivacyAccountant(epsilon=4.0, delta=1e-5)
    kw = dict(data=data, loss_fn=_loss, accountant=acct, noise=NoiseSource(secure=False, seed=7),
              noise_multiplier=1.0, batch_size=10, epochs=1, max_grad_norm=C, lr=0.01, label="t", public_rows=50)
    with pytest.raises(ValueError, match="one person code per row"):
        train_dpsgd(_net(), units=torch.zeros(10, dtype=torch.int64), **kw)
    with pytest.raises(ValueError, match="group-adaptive"):
        train_dpsgd(_net(), units=_units(50), groups=data[:, 0], group_clip=GroupClipper(3, C, GroupClipConfig(
            column="c0")), **kw)
