"""dpsyn.synth.distributed: DP-SGD over 2 gloo processes records what one process records."""

from __future__ import annotations

import functools
import warnings

import pytest
import torch
from torch import nn

from dpsyn.privacy import NoiseSource, PrivacyAccountant
from dpsyn.synth.distributed import _shard, label_loss, train_dpsgd_distributed
from dpsyn.synth.dpsgd import steps_and_rate, train_dpsgd

pytestmark = [
    pytest.mark.filterwarnings("ignore::dpsyn.errors.InsecureRNGWarning"),
    pytest.mark.filterwarnings("ignore:Optimal order is the largest alpha"),
    pytest.mark.filterwarnings("ignore:divide by zero encountered in log:RuntimeWarning"),
]

N, D, BATCH, EPOCHS = 120, 4, 4, 2  # q = 1/30: a 60-row shard draws nobody in about 13% of steps


def _data() -> torch.Tensor:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(N, D, generator=g)
    y = (x[:, 0] > 0).float()
    return torch.cat([x, y[:, None]], dim=1)


SIGMA = 1.5  # a noise multiplier within the budget below (the accounting, not the calibration, is under test)


def _accountant() -> tuple[PrivacyAccountant, float]:
    return PrivacyAccountant(epsilon=8.0, delta=1e-5, accountant="rdp"), SIGMA


def test_shards_are_disjoint_and_cover_every_row():
    for n, w in ((120, 2), (7, 3), (1, 2)):
        spans = [_shard(n, r, w) for r in range(w)]
        assert spans[0][0] == 0 and spans[-1][1] == n
        assert all(a[1] == b[0] for a, b in zip(spans, spans[1:], strict=False))


@pytest.mark.slow  # a process or a real training: in the full suite, not the fast tier
def test_two_gloo_processes_record_the_same_accounting_as_one():
    data = _data()
    one, sigma = _accountant()
    torch.manual_seed(1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        train_dpsgd(nn.Linear(D, 2), data=data, loss_fn=label_loss, accountant=one,
                    noise=NoiseSource(secure=False, seed=1), noise_multiplier=sigma, batch_size=BATCH, epochs=EPOCHS,
                    max_grad_norm=1.0, lr=0.05, label="dpsgd", public_rows=len(data))
    two, sigma2 = _accountant()
    assert sigma2 == sigma
    model = train_dpsgd_distributed(functools.partial(nn.Linear, D, 2), data=data, loss_fn=label_loss,
                                    accountant=two, noise_multiplier=sigma, batch_size=BATCH, epochs=EPOCHS,
                                    max_grad_norm=1.0, lr=0.05, label="dpsgd", world_size=2, secure_rng=False, seed=1,
                                    public_rows=len(data))
    q, steps = steps_and_rate(N, batch_size=BATCH, epochs=EPOCHS)
    assert one.history() == two.history() == [(sigma, q, steps)]
    assert [(m.label, m.as_tuple()) for m in two.ledger] == [(m.label, m.as_tuple()) for m in one.ledger]
    assert two.epsilon() == one.epsilon() <= 8.0
    assert all(torch.isfinite(p).all() for p in model.parameters())
    assert any(p.abs().sum() > 0 for p in model.parameters())


def test_seeds_are_for_tests_only():
    acct, sigma = _accountant()
    with pytest.raises(ValueError, match="tests only"):
        train_dpsgd_distributed(functools.partial(nn.Linear, D, 2), data=_data(), loss_fn=label_loss, accountant=acct,
                                noise_multiplier=sigma, batch_size=BATCH, epochs=EPOCHS, max_grad_norm=1.0, lr=0.05,
                                label="dpsgd", seed=1, public_rows=N)
