"""The shared DP task model (dpsyn.synth.classifier): one DP-SGD run, charged once, and it learns."""

import numpy as np
import pytest

from dpsyn.privacy import NoiseSource, PrivacyAccountant
from dpsyn.synth.classifier import classifier_log_probs, classifier_net, train_classifier
from dpsyn.synth.dpsgd import steps_and_rate

FEATS = [3, 2]


def _codes(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = np.stack([rng.integers(0, s, n) for s in FEATS], axis=1)
    y = (x[:, 0] == 2).astype(np.int64)  # the target is a function of the first feature
    return np.concatenate([x, y[:, None]], axis=1)


@pytest.mark.parametrize("hidden", [0, 8])
def test_task_model_learns_and_is_charged_once(hidden):
    codes = _codes(2000)
    acct = PrivacyAccountant(epsilon=8.0, delta=1e-5)
    q, steps = steps_and_rate(len(codes), batch_size=200, epochs=5)
    sigma = acct.calibrate(sample_rate=q, steps=steps, label="task")
    net = train_classifier(codes, FEATS, 2, hidden=hidden, accountant=acct, noise=NoiseSource(secure=False, seed=0),
                           noise_multiplier=sigma, batch_size=200, epochs=5, max_grad_norm=1.0, lr=0.5, label="task",
                           public_rows=len(codes))
    assert not net.training
    assert acct.history() == [(sigma, q, steps)]
    assert acct.epsilon() <= 8.0 + 1e-9
    lp = classifier_log_probs(net, codes[:, :-1], FEATS)
    assert lp.dtype == np.float64 and lp.shape == (len(codes), 2)
    np.testing.assert_allclose(np.exp(lp).sum(axis=1), 1.0, rtol=1e-9)
    assert (lp.argmax(axis=1) == codes[:, -1]).mean() > 0.95


def test_task_net_shapes():
    assert len(classifier_net(5, 3)) == 1
    assert len(classifier_net(5, 3, hidden=4)) == 3
