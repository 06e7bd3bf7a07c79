"""``dpgen``: a general DP table generator trained with DP-SGD.

The model factorises the joint distribution of the encoded columns
autoregressively, p(x) = Π_j p(x_j | x_<j), with one small MLP head per
column reading the one-hot codes of the columns before it (a MADE-style
model without weight masks: each head sees only its prefix slice).

Privacy argument (details in docs/privacy.md):

* the only access to private rows is the training loop, which is DP-SGD
  (Abadi et al. 2016; :func:`~dpsyn.synth.dpsgd.train_dpsgd`: book-keeping
  clipping for this all-Linear net, Opacus otherwise): Poisson-subsampled batches at rate q,
  per-sample gradients clipped to L2 norm C, Gaussian noise of std σC added
  to every summed gradient;
* σ is calibrated *before* training so that the run's accountant (which also
  holds every other mechanism of the run, e.g. the validation gate) stays
  within the target ε at δ for T = epochs / q steps;
* encoding bins and domains come from the public schema; sampling is
  post-processing of the DP model and costs nothing.

Batches are drawn by ``train_dpsgd`` (not by Opacus' data loader) with the run's
:class:`~dpsyn.privacy.NoiseSource`, so both the Poisson sampling and the
noise come from its CSPRNG (AES-256-CTR keyed from the OS) in secure mode.
"""

from __future__ import annotations

import logging
from typing import Literal

import numpy as np
import pandas as pd
import torch
from pydantic import BaseModel, ConfigDict, Field
from torch import nn

from dpsyn.errors import ConfigError
from dpsyn.privacy import PrivacyAccountant
from dpsyn.synth.base import Synthesizer
from dpsyn.synth.dpsgd import steps_and_rate, train_dpsgd
from dpsyn.synth.group_clip import (
    GroupClipConfig,
    GroupClipper,
    GroupSizes,
    measure_group_sizes,
    plan_group_sizes,
)
from dpsyn.synth.marginals import calibrated_sample, measure_marginals, plan_marginals

__all__ = ["DPGen", "DPGenConfig"]

logger = logging.getLogger(__name__)

MARGINALS_LABEL = "dpgen.marginals"


class DPGenConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    epochs: int = Field(default=20, ge=1, le=1000)
    batch_size: int = Field(default=512, ge=8, description="Expected Poisson batch size.")
    hidden: int = Field(default=64, ge=4, le=4096)
    lr: float = Field(default=1e-2, gt=0)
    max_grad_norm: float = Field(default=1.0, gt=0, description="Per-sample L2 clip bound C.")
    threads: int | None = Field(default=None, ge=1, description="torch threads; default: all cores.")
    marginal_share: float = Field(
        default=0.2, ge=0, lt=1,
        description="ε share (alone) of one Gaussian release of all one-way marginals, used to rake the sample "
        "(dpsyn/synth/marginals.py); 0: off.",
    )
    marginal_trust: float = Field(default=3.0, gt=0, description="Trust a noisy count above this many noise stds.")
    candidate_factor: int = Field(default=4, ge=1, le=64, description="Candidates drawn per output row for raking.")
    field_weights: Literal["none", "tier"] = Field(
        default="none",
        description="'tier': weight each column's loss by its tier's clip weight (L2 0.5, L3 0.75, L4 1), so "
        "sensitive fields take a smaller share of each row's clipped gradient; C and σ are unchanged.",
    )
    group_clip: GroupClipConfig | None = Field(
        default=None,
        description="DP-SGD-S: clip each row at its group's privately tracked bound (docs/privacy.md); "
        "None: one bound C for every row.",
    )
    person_clipping: bool = Field(
        default=True,
        description="With a declared privacy unit: sample persons and clip each person's summed gradient "
        "(user-level DP-SGD, accounted per person as is; with group_clip at the bound of the group of the person's "
        "first row, the noisy group counts and group-size histogram counting persons); false: clip rows and convert "
        "the steps to the person level by group privacy (σ/k, 1 − (1 − q)^k).",
    )


class _ARNet(nn.Module):
    """One head per column: logits of column j from the one-hot codes of columns < j."""

    def __init__(self, sizes: list[int], hidden: int):
        super().__init__()
        self.sizes = list(sizes)
        self.offsets = [0]
        for s in sizes:
            self.offsets.append(self.offsets[-1] + s)
        heads = []
        for j, k in enumerate(sizes):
            d_in = max(self.offsets[j], 1)  # the first head reads a constant 1
            heads.append(nn.Sequential(nn.Linear(d_in, hidden), nn.ReLU(), nn.Linear(hidden, k)))
        self.heads = nn.ModuleList(heads)

    def forward(self, onehot: torch.Tensor) -> list[torch.Tensor]:
        out = []
        ones = torch.ones(onehot.shape[0], 1, dtype=onehot.dtype)
        for j, head in enumerate(self.heads):
            x = ones if j == 0 else onehot[:, : self.offsets[j]]
            out.append(head(x))
        return out


def _one_hot(codes: torch.Tensor, sizes: list[int]) -> torch.Tensor:
    return torch.cat([nn.functional.one_hot(codes[:, j], s) for j, s in enumerate(sizes)], dim=1).float()


def fit_ar_net(codes: np.ndarray, sizes: list[int], cfg: DPGenConfig, *, sigma: float,
               accountant: PrivacyAccountant, noise, label: str, public_rows: int,
               weights: list[float] | None = None, groups: np.ndarray | None = None, n_groups: int = 0,
               group_sizes: GroupSizes | None = None, units: np.ndarray | None = None,
               batch_size: int | None = None) -> _ARNet:
    """Train an autoregressive net on ``codes`` with DP-SGD (σ already calibrated for ``public_rows``).

    ``weights`` scale each column's loss (public, from the schema's tiers); the
    whole per-row gradient is still clipped to C, so the guarantee is unchanged.
    With ``cfg.group_clip``, ``groups`` (one code per row, < ``n_groups``) selects each row's bound;
    ``group_sizes`` is the released group-size histogram, if ``cfg.group_clip.size_share`` asked for one.
    ``units`` (a person code per row): per-person clipping, ``public_rows`` and ``batch_size`` counting persons;
    with ``group_clip`` too, each person is clipped at the bound of their first row's group.
    """
    w = weights or [1.0] * len(sizes)
    clipper = group_clipper(cfg.group_clip, n_groups, cfg.max_grad_norm, sizes=group_sizes)

    def loss_fn(model, xb, criterion):
        logits = model(_one_hot(xb, sizes))
        # per-sample losses summed over columns, then clipped per sample
        return sum(w[j] * criterion(lg, xb[:, j]) for j, lg in enumerate(logits))

    net = train_dpsgd(
        _ARNet(sizes, cfg.hidden), data=torch.from_numpy(codes), loss_fn=loss_fn, accountant=accountant,
        noise=noise, noise_multiplier=sigma, batch_size=batch_size or cfg.batch_size, epochs=cfg.epochs,
        max_grad_norm=cfg.max_grad_norm, lr=cfg.lr, label=label, public_rows=public_rows,
        groups=None if clipper is None else torch.from_numpy(groups), group_clip=clipper,
        units=None if units is None else torch.from_numpy(np.asarray(units, dtype=np.int64)),
    )
    net.eval()
    net.group_clip_ = None if clipper is None else clipper.summary()
    return net


def group_clipper(config: GroupClipConfig | None, n_groups: int, initial_bound: float,
                  sizes: GroupSizes | None = None) -> GroupClipper | None:
    return None if config is None else GroupClipper(n_groups, initial_bound, config, sizes=sizes)


def group_codes(encoder, config: GroupClipConfig | None) -> tuple[np.ndarray | None, int]:
    """(group index of the encoded column named by ``config``, its number of codes); (None, 0) without it."""
    if config is None:
        return None, 0
    names = [c.name for c in encoder.columns]
    if config.column not in names:
        raise ConfigError(f"group_clip.column '{config.column}' is not a column of the schema; "
                          f"choose one of: {', '.join(names)}")
    j = names.index(config.column)
    return j, encoder.sizes[j]


def field_weights(schema, cfg: DPGenConfig, columns: list[str]) -> list[float] | None:
    """Per-column loss weights from the schema's tiers (public), or None."""
    if cfg.field_weights == "none":
        return None
    from dpsyn.masking import tier_clip_weights

    tw = tier_clip_weights(schema)
    return [tw[c] for c in columns]


@torch.no_grad()
def sample_ar_codes(net: _ARNet, n: int, *, rng: np.random.Generator) -> np.ndarray:
    """Draw ``n`` rows of codes from an autoregressive net, column by column."""
    sizes, offsets = net.sizes, net.offsets
    out = np.zeros((n, len(sizes)), dtype=np.int64)
    onehot = torch.zeros(n, offsets[-1])
    ones = torch.ones(n, 1)
    for j, head in enumerate(net.heads):
        x = ones if j == 0 else onehot[:, : offsets[j]]
        out[:, j] = _draw(torch.softmax(head(x).double(), dim=1).numpy(), rng)
        onehot[torch.arange(n), offsets[j] + torch.from_numpy(out[:, j])] = 1.0
    return out


@torch.no_grad()
def ar_log_likelihood(net: _ARNet, codes: np.ndarray) -> np.ndarray:
    """log p(x) of each row of ``codes`` under an autoregressive net (post-processing of the DP model)."""
    x = torch.from_numpy(np.asarray(codes, dtype=np.int64))
    logits = net(_one_hot(x, net.sizes))
    ll = torch.zeros(len(x), dtype=torch.float64)
    for j, lg in enumerate(logits):
        ll += torch.log_softmax(lg.double(), dim=1)[torch.arange(len(x)), x[:, j]]
    return ll.numpy()


def _draw(p: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One category per row from row-wise probabilities (inverse CDF)."""
    k = (p.cumsum(axis=1) < rng.random((len(p), 1))).sum(axis=1)
    return np.minimum(k, p.shape[1] - 1)


class DPGen(Synthesizer):
    """DP-SGD autoregressive generator over the schema's public encoding.

    Parameters
    ----------
    config : DPGenConfig or dict
        Training settings (epochs, expected batch size, clip bound, ...).
    privacy : PrivacyConfig or dict
        Target ε/δ and accountant when ``fit`` is not given a run accountant.
    """

    name = "dpgen"
    config_class = DPGenConfig

    def _fit(self, codes: np.ndarray, *, accountant: PrivacyAccountant) -> None:
        cfg: DPGenConfig = self.config
        if cfg.threads:
            torch.set_num_threads(cfg.threads)
        sizes = self.encoder_.sizes
        units, public, batch = self.dpsgd_units(cfg.batch_size, enabled=cfg.person_clipping)
        q, steps = steps_and_rate(public, batch_size=batch, epochs=cfg.epochs)
        gj, n_groups = group_codes(self.encoder_, cfg.group_clip)
        # with per-person clipping the group-size histogram counts persons (each in their first row's group)
        sigma_h = plan_group_sizes(cfg.group_clip, accountant, person_level=units is not None)
        z = plan_marginals(accountant, cfg.marginal_share, label=MARGINALS_LABEL) if cfg.marginal_share else None
        sigma = accountant.calibrate(sample_rate=q, steps=steps, label="dpgen.dpsgd", person_level=units is not None)
        self.marginals_ = None if z is None else measure_marginals(
            codes, sizes, z=z, noise=self.noise_, accountant=accountant, label=MARGINALS_LABEL,
            trust=cfg.marginal_trust)
        group_sizes = measure_group_sizes(None if gj is None else codes[:, gj], n_groups, sigma_h,
                                          accountant=accountant, noise=self.noise_, units=units)
        torch.manual_seed(self.noise_.seed())
        self.net_ = fit_ar_net(
            codes, sizes, cfg, sigma=sigma, accountant=accountant, noise=self.noise_, label="dpgen.dpsgd",
            public_rows=public, units=units, batch_size=batch,
            weights=field_weights(self.schema_, cfg, [c.name for c in self.encoder_.columns]),
            groups=None if gj is None else codes[:, gj], n_groups=n_groups, group_sizes=group_sizes,
        )
        self.training_ = {
            "noise_multiplier": sigma,
            "sample_rate": q,
            "steps": steps,
            "max_grad_norm": cfg.max_grad_norm,
            "expected_batch_size": batch,
            "clipping_unit": "person" if units is not None else "row",
            "marginals_noise_multiplier": z,
            "group_clip": self.net_.group_clip_,
        }

    def _sample_codes(self, n: int, *, rng: np.random.Generator) -> np.ndarray:
        return calibrated_sample(lambda m: sample_ar_codes(self.net_, m, rng=rng), n, self.encoder_.sizes,
                                 getattr(self, "marginals_", None), factor=self.config.candidate_factor, rng=rng)

    def log_likelihood(self, df: pd.DataFrame) -> np.ndarray:
        """log p(row) under the fitted generator (white-box score for privacy audits)."""
        return ar_log_likelihood(self.net_, self.encoder_.encode(df))

    def __getstate__(self):
        state = self.__dict__.copy()
        state.pop("noise_", None)
        return state
