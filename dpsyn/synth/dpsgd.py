"""One DP-SGD training loop for every model dpsyn trains on private rows.

``train_dpsgd`` is the only place where gradients of a loss on private rows
reach model weights. Each step:

1. **sample**: every row joins the batch independently with probability q
   (Poisson sampling, drawn from the run's :class:`~dpsyn.privacy.NoiseSource`);
2. **clip**: Opacus ghost clipping bounds each row's gradient (of its whole
   loss) to L2 norm C;
3. **noise**: N(0, σ²C²) from the run's noise source is added to the summed
   gradient (Opacus' ``add_noise`` is replaced by the CSPRNG source);
4. **update** with the wrapped optimizer; the accountant records (σ, q) per step.

σ must have been calibrated on the run's accountant *before* calling this.
"""

from __future__ import annotations

import types
import warnings
from collections.abc import Callable

import numpy as np
import torch
from torch import nn

from dpsyn.privacy import NoiseSource, PrivacyAccountant
from dpsyn.progress import report

__all__ = ["steps_and_rate", "train_dpsgd"]


def steps_and_rate(n_rows: int, *, batch_size: int, epochs: int) -> tuple[float, int]:
    """(sample rate q, total steps T) for ``epochs`` passes at expected batch size ``batch_size``."""
    per_epoch = max(1, -(-n_rows // batch_size))
    return 1.0 / per_epoch, epochs * per_epoch


def train_dpsgd(
    model: nn.Module,
    *,
    data: torch.Tensor,
    loss_fn: Callable[[nn.Module, torch.Tensor, nn.Module], object],
    accountant: PrivacyAccountant,
    noise: NoiseSource,
    noise_multiplier: float,
    batch_size: int,
    epochs: int,
    max_grad_norm: float,
    lr: float,
    label: str,
) -> nn.Module:
    """Train ``model`` with DP-SGD on the rows of ``data``; returns the trained plain module.

    The sample rate and step count are :func:`steps_and_rate` of ``len(data)``,
    ``batch_size`` and ``epochs``: calibrate ``noise_multiplier`` with the same.

    ``loss_fn(model, batch, criterion)`` returns the batch loss built from the
    wrapped ``criterion`` (a per-sample cross-entropy), so ghost clipping sees
    per-sample losses.
    """
    from opacus import PrivacyEngine

    n = len(data)
    sample_rate, steps = steps_and_rate(n, batch_size=batch_size, epochs=epochs)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    # Opacus reads the sample rate (1/len) and expected batch size from this loader; batches are drawn below.
    shape_loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.zeros(n, 1)), batch_size=batch_size)
    assert abs(1.0 / len(shape_loader) - sample_rate) < 1e-12
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Secure RNG turned off")
        engine = PrivacyEngine(accountant=accountant.name, secure_mode=False)
    engine.accountant = accountant.opacus_accountant()
    dp_model, optimizer, criterion, _ = engine.make_private(
        module=model,
        optimizer=optimizer,
        criterion=nn.CrossEntropyLoss(),
        data_loader=shape_loader,
        noise_multiplier=noise_multiplier,
        max_grad_norm=max_grad_norm,
        poisson_sampling=False,
        grad_sample_mode="ghost",
    )
    _use_noise_source(optimizer, noise)
    dp_model.train()
    try:
        for step in range(steps):
            mask = noise.uniform(n) < sample_rate
            idx = torch.from_numpy(np.flatnonzero(mask))
            optimizer.zero_grad(set_to_none=True)
            if len(idx) == 0:
                # A data-independent event: skip the update but still charge the step.
                engine.accountant.step(noise_multiplier=noise_multiplier, sample_rate=sample_rate)
            else:
                loss = loss_fn(dp_model, data[idx], criterion)
                loss.backward()
                optimizer.step()
            report(f"{label}: DP-SGD steps", step + 1, steps)
    finally:
        accountant.sync_from_opacus(label)
    return dp_model._module if hasattr(dp_model, "_module") else dp_model


def _use_noise_source(optimizer, noise: NoiseSource) -> None:
    """Make an Opacus DPOptimizer draw its Gaussian noise from ``noise``."""
    from opacus.optimizers.optimizer import _check_processed_flag, _mark_as_processed

    def add_noise(self):
        std = getattr(self, "_adjusted_noise_multiplier", self.noise_multiplier) * self.max_grad_norm
        for p in self.params:
            _check_processed_flag(p.summed_grad)
            p.grad = (p.summed_grad + noise.normal_like(p.summed_grad, std)).view_as(p)
            _mark_as_processed(p.summed_grad)

    optimizer.add_noise = types.MethodType(add_noise, optimizer)
