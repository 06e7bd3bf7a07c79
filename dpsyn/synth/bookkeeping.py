"""Book-keeping (BK) per-sample clipping for models whose trainable weights are all ``nn.Linear`` on 2-D inputs.

Bu, Wang, Zha & Karypis (2023), "Differentially private optimization on large
model at small cost" (ICML): for a linear layer z = a Wᵀ + b fed a (B × d_in)
input a, the per-sample gradient of row i's loss L_i is g_i a_iᵀ (weight) and
g_i (bias), with g = ∂(Σ_i L_i)/∂z (row i of g is ∂L_i/∂z_i as long as rows do
not interact). So one backward pass to the layer *outputs* is enough:

* per-sample squared norm: ‖∇L_i‖² = Σ_layers (‖a_i‖² ‖g_i‖² + ‖g_i‖²) (the
  second term for the bias), the same quantity as Opacus' ghost clipping;
* clip factor c_i = min(1, C_i / (‖∇L_i‖ + 1e-6)), Opacus' formula, with C_i the
  bound C or the row's group bound (DP-SGD-S);
* clipped sum: ∇W = (c ⊙ g)ᵀ a and ∇b = Σ_i c_i g_i, one matmul per layer (the
  matmul a non-private backward does anyway), with no second backward pass and
  no per-sample gradient in memory.

:func:`bk_layers` decides whether a model qualifies (structure: every trainable
parameter in an exact ``nn.Linear``, no buffers, no hooks, nothing Opacus'
validator objects to); :class:`BookKeeping` records each layer's input and
output during the forward pass (its forward is ``F.linear`` plus the record,
for the duration of training) and checks every time that each layer ran once on
a 2-D input whose rows are the batch's, raising :class:`Unsupported` otherwise.
``train_dpsgd`` probes one forward pass first and falls back to Opacus' ghost
clipping for any model that does not qualify.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["BookKeeping", "Unsupported", "bk_layers"]

_HOOK_DICTS = ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks")


class Unsupported(RuntimeError):
    """The model (or this forward pass) is outside what book-keeping clipping handles."""


def bk_layers(model: nn.Module) -> tuple[list[nn.Linear] | None, str]:
    """(Linear layers holding trainable weights, "") if every trainable parameter is the weight or
    bias of exactly one ``nn.Linear`` (the exact class), the model has no buffers and Opacus'
    validator finds nothing to fix; else (None, the reason)."""
    trainable = {id(p): name for name, p in model.named_parameters(remove_duplicate=False) if p.requires_grad}
    if not trainable:
        return None, "no trainable parameters"
    if any(True for _ in model.buffers()):
        return None, "the model has buffers (e.g. batch norm statistics)"
    from torch.nn.modules import module as _m

    if any(getattr(_m, h, None) for h in ("_global_forward_hooks", "_global_forward_pre_hooks",
                                           "_global_backward_hooks", "_global_backward_pre_hooks")):
        return None, "global module hooks are installed"
    owners: dict[int, nn.Module] = {}
    layers: list[nn.Linear] = []
    for _, module in model.named_modules(remove_duplicate=False):
        own = [p for p in module.parameters(recurse=False) if p.requires_grad]
        if not own:
            continue
        if type(module) is not nn.Linear:
            return None, f"trainable parameters in a {type(module).__name__}, not an nn.Linear"
        if "forward" in module.__dict__ or any(getattr(module, h, None) for h in _HOOK_DICTS):
            return None, "a Linear layer has hooks or a replaced forward"
        for p in own:
            if id(p) in owners and owners[id(p)] is not module:
                return None, "a parameter is shared between layers"
            owners[id(p)] = module
        if not any(m is module for m in layers):
            layers.append(module)
    if set(owners) != set(trainable):
        return None, "a trainable parameter is not owned by an nn.Linear"
    try:
        from opacus.validators import ModuleValidator

        errors = ModuleValidator.validate(model, strict=False)
    except Exception as exc:  # noqa: BLE001 - a validator failure means "do not guess"
        return None, f"Opacus' validator failed: {exc}"
    if errors:
        return None, f"Opacus' validator: {errors[0]}"
    return layers, ""


def _check_bounds(bound, n: int, what: str) -> None:
    """A tensor of bounds must hold one bound per row (no units) or one per unit (with units): anything else would
    broadcast or fail somewhere less clear, or clip a person at another person's bound."""
    if isinstance(bound, torch.Tensor) and bound.dim() > 0 and bound.shape != (n,):
        raise ValueError(f"clipped_sum needs one bound per {what} ({n}), got a tensor of shape {tuple(bound.shape)}")


class BookKeeping:
    """Records the inputs and outputs of ``layers``; the clipped gradient sum of one batch (module docstring).

    Use as a context manager, or call :meth:`remove`: the layers get their own forward back.
    """

    def __init__(self, model: nn.Module, layers: list[nn.Linear]):
        self.model = model
        self.layers = list(layers)
        self._acts: list[torch.Tensor | None] = [None] * len(self.layers)
        self._outs: list[torch.Tensor | None] = [None] * len(self.layers)
        self._calls = [0] * len(self.layers)
        self._active = False
        self._error: str | None = None
        # each layer's forward is F.linear plus a record of (input, output): cheaper than a forward hook
        for i, layer in enumerate(self.layers):
            layer.forward = self._recording_forward(i, layer)

    def _recording_forward(self, i: int, layer: nn.Linear) -> Callable:
        def forward(*args, **kwargs):
            if kwargs or len(args) != 1:
                self._error = "a Linear layer was not called on one positional input"
                return nn.Linear.forward(layer, *args, **kwargs)
            x = args[0]
            z = F.linear(x, layer.weight, layer.bias)
            if self._active:
                self._calls[i] += 1
                if self._calls[i] > 1:
                    self._error = "a Linear layer ran more than once in one forward pass"
                elif x.dim() != 2:
                    self._error = "a Linear layer got an input that is not 2-D"
                elif not z.requires_grad:
                    self._error = "a Linear layer's output does not require grad"
                else:
                    self._acts[i] = x
                    self._outs[i] = z
            return z

        return forward

    def __enter__(self) -> BookKeeping:
        return self

    def __exit__(self, *exc) -> None:
        self.remove()

    def remove(self) -> None:
        """Give each layer back its class's forward."""
        for layer in self.layers:
            layer.__dict__.pop("forward", None)

    def _forward(self, loss_fn: Callable, batch: torch.Tensor, criterion: nn.Module) -> torch.Tensor:
        self._acts = [None] * len(self.layers)
        self._outs = [None] * len(self.layers)
        self._calls = [0] * len(self.layers)
        self._error = None
        self._active = True
        try:
            loss = loss_fn(self.model, batch, criterion)
        finally:
            self._active = False
        b = len(batch)
        if self._error is not None:
            raise Unsupported(self._error)
        if not isinstance(loss, torch.Tensor) or loss.shape != (b,) or not loss.requires_grad:
            raise Unsupported("loss_fn did not return one loss per row (a length-B vector with grad)")
        if any(a is not None and a.shape[0] != b for a in self._acts):
            raise Unsupported("a Linear layer's input rows are not the batch's rows")
        return loss

    def probe(self, loss_fn: Callable, batch: torch.Tensor, criterion: nn.Module) -> str:
        """"" if a forward pass on ``batch`` suits book-keeping clipping, else the reason (no update made).

        The global torch RNG (dropout) is restored afterwards."""
        try:
            with torch.random.fork_rng(devices=[]):
                self._forward(loss_fn, batch, criterion)
        except Unsupported as exc:
            return str(exc)
        finally:
            self._acts = [None] * len(self.layers)
            self._outs = [None] * len(self.layers)
        return ""

    def clipped_sum(self, loss_fn: Callable, batch: torch.Tensor, criterion: nn.Module,
                    bound: float | torch.Tensor, *, units: torch.Tensor | None = None
                    ) -> tuple[dict[torch.Tensor, torch.Tensor], torch.Tensor]:
        """({trainable parameter: Σ_i c_i ∇L_i}, gradient norms before clipping) for one batch.

        ``bound``: the clip bound C, or one bound per row (float tensor of length B). ``units``: per-unit clipping
        (user-level DP-SGD): one code per row, 0..U−1 with every code present, rows of one unit (a person) adjacent
        or not; each unit's *summed* gradient Σ_{i∈u} ∇L_i is clipped as a whole, to C or, with a tensor ``bound``,
        to its own bound C_u (one bound per unit: length U, e.g. the person's group bound under DP-SGD-S), and the
        norms returned are the U units'. A tensor of any other length raises ValueError.
        """
        loss = self._forward(loss_fn, batch, criterion)
        used = [i for i, z in enumerate(self._outs) if z is not None]
        outs = torch.autograd.grad(loss.sum(), [self._outs[i] for i in used], allow_unused=True)
        with torch.no_grad():
            result, norms = self._clip(outs, used, len(batch), loss.dtype, bound, units)
        self._acts = [None] * len(self.layers)
        self._outs = [None] * len(self.layers)
        return result, norms

    def _unit_sq_norms(self, outs, used, units: torch.Tensor, dtype) -> torch.Tensor:
        """‖Σ_{i∈u} ∇L_i‖² per unit without per-unit gradients: Σ_{i,j∈u} (g_i·g_j)(a_i·a_j + 1[bias]) per layer.
        The diagonal (i = j) is the per-row formula; the pairs i ≠ j of one unit are found once (rows sorted by
        unit, offsets up to the largest unit) and only their rows are gathered."""
        n_units = int(units.max()) + 1 if len(units) else 0
        sq = torch.zeros(n_units, dtype=dtype)
        pieces = [(self.layers[i], self._acts[i], g) for i, g in zip(used, outs, strict=True) if g is not None]
        diag = torch.zeros(len(units), dtype=dtype)
        for layer, a, g in pieces:
            g_norm = torch.linalg.vector_norm(g, dim=1)
            if layer.weight.requires_grad:
                diag.add_((torch.linalg.vector_norm(a, dim=1) * g_norm).square_())
            if layer.bias is not None and layer.bias.requires_grad:
                diag.add_(g_norm.square_())
        sq.index_add_(0, units, diag)
        order = torch.argsort(units, stable=True)
        u = units[order]
        span = int(torch.bincount(units).max()) if len(units) else 0
        left, right = [], []
        for d in range(1, span):  # rows r and r + d of the sorted batch, when they belong to one unit
            r = torch.nonzero(u[d:] == u[:len(u) - d]).flatten()
            left.append(order[r])
            right.append(order[r + d])
        if left:
            i, j = torch.cat(left), torch.cat(right)
            off = torch.zeros(len(i), dtype=dtype)
            for layer, a, g in pieces:
                gg = (g[i] * g[j]).sum(dim=1)
                if layer.weight.requires_grad:
                    off.add_(gg * (a[i].to(g.dtype) * a[j].to(g.dtype)).sum(dim=1))
                if layer.bias is not None and layer.bias.requires_grad:
                    off.add_(gg)
            sq.index_add_(0, units[i], 2 * off)  # (i, j) and (j, i)
        return sq.clamp_(min=0.0)

    def _clip(self, outs, used, b, dtype, bound, units=None):
        """Per-row (or per-unit) norms from (a, g), clip factors, and the clipped sums: one matmul per layer."""
        sq = torch.zeros(b, dtype=dtype)
        grads_out: list[tuple[int, torch.Tensor]] = []
        for i, g in zip(used, outs, strict=True):
            if g is None:
                continue
            layer, a = self.layers[i], self._acts[i]
            if units is None:
                g_norm = torch.linalg.vector_norm(g, dim=1)  # one reduction, no (B × d) temporary
                if layer.weight.requires_grad:
                    sq.add_((torch.linalg.vector_norm(a, dim=1) * g_norm).square_())  # ‖a_i g_iᵀ‖_F = ‖a_i‖ ‖g_i‖
                if layer.bias is not None and layer.bias.requires_grad:
                    sq.add_(g_norm.square_())
            grads_out.append((i, g))
        if units is None:
            norms = sq.sqrt_()
            _check_bounds(bound, len(norms), "row")
            coef = (bound / (norms + 1e-6)).clamp(max=1.0)
        else:  # one factor per unit, applied to each of its rows: Σ_u c_u Σ_{i∈u} ∇L_i
            norms = self._unit_sq_norms([g for _, g in grads_out], [i for i, _ in grads_out], units, dtype).sqrt_()
            _check_bounds(bound, len(norms), "unit")
            coef = (bound / (norms + 1e-6)).clamp(max=1.0)[units]
        result: dict[torch.Tensor, torch.Tensor] = {}
        for i, g in grads_out:
            layer, a = self.layers[i], self._acts[i].to(g.dtype)
            # Σ_i c_i g_i a_iᵀ: scale whichever of g and a is narrower, then one matmul
            if layer.weight.requires_grad:
                if a.shape[1] < g.shape[1]:
                    result[layer.weight] = g.t() @ (a * coef[:, None])
                else:
                    result[layer.weight] = (g * coef[:, None]).t() @ a
            if layer.bias is not None and layer.bias.requires_grad:
                result[layer.bias] = g.t() @ coef
        for layer in self.layers:  # a layer that did not run (or reach the loss) contributes nothing
            for p in (layer.weight, layer.bias):
                if p is not None and p.requires_grad and p not in result:
                    result[p] = torch.zeros_like(p)
        return result, norms
