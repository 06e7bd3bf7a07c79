"""One DP-SGD training loop for every model dpsyn trains on private rows.

``train_dpsgd`` is the only place where gradients of a loss on private rows
reach model weights. Each step:

1. **sample**: every row joins the batch independently with probability q
   (Poisson sampling, :meth:`~dpsyn.privacy.NoiseSource.poisson_sample` of the
   run's noise source);
2. **clip**: each row's gradient (of its whole loss) is scaled to L2 norm ≤ C,
   and the clipped gradients are summed;
3. **noise**: N(0, σ²C²) from the run's noise source is added to every
   coordinate of the sum, which is then divided by the expected batch size q·n
   (as Opacus' ``DPOptimizer`` does with ``loss_reduction="mean"``);
4. **update** with Adam; the accountant records (σ, q) per step. An empty
   Poisson sample still releases (and applies) the noise alone: the mechanism the
   accountant analyses releases sum + noise at every step, and skipping the update
   would tell that the sample was empty, an event whose probability depends on n.

Clipping, two implementations of the same step:

* **book-keeping** (:mod:`dpsyn.synth.bookkeeping`, Bu et al. 2023), used whenever
  every trainable parameter is the weight or bias of an ``nn.Linear`` fed 2-D
  inputs (dpgen's heads, dpdsyn's task model, the utility and fairness models):
  one forward, one backward to the layer outputs, per-row norms and the clipped
  sum from one matmul per layer, noise and Adam here;
* **Opacus ghost clipping** (``PrivacyEngine``, ``grad_sample_mode="ghost"``,
  its ``add_noise`` replaced by the run's noise source) for any other model:
  :func:`~dpsyn.synth.bookkeeping.bk_layers` and a probe forward pass decide, nothing is guessed.

Both compute the same per-row norms, clip factors min(1, C/(norm + 1e-6)), noise,
scaling and accountant steps (a unit test compares them on one batch).

With ``group_clip`` (DP-SGD-S, :mod:`dpsyn.synth.group_clip`) each row is
clipped at its group's bound C_k, the noise is σ_g · max_k C_k, and per-group
noisy counts move the bounds; the step is still one subsampled Gaussian
mechanism of noise multiplier σ (the one calibrated), recorded as such.

With ``units`` (user-level DP-SGD: McMahan et al. 2018, Charles et al. 2024) the privacy unit is a person with
several rows: each step samples *persons* (Poisson, rate q over the public person count), takes all their rows,
clips each person's summed gradient to C (book-keeping, :meth:`BookKeeping.clipped_sum` with ``units``) and adds
N(0, σ²C²): adding or removing a person moves the clipped sum by at most C, so the step is the subsampled Gaussian
mechanism (σ, q) at the person level, recorded as such (``person_level=True``), with no group-privacy conversion.
With ``units`` and ``group_clip`` together (DP-SGD-S per person) a person's group is the group of their first row
(:func:`~dpsyn.synth.group_clip.person_groups`), each sampled person's summed gradient is clipped to that group's
bound C_{g(p)} ≤ max_k C_k, the noise is DP-SGD-S's σ_g · max_k C_k, and the 2K noisy counts count the sampled
persons (one count each): the same one subsampled Gaussian mechanism of multiplier σ, per person.

With ``ema_decay`` the returned weights are an exponential moving average of
the iterates (De et al. 2022): post-processing of the noisy updates, so it
costs no budget, and it averages out part of the noise of the last steps. The
average is bias-corrected (started at zero and divided by 1 − β^T, as Adam's
moments are): the weights are Σ_t β^(T−t) θ_t / Σ_t β^(T−t) over the T
iterates, with no weight left on the random initialisation. Started at the
initial weights instead, a short run kept β^T of them (74 % after 30 steps at
β = 0.99, a table of 3,000 rows in batches of 1,024 for 10 epochs), and the
task model's labels came out close to its random start (docs/synthesis.md).

σ must have been calibrated on the run's accountant *before* calling this.
"""

from __future__ import annotations

import logging
import types
import warnings
from collections.abc import Callable
from typing import Literal, Protocol

import torch
from torch import nn

from dpsyn.privacy import NoiseSource, PrivacyAccountant
from dpsyn.progress import report
from dpsyn.synth.bookkeeping import BookKeeping, bk_layers
from dpsyn.synth.group_clip import GroupClipper, person_groups, split_noise

logger = logging.getLogger(__name__)

__all__ = ["StepHook", "steps_and_rate", "train_dpsgd"]


class StepHook(Protocol):
    """What a privacy audit plugs into a DP-SGD step (never used by a release)."""

    def extra(self, step: int, shapes: list, *, noise: NoiseSource, sample_rate: float) -> list[torch.Tensor]:
        """Gradients to add to the step's clipped sum, one per parameter (each canary's norm ≤ C)."""

    def observe(self, step: int, noisy_sum: list[torch.Tensor]) -> None:
        """The step's release (clipped sum + noise, before the division by q·n), one tensor per parameter."""


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
    public_rows: int,
    ema_decay: float = 0.0,
    groups: torch.Tensor | None = None,
    group_clip: GroupClipper | None = None,
    clipping: Literal["auto", "bookkeeping", "ghost"] = "auto",
    step_hook: StepHook | None = None,
    units: torch.Tensor | None = None,
) -> nn.Module:
    """Train ``model`` with DP-SGD on the rows of ``data``; returns the trained plain module.

    The sample rate and step count are :func:`steps_and_rate` of ``public_rows``, ``batch_size`` and
    ``epochs``: calibrate ``noise_multiplier`` with the same. ``public_rows`` is a public row count (the run's
    released noisy count), never ``len(data)`` in a release: the sample rate and the number of steps are
    published with the model. Each row still joins each batch with probability q, whatever the count.

    ``loss_fn(model, batch, criterion)`` returns a sum of ``criterion`` outputs
    (``criterion`` is a per-sample cross-entropy), i.e. one loss per row of the
    batch: each row's gradient is clipped. ``ema_decay`` in [0, 1): 0 returns the
    last iterate. ``clipping``: "auto" (book-keeping where the model allows it,
    else Opacus ghost clipping), "bookkeeping" (raise if the model does not allow
    it) or "ghost" (always Opacus). The returned model's ``dp_clipping_`` says which ran.

    ``step_hook`` is for privacy audits only (:mod:`dpsyn.audit.gradient_canaries`): it adds canary gradients to
    each step's clipped sum and observes each step's noisy sum; book-keeping path only.

    ``units``: one person code per row (int64, 0..P−1): per-person clipping (module docstring); ``public_rows``,
    ``batch_size`` and the sample rate then count persons (``public_rows`` is the public person count), and
    σ must have been calibrated with ``person_level=True``. Book-keeping path only. With ``group_clip`` too,
    ``groups`` stays one code per row; each person is clipped and counted in the group of their first row.
    """
    if (groups is None) != (group_clip is None):
        raise ValueError("group-adaptive clipping needs both groups (one code per row) and a GroupClipper")
    if not 0.0 <= ema_decay < 1.0:
        raise ValueError(f"ema_decay must be in [0, 1), got {ema_decay}")
    if clipping not in ("auto", "bookkeeping", "ghost"):
        raise ValueError(f"clipping must be 'auto', 'bookkeeping' or 'ghost', got {clipping!r}")
    n = len(data)
    if public_rows < 1:
        raise ValueError(f"public_rows must be at least 1, got {public_rows}")
    sample_rate, steps = steps_and_rate(public_rows, batch_size=batch_size, epochs=epochs)
    kw = dict(data=data, loss_fn=loss_fn, accountant=accountant, noise=noise, noise_multiplier=noise_multiplier,
              batch_size=batch_size, sample_rate=sample_rate, steps=steps, max_grad_norm=max_grad_norm, lr=lr,
              label=label, ema_decay=ema_decay, groups=groups, group_clip=group_clip, public_rows=public_rows)
    if step_hook is not None and clipping != "bookkeeping":
        raise ValueError("a step hook (privacy audits) needs clipping='bookkeeping'")
    if units is not None:
        if len(units) != n:
            raise ValueError("units needs one person code per row")
        kw["units"] = units
        clipping = "bookkeeping"
    if clipping != "ghost":
        layers, why = bk_layers(model)
        if layers is not None:
            bk = BookKeeping(model, layers)
            try:
                model.train()
                why = bk.probe(loss_fn, data[:2], nn.CrossEntropyLoss(reduction="none")) if n else ""
                if not why:
                    trained = _train_bookkeeping(model, bk, **kw, step_hook=step_hook)
                    trained.dp_clipping_ = "bookkeeping"
                    return trained
            finally:
                bk.remove()
        if clipping == "bookkeeping":
            raise ValueError(f"book-keeping clipping does not apply to this model: {why}"
                             + (" (per-person clipping needs it)" if units is not None else ""))
        logger.info("DP-SGD %s: Opacus ghost clipping (%s)", label, why)
    trained = _train_opacus(model, **kw)
    trained.dp_clipping_ = "ghost"
    return trained


def _expected_batch_size(n: int, sample_rate: float) -> int:
    """Opacus' ``make_private``: ``int(len(dataset) * sample_rate)``, the denominator of the mean gradient
    (``n`` the public row count)."""
    return max(1, int(n * sample_rate))


class _Persons:
    """Rows grouped by person (CSR over dense codes 0..P−1): a step's Poisson sample of persons → their rows, the
    batch's unit codes 0..U−1 and the persons kept (those with rows). With ``groups`` (one code per row, DP-SGD-S)
    also each person's group, that of their first row (``groups_``, :func:`person_groups`), computed once."""

    def __init__(self, units: torch.Tensor, groups: torch.Tensor | None = None):
        codes = units.to(torch.int64)
        self.count = int(codes.max()) + 1 if len(codes) else 0
        self.order = torch.argsort(codes, stable=True)
        sizes = torch.bincount(codes, minlength=self.count)
        self.starts = torch.cumsum(sizes, 0) - sizes
        self.sizes = sizes
        self.groups_ = None if groups is None else torch.from_numpy(person_groups(groups.numpy(), codes.numpy()))

    def rows(self, persons: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        persons = persons[self.sizes[persons] > 0]  # a code without rows is no one (dense codes have none)
        sizes = self.sizes[persons]
        batch_units = torch.repeat_interleave(torch.arange(len(persons)), sizes)
        offsets = torch.arange(int(sizes.sum())) - torch.repeat_interleave(torch.cumsum(sizes, 0) - sizes, sizes)
        return self.order[torch.repeat_interleave(self.starts[persons], sizes) + offsets], batch_units, persons


def _train_bookkeeping(model: nn.Module, bk: BookKeeping, *, data, loss_fn, accountant, noise, noise_multiplier,
                       batch_size, sample_rate, steps, max_grad_norm, lr, label, ema_decay, groups,
                       group_clip, public_rows, step_hook=None, units=None) -> nn.Module:
    """DP-SGD with book-keeping clipping: the step of :func:`_train_opacus`, without Opacus' two backward passes."""
    n = len(data)
    persons = None if units is None else _Persons(units, groups if group_clip is not None else None)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    params = [p for p in model.parameters() if p.requires_grad]
    shapes = [p.shape for p in params]
    denominator = _expected_batch_size(public_rows, sample_rate)
    criterion = nn.CrossEntropyLoss(reduction="none")
    grad_sigma, sigma_b = noise_multiplier, None
    if group_clip is not None:
        grad_sigma, sigma_b = split_noise(noise_multiplier, group_clip.config.count_share)
    ema = [torch.zeros_like(p) for p in params] if ema_decay else None  # bias-corrected at the end
    taken = 0  # steps whose batch was drawn: each is charged, whether or not it crashed later
    model.train()
    try:
        for step in range(steps):
            batch_units = sampled = None
            if persons is None:
                idx = torch.from_numpy(noise.poisson_sample(n, sample_rate))
            else:  # a Poisson sample of persons, with all their rows
                idx, batch_units, sampled = persons.rows(
                    torch.from_numpy(noise.poisson_sample(persons.count, sample_rate)))
            taken += 1
            if group_clip is not None:
                # one group per row, or per sampled person (their first row's): C_{g(p)} clips the person's sum,
                # and the person is one entry of the noisy counts
                batch_groups = groups[idx] if persons is None else persons.groups_[sampled]
                bound, noise_bound = group_clip.row_bounds(batch_groups), group_clip.max_bound()
            else:
                bound = noise_bound = max_grad_norm
            if len(idx):
                clipped, norms = bk.clipped_sum(loss_fn, data[idx], criterion, bound, units=batch_units)
            else:  # an empty Poisson sample: the release is the noise alone, as the accountant assumes
                clipped, norms = {p: torch.zeros_like(p) for p in params}, None
            if step_hook is not None:  # audits only: canary gradients (norm ≤ C each) join the clipped sum
                for p, g in zip(params, step_hook.extra(step, shapes, noise=noise, sample_rate=sample_rate),
                                strict=True):
                    clipped[p].add_(g)
            std = grad_sigma * noise_bound if group_clip is None else group_clip.noise_std(grad_sigma)
            draws = noise.normal_list(shapes, std, dtype=params[0].dtype)
            for p, z in zip(params, draws, strict=True):
                clipped[p].add_(z.to(p.device))  # the step's release: clipped sum + noise
            if step_hook is not None:
                step_hook.observe(step, [clipped[p] for p in params])
            for p in params:
                p.grad = clipped[p].div_(denominator)  # / (q·n), as Opacus' scale_grad
            optimizer.step()
            if group_clip is not None:
                if norms is None:
                    group_clip.skip(sigma_b=sigma_b, noise=noise)
                else:
                    group_clip.update(norms, batch_groups, sigma_b=sigma_b, noise=noise)
            _end_step(ema, params, ema_decay, label, step, steps)
    finally:
        _charge(accountant, label, noise_multiplier, sample_rate, taken, person_level=persons is not None)
    for p in params:
        p.grad = None
    _load_ema(params, ema, ema_decay, steps)
    return model


def _train_opacus(model: nn.Module, *, data, loss_fn, accountant, noise, noise_multiplier, batch_size, sample_rate,
                  steps, max_grad_norm, lr, label, ema_decay, groups, group_clip, public_rows) -> nn.Module:
    """DP-SGD with Opacus' ghost clipping (any model Opacus supports)."""
    from opacus import PrivacyEngine

    n = public_rows
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    # Opacus reads the sample rate (1/len) and expected batch size from this loader (of the public row count);
    # batches are drawn below, from the real rows.
    shape_loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.zeros(n, 1)), batch_size=batch_size)
    assert abs(1.0 / len(shape_loader) - sample_rate) < 1e-12
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Secure RNG turned off")
        # Opacus' own accountant is a throwaway: the loop counts the steps and records them on the run's accountant
        engine = PrivacyEngine(accountant=accountant.name, secure_mode=False)
    own_attributes = {id(m): set(vars(m)) for m in model.modules()}
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
    assert optimizer.expected_batch_size == _expected_batch_size(n, sample_rate)
    _use_noise_source(optimizer, noise)
    if group_clip is not None:
        # the accountant's hook reads optimizer.noise_multiplier (σ); the gradient gets σ_g ≥ σ, the counts σ_b
        optimizer._grad_noise_multiplier = split_noise(noise_multiplier, group_clip.config.count_share)[0]
    params = [p for p in model.parameters() if p.requires_grad]
    ema = [torch.zeros_like(p) for p in params] if ema_decay else None  # bias-corrected at the end
    dp_model.train()
    with warnings.catch_warnings():
        # Opacus' ghost clipping backward on inputs without grad: harmless, once per step
        warnings.filterwarnings("ignore", message="Full backward hook is firing")
        try:
            _steps(dp_model, optimizer, accountant, noise, data, loss_fn, criterion, steps=steps,
                   sample_rate=sample_rate, noise_multiplier=noise_multiplier, label=label, groups=groups,
                   group_clip=group_clip, params=params, ema=ema, ema_decay=ema_decay)
        finally:
            trained = _strip_opacus(dp_model, model, own_attributes)
    _load_ema(params, ema, ema_decay, steps)
    return trained


def _steps(dp_model, optimizer, accountant, noise, data, loss_fn, criterion, *, steps, sample_rate,
           noise_multiplier, label, groups, group_clip, params, ema, ema_decay) -> None:
    n = len(data)
    if group_clip is not None:
        grad_sigma, sigma_b = split_noise(noise_multiplier, group_clip.config.count_share)
    taken = 0
    try:
        for step in range(steps):
            idx = torch.from_numpy(noise.poisson_sample(n, sample_rate))
            taken += 1
            optimizer.zero_grad(set_to_none=True)
            if len(idx) == 0:  # an empty Poisson sample: the release is the noise alone, as the accountant assumes
                if group_clip is not None:
                    optimizer.max_grad_norm = group_clip.max_bound()
                    std = group_clip.noise_std(grad_sigma)
                else:
                    std = noise_multiplier * optimizer.max_grad_norm
                draws = noise.normal_list([p.shape for p in params], std, dtype=params[0].dtype)
                for p, z in zip(params, draws, strict=True):
                    p.grad = z.to(p.device).div_(optimizer.expected_batch_size)
                optimizer.original_optimizer.step()
                if group_clip is not None:
                    group_clip.skip(sigma_b=sigma_b, noise=noise)
            elif group_clip is not None:
                batch_groups = groups[idx]
                dp_model.max_grad_norm = group_clip.row_bounds(batch_groups)  # per-row C_{g(i)}
                optimizer.max_grad_norm = group_clip.max_bound()  # noise scale: σ_g · max_k C_k
                # (plus DP-SGD-S's compensating noise, if any: one Gaussian of the summed variance)
                optimizer._grad_noise_multiplier = group_clip.noise_std(grad_sigma) / optimizer.max_grad_norm
                loss = loss_fn(dp_model, data[idx], criterion)
                loss.backward()
                norms = dp_model.per_sample_gradient_norms
                optimizer.step()
                group_clip.update(norms, batch_groups, sigma_b=sigma_b, noise=noise)
            else:
                loss = loss_fn(dp_model, data[idx], criterion)
                loss.backward()
                optimizer.step()
            _end_step(ema, params, ema_decay, label, step, steps)
    finally:
        _charge(accountant, label, noise_multiplier, sample_rate, taken)


def _charge(accountant: PrivacyAccountant, label: str, noise_multiplier: float, sample_rate: float,
            steps: int, *, person_level: bool = False) -> None:
    """Record the steps the loop took, counted by the loop itself (an Opacus accountant merges consecutive
    identical (σ, q) entries, so its history cannot tell this run's steps from the ledger's last entry)."""
    if steps:
        accountant.record(label, noise_multiplier=noise_multiplier, sample_rate=sample_rate, steps=steps,
                          person_level=person_level)


def _strip_opacus(dp_model: nn.Module, model: nn.Module, own_attributes: dict[int, set[str]]) -> nn.Module:
    """The plain module, without what Opacus attached: hooks, per-row norms (``_norm_sample``), the last batch's
    un-noised clipped gradient sum (``summed_grad``), ``grad_sample`` and any other attribute it added.
    A fitted model must hold nothing but DP weights (it is pickled and logged)."""
    if hasattr(dp_model, "remove_hooks"):
        dp_model.remove_hooks()
    for m in model.modules():
        for key in set(vars(m)) - own_attributes.get(id(m), set()):
            delattr(m, key)
        for hooks in ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks"):
            getattr(m, hooks, {}).clear()
    for p in model.parameters():
        p.grad = None
        for key in list(vars(p)):
            delattr(p, key)
    return model


def _load_ema(params, ema, ema_decay: float, steps: int) -> None:
    """Set the weights to the bias-corrected EMA of the ``steps`` iterates (nothing without an EMA or a step)."""
    if ema is None or steps < 1:
        return
    scale = 1.0 / (1.0 - ema_decay ** steps)
    with torch.no_grad():
        for p, e in zip(params, ema, strict=True):
            p.copy_(e * scale)


def _end_step(ema, params, ema_decay: float, label: str, step: int, steps: int) -> None:
    """After each step: move the EMA of the iterates (if any) and report progress."""
    if ema is not None:
        with torch.no_grad():
            torch._foreach_lerp_(ema, [p.detach() for p in params], 1.0 - ema_decay)
    report(f"{label}: DP-SGD steps", step + 1, steps)


def _use_noise_source(optimizer, noise: NoiseSource) -> None:
    """Make an Opacus DPOptimizer draw its Gaussian noise from ``noise``."""
    from opacus.optimizers.optimizer import _check_processed_flag, _mark_as_processed

    def add_noise(self):
        sigma = getattr(self, "_grad_noise_multiplier", None) or getattr(
            self, "_adjusted_noise_multiplier", self.noise_multiplier)
        std = sigma * self.max_grad_norm
        # one draw for all parameters (secure source); the seeded source draws per parameter, in order, as before
        draws = noise.normal_list([p.summed_grad.shape for p in self.params], std,
                                  dtype=self.params[0].summed_grad.dtype)
        for p, z in zip(self.params, draws, strict=True):
            _check_processed_flag(p.summed_grad)
            p.grad = (p.summed_grad + z.to(p.summed_grad.device)).view_as(p)
            _mark_as_processed(p.summed_grad)

    optimizer.add_noise = types.MethodType(add_noise, optimizer)
