"""``dpgen``: a general DP table generator trained with DP-SGD.

The model factorises the joint distribution of the encoded columns
autoregressively, p(x) = Π_j p(x_j | x_<j), with one small MLP head per
column reading the one-hot codes of the columns before it (a MADE-style
model without weight masks: each head sees only its prefix slice).

Privacy argument (details in docs/privacy.md):

* the only access to private rows is the training loop, which is DP-SGD
  (Abadi et al. 2016) through Opacus: Poisson-subsampled batches at rate q,
  per-sample gradients clipped to L2 norm C, Gaussian noise of std σC added
  to every summed gradient;
* σ is calibrated *before* training so that the run's accountant (which also
  holds every other mechanism of the run, e.g. the validation gate) stays
  within the target ε at δ for T = epochs / q steps;
* encoding bins and domains come from the public schema; sampling is
  post-processing of the DP model and costs nothing.

Batches are drawn here (not by Opacus' data loader) with the run's
:class:`~dpsyn.privacy.NoiseSource`, so both the Poisson sampling and the
noise use the OS CSPRNG in secure mode.
"""

from __future__ import annotations

import logging
import math
import types
import warnings

import numpy as np
import torch
from pydantic import BaseModel, ConfigDict, Field
from torch import nn

from dpsyn.privacy import PrivacyAccountant
from dpsyn.progress import report
from dpsyn.synth.base import Synthesizer

__all__ = ["DPGen", "DPGenConfig"]

logger = logging.getLogger(__name__)


class DPGenConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    epochs: int = Field(default=20, ge=1, le=1000)
    batch_size: int = Field(default=512, ge=8, description="Expected Poisson batch size.")
    hidden: int = Field(default=64, ge=4, le=4096)
    lr: float = Field(default=1e-2, gt=0)
    max_grad_norm: float = Field(default=1.0, gt=0, description="Per-sample L2 clip bound C.")
    threads: int | None = Field(default=None, ge=1, description="torch threads; default: all cores.")


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
        from opacus import PrivacyEngine

        cfg: DPGenConfig = self.config
        if cfg.threads:
            torch.set_num_threads(cfg.threads)
        n = len(codes)
        sizes = self.encoder_.sizes
        steps_per_epoch = max(1, math.ceil(n / cfg.batch_size))
        q = 1.0 / steps_per_epoch  # the sample rate Opacus derives from a loader of this size
        steps = cfg.epochs * steps_per_epoch
        sigma = accountant.calibrate(sample_rate=q, steps=steps, label="dpgen.dpsgd")

        torch.manual_seed(self.noise_.seed())
        model = _ARNet(sizes, cfg.hidden)
        optimizer = torch.optim.Adam(model.parameters(), lr=cfg.lr)
        x_all = torch.from_numpy(codes)
        # Opacus reads sample rate and expected batch size from this loader; batches are drawn below.
        shape_loader = torch.utils.data.DataLoader(
            torch.utils.data.TensorDataset(torch.zeros(n, 1)), batch_size=cfg.batch_size
        )
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Secure RNG turned off")
            engine = PrivacyEngine(accountant=accountant.name, secure_mode=False)
        engine.accountant = accountant.opacus_accountant()
        # Ghost clipping (fast gradient clipping): per-sample gradient norms without
        # materialising per-sample gradients; same clipping and noise as the hooks mode.
        model, optimizer, loss_fn, _ = engine.make_private(
            module=model,
            optimizer=optimizer,
            criterion=nn.CrossEntropyLoss(),
            data_loader=shape_loader,
            noise_multiplier=sigma,
            max_grad_norm=cfg.max_grad_norm,
            poisson_sampling=False,
            grad_sample_mode="ghost",
        )
        noise = self.noise_
        _use_noise_source(optimizer, noise)
        model.train()
        step = 0
        try:
            for epoch in range(cfg.epochs):
                for _ in range(steps_per_epoch):
                    mask = noise.uniform(n) < q  # Poisson sampling from the run's RNG
                    idx = torch.from_numpy(np.flatnonzero(mask))
                    optimizer.zero_grad(set_to_none=True)
                    if len(idx) == 0:
                        # Data-independent event: skip the update but still charge the step.
                        engine.accountant.step(noise_multiplier=sigma, sample_rate=q)
                    else:
                        xb = x_all[idx]
                        logits = model(_one_hot(xb, sizes))
                        # per-sample losses summed over columns, then clipped per sample
                        loss = sum(loss_fn(lg, xb[:, j]) for j, lg in enumerate(logits))
                        loss.backward()
                        optimizer.step()
                    step += 1
                    report("dpgen: DP-SGD steps", step, steps)
                logger.info("dpgen epoch %d/%d done", epoch + 1, cfg.epochs)
        finally:
            accountant.sync_from_opacus("dpgen.dpsgd")
        net = model._module if hasattr(model, "_module") else model
        self.net_ = _ARNet(sizes, cfg.hidden)
        self.net_.load_state_dict(net.state_dict())
        self.net_.eval()
        self.training_ = {
            "noise_multiplier": sigma,
            "sample_rate": q,
            "steps": steps,
            "max_grad_norm": cfg.max_grad_norm,
            "expected_batch_size": cfg.batch_size,
        }

    @torch.no_grad()
    def _sample_codes(self, n: int, *, rng: np.random.Generator) -> np.ndarray:
        sizes = self.encoder_.sizes
        offsets = self.net_.offsets
        out = np.zeros((n, len(sizes)), dtype=np.int64)
        onehot = torch.zeros(n, offsets[-1])
        ones = torch.ones(n, 1)
        for j, head in enumerate(self.net_.heads):
            x = ones if j == 0 else onehot[:, : offsets[j]]
            p = torch.softmax(head(x).double(), dim=1).numpy()
            u = rng.random((n, 1))
            k = (p.cumsum(axis=1) < u).sum(axis=1)
            k = np.minimum(k, sizes[j] - 1)
            out[:, j] = k
            onehot[torch.arange(n), offsets[j] + torch.from_numpy(k)] = 1.0
        return out

    def __getstate__(self):
        state = self.__dict__.copy()
        state.pop("noise_", None)
        return state


def _use_noise_source(optimizer, noise) -> None:
    """Make an Opacus DPOptimizer draw its Gaussian noise from ``noise``."""
    from opacus.optimizers.optimizer import _check_processed_flag, _mark_as_processed

    def add_noise(self):
        std = getattr(self, "_adjusted_noise_multiplier", self.noise_multiplier) * self.max_grad_norm
        for p in self.params:
            _check_processed_flag(p.summed_grad)
            p.grad = (p.summed_grad + noise.normal_like(p.summed_grad, std)).view_as(p)
            _mark_as_processed(p.summed_grad)

    optimizer.add_noise = types.MethodType(add_noise, optimizer)
