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

With ``group_clip`` (DP-SGD-S, :mod:`dpsyn.privacy.group_clip`) each row is
clipped at its group's bound C_k, the noise is σ_g · max_k C_k, and per-group
noisy counts move the bounds; the step is still one subsampled Gaussian
mechanism of noise multiplier σ (the one calibrated), recorded as such.

With ``ema_decay`` the returned weights are an exponential moving average of
the iterates (De et al. 2022): post-processing of the noisy updates, so it
costs no budget, and it averages out part of the noise of the last steps.

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
from dpsyn.privacy.group_clip import GroupClipper, split_noise
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
    ema_decay: float = 0.0,
    groups: torch.Tensor | None = None,
    group_clip: GroupClipper | None = None,
) -> nn.Module:
    """Train ``model`` with DP-SGD on the rows of ``data``; returns the trained plain module.

    The sample rate and step count are :func:`steps_and_rate` of ``len(data)``,
    ``batch_size`` and ``epochs``: calibrate ``noise_multiplier`` with the same.

    ``loss_fn(model, batch, criterion)`` returns the batch loss built from the
    wrapped ``criterion`` (a per-sample cross-entropy), so ghost clipping sees
    per-sample losses. ``ema_decay`` in [0, 1): 0 returns the last iterate.
    """
    if (groups is None) != (group_clip is None):
        raise ValueError("group-adaptive clipping needs both groups (one code per row) and a GroupClipper")
    if not 0.0 <= ema_decay < 1.0:
        raise ValueError(f"ema_decay must be in [0, 1), got {ema_decay}")
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
    if group_clip is not None:
        # the accountant's hook reads optimizer.noise_multiplier (σ); the gradient gets σ_g ≥ σ, the counts σ_b
        optimizer._grad_noise_multiplier = split_noise(noise_multiplier, group_clip.config.count_share)[0]
    params = [p for p in model.parameters() if p.requires_grad]
    ema = [p.detach().clone() for p in params] if ema_decay else None
    dp_model.train()
    with warnings.catch_warnings():
        # Opacus' ghost clipping backward on inputs without grad: harmless, once per step
        warnings.filterwarnings("ignore", message="Full backward hook is firing")
        _steps(dp_model, optimizer, engine, accountant, noise, data, loss_fn, criterion, steps=steps,
               sample_rate=sample_rate, noise_multiplier=noise_multiplier, label=label, groups=groups,
               group_clip=group_clip, params=params, ema=ema, ema_decay=ema_decay)
    trained = dp_model._module if hasattr(dp_model, "_module") else dp_model
    if ema is not None:
        with torch.no_grad():
            for p, e in zip(params, ema, strict=True):
                p.copy_(e)
    return trained


def _steps(dp_model, optimizer, engine, accountant, noise, data, loss_fn, criterion, *, steps, sample_rate,
           noise_multiplier, label, groups, group_clip, params, ema, ema_decay) -> None:
    n = len(data)
    if group_clip is not None:
        sigma_b = split_noise(noise_multiplier, group_clip.config.count_share)[1]
    try:
        for step in range(steps):
            mask = noise.uniform(n) < sample_rate
            idx = torch.from_numpy(np.flatnonzero(mask))
            optimizer.zero_grad(set_to_none=True)
            if len(idx) == 0:
                # A data-independent event: skip the update but still charge the step.
                engine.accountant.step(noise_multiplier=noise_multiplier, sample_rate=sample_rate)
                if group_clip is not None:
                    group_clip.skip(sigma_b=sigma_b, noise=noise)
            elif group_clip is not None:
                batch_groups = groups[idx]
                dp_model.max_grad_norm = group_clip.row_bounds(batch_groups)  # per-row C_{g(i)}
                optimizer.max_grad_norm = group_clip.max_bound()  # noise scale: σ_g · max_k C_k
                loss = loss_fn(dp_model, data[idx], criterion)
                loss.backward()
                norms = dp_model.per_sample_gradient_norms
                optimizer.step()
                group_clip.update(norms, batch_groups, sigma_b=sigma_b, noise=noise)
            else:
                loss = loss_fn(dp_model, data[idx], criterion)
                loss.backward()
                optimizer.step()
            if ema is not None:
                with torch.no_grad():
                    torch._foreach_lerp_(ema, [p.detach() for p in params], 1.0 - ema_decay)
            report(f"{label}: DP-SGD steps", step + 1, steps)
    finally:
        accountant.sync_from_opacus(label)


def _use_noise_source(optimizer, noise: NoiseSource) -> None:
    """Make an Opacus DPOptimizer draw its Gaussian noise from ``noise``."""
    from opacus.optimizers.optimizer import _check_processed_flag, _mark_as_processed

    def add_noise(self):
        sigma = getattr(self, "_grad_noise_multiplier", None) or getattr(
            self, "_adjusted_noise_multiplier", self.noise_multiplier)
        std = sigma * self.max_grad_norm
        for p in self.params:
            _check_processed_flag(p.summed_grad)
            p.grad = (p.summed_grad + noise.normal_like(p.summed_grad, std)).view_as(p)
            _mark_as_processed(p.summed_grad)

    optimizer.add_noise = types.MethodType(add_noise, optimizer)
