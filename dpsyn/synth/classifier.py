"""The DP task model: a classifier of the target over the one-hot public encoding of the features.

One definition, trained with DP-SGD (:func:`dpsyn.synth.dpsgd.train_dpsgd`), for every place that needs a
DP estimate of p(y | x): dpdsyn's labels, the validation gate's DP reference model, the group privacy
fairness audit and the utility benchmark's DP-SGD-on-real rows. They train the same model the same way,
so their numbers compare.

Codes follow :class:`dpsyn.encoding.DiscreteEncoder` with the target's code in the last column.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from dpsyn.synth.dpgen import _one_hot
from dpsyn.synth.dpsgd import train_dpsgd

__all__ = ["classifier_log_probs", "classifier_net", "train_classifier"]


def classifier_net(d_in: int, k: int, hidden: int = 0) -> nn.Module:
    """Logistic regression (``hidden`` 0) or a one-hidden-layer MLP from ``d_in`` one-hot inputs to ``k`` logits."""
    if hidden <= 0:
        return nn.Sequential(nn.Linear(d_in, k))
    return nn.Sequential(nn.Linear(d_in, hidden), nn.ReLU(), nn.Linear(hidden, k))


def train_classifier(codes, feat_sizes: list[int], k: int, *, hidden: int = 0, accountant, noise,
                     noise_multiplier: float, batch_size: int, epochs: int, max_grad_norm: float, lr: float,
                     label: str, public_rows: int, ema_decay: float = 0.0, groups=None,
                     group_clip=None, units=None) -> nn.Module:
    """Train the task model with DP-SGD on ``codes`` (rows of feature codes, target last); returns it in eval mode.

    Every argument after ``k`` goes to :func:`~dpsyn.synth.dpsgd.train_dpsgd` (σ calibrated by the caller
    for ``steps_and_rate(public_rows, batch_size, epochs)``, ``public_rows`` a public row count); ``groups`` (one code per row) with
    ``group_clip`` selects DP-SGD-S; ``units`` (a person code per row) per-person clipping, ``public_rows`` and
    ``batch_size`` then counting persons. Seed torch before calling for a reproducible initialisation.
    """
    data = torch.as_tensor(np.asarray(codes, dtype=np.int64))

    def loss(model, xb, criterion):
        return criterion(model(_one_hot(xb[:, :-1], feat_sizes)), xb[:, -1])

    net = train_dpsgd(
        classifier_net(sum(feat_sizes), k, hidden), data=data, loss_fn=loss, accountant=accountant, noise=noise,
        noise_multiplier=noise_multiplier, batch_size=batch_size, epochs=epochs, max_grad_norm=max_grad_norm,
        lr=lr, label=label, public_rows=public_rows, ema_decay=ema_decay,
        groups=None if groups is None else torch.as_tensor(np.asarray(groups, dtype=np.int64)),
        group_clip=group_clip, units=None if units is None else torch.as_tensor(np.asarray(units, dtype=np.int64)),
    )
    net.eval()
    return net


@torch.no_grad()
def classifier_log_probs(net: nn.Module, feats: np.ndarray, feat_sizes: list[int]) -> np.ndarray:
    """log p(y | x) (float64, one row per row of feature codes ``feats``) under a task model."""
    x = _one_hot(torch.as_tensor(np.asarray(feats, dtype=np.int64)), feat_sizes)
    return torch.log_softmax(net(x).double(), dim=1).numpy()
