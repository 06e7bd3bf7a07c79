"""train_dpsgd: book-keeping clipping against per-row autograd and Opacus ghost clipping; fallback; accounting."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from dpsyn.privacy import NoiseSource, PrivacyAccountant
from dpsyn.synth.bookkeeping import BookKeeping, bk_layers
from dpsyn.synth.dpgen import _ARNet, _one_hot
from dpsyn.synth.dpsgd import steps_and_rate, train_dpsgd
from dpsyn.synth.group_clip import GroupClipConfig, GroupClipper

pytestmark = [
    pytest.mark.filterwarnings("ignore::dpsyn.errors.InsecureRNGWarning"),
    pytest.mark.filterwarnings("ignore:Optimal order is the largest alpha"),
    pytest.mark.filterwarnings("ignore:Full backward hook is firing"),
    pytest.mark.filterwarnings("ignore:Secure RNG turned off"),
]

SIZES = [3, 4, 2, 5]
N = 200
C = 2.5  # about half of the rows' gradient norms (2.2 – 2.9 at initialisation) lie above it


def _codes(n: int = N, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.stack([torch.randint(s, (n,), generator=g) for s in SIZES], 1)


def _ar_loss(model, xb, criterion):
    """dpgen's loss: sum over columns of the per-row cross-entropy."""
    return sum(criterion(lg, xb[:, j]) for j, lg in enumerate(model(_one_hot(xb, SIZES))))


def _net(seed: int = 1) -> _ARNet:
    torch.manual_seed(seed)
    return _ARNet(SIZES, 8)


@pytest.fixture
def adam_grads(monkeypatch):
    """The gradients every Adam step receives (after clipping, noise and scaling), in parameter order."""
    seen: list[list[torch.Tensor]] = []
    original = torch.optim.Adam.step

    def step(self, *args, **kwargs):
        seen.append([p.grad.detach().clone() for g in self.param_groups for p in g["params"]])
        return original(self, *args, **kwargs)

    monkeypatch.setattr(torch.optim.Adam, "step", step)
    return seen


def _train(clipping: str, *, sigma: float, group: bool = False, ema: float = 0.0, data=None, model=None,
           loss_fn=_ar_loss, batch: int = 20, epochs: int = 1, accountant: str = "prv"):
    data = _codes() if data is None else data
    acct = PrivacyAccountant(epsilon=4.0, delta=1e-5, accountant=accountant)
    clipper = GroupClipper(3, C, GroupClipConfig(column="c0")) if group else None
    trained = train_dpsgd(
        _net() if model is None else model, data=data, loss_fn=loss_fn, accountant=acct,
        noise=NoiseSource(secure=False, seed=7), noise_multiplier=sigma, batch_size=batch, epochs=epochs,
        max_grad_norm=C, lr=0.01, label="t", public_rows=len(data), ema_decay=ema,
        groups=data[:, 0] if group else None,
        group_clip=clipper, clipping=clipping,
    )
    return trained, acct, clipper


def test_bookkeeping_clipped_sum_equals_per_row_autograd():
    """Independent of Opacus: clip each row's own gradient (one backward per row) and sum."""
    model, xb = _net(), _codes(24, seed=3)
    params = list(model.parameters())
    crit = nn.CrossEntropyLoss(reduction="none")
    bounds = torch.linspace(1.5, 3.5, len(xb))  # per-row bounds: some rows clipped, some not
    ref = [torch.zeros_like(p) for p in params]
    ref_norms = []
    for i in range(len(xb)):
        grads = torch.autograd.grad(_ar_loss(model, xb[i:i + 1], crit).sum(), params)
        norm = torch.sqrt(sum((g * g).sum() for g in grads))
        ref_norms.append(norm)
        c = torch.clamp(bounds[i] / (norm + 1e-6), max=1.0)
        for r, g in zip(ref, grads, strict=True):
            r += c * g
    ref_norms = torch.stack(ref_norms)
    assert 0 < int((ref_norms > bounds).sum()) < len(xb)
    with BookKeeping(model, bk_layers(model)[0]) as bk:
        got, norms = bk.clipped_sum(_ar_loss, xb, crit, bounds)
    torch.testing.assert_close(norms, ref_norms, rtol=1e-5, atol=1e-6)
    for p, r in zip(params, ref, strict=True):
        torch.testing.assert_close(got[p], r, rtol=1e-5, atol=1e-6)
    assert all("forward" not in m.__dict__ for m in model.modules())  # the layers got their forward back


@pytest.mark.parametrize("group", [False, True], ids=["one-bound", "group-bounds"])
@pytest.mark.parametrize("sigma", [1e-4, 1.0], ids=["clip", "clip+noise"])
def test_bookkeeping_step_equals_opacus_ghost_step(adam_grads, group, sigma):
    """Same batches and noise draws (seeded source): the gradient Adam receives is Opacus' at every step."""
    bk, acct_bk, clip_bk = _train("bookkeeping", sigma=sigma, group=group)
    grads_bk = list(adam_grads)
    adam_grads.clear()
    ghost, acct_gh, clip_gh = _train("ghost", sigma=sigma, group=group)
    grads_gh = list(adam_grads)
    assert bk.dp_clipping_ == "bookkeeping" and ghost.dp_clipping_ == "ghost"
    assert len(grads_bk) == len(grads_gh) >= 8
    for step, (a, b) in enumerate(zip(grads_bk, grads_gh, strict=True)):
        for x, y in zip(a, b, strict=True):
            # the first step from the same weights: rounding only; later steps drift by Adam on ~1e-7 differences
            tol = 2e-6 if step == 0 else 1e-4
            torch.testing.assert_close(x, y, rtol=tol, atol=tol * float(y.abs().max()))
    for x, y in zip(bk.parameters(), ghost.parameters(), strict=True):
        torch.testing.assert_close(x, y, rtol=1e-4, atol=1e-5)
    assert acct_bk.history() == acct_gh.history()
    if group:
        np.testing.assert_allclose(clip_bk.bounds, clip_gh.bounds, rtol=1e-5)
        assert len(clip_bk.history) == len(clip_gh.history) == 10


def test_bookkeeping_gradient_is_scaled_by_the_expected_batch_size(adam_grads):
    """A lone row: Adam gets (clipped gradient + noise) / (q·n), not / the realised batch size."""
    data = _codes(40)
    _train("bookkeeping", sigma=1e-6, data=data, batch=20)  # q = 1/2, q·n = 20
    model = _net()
    first = adam_grads[0]
    # rebuild the first batch from the same seeded source and clip it by hand
    idx = torch.from_numpy(NoiseSource(secure=False, seed=7).poisson_sample(40, 0.5))
    with BookKeeping(model, bk_layers(model)[0]) as bk:
        clipped, _ = bk.clipped_sum(_ar_loss, data[idx], nn.CrossEntropyLoss(reduction="none"), C)
    for p, g in zip(model.parameters(), first, strict=True):
        torch.testing.assert_close(g, clipped[p] / 20, rtol=1e-4, atol=1e-5)


def test_ema_is_the_same_on_both_paths():
    a = _train("bookkeeping", sigma=0.5, ema=0.9)[0]
    b = _train("ghost", sigma=0.5, ema=0.9)[0]
    last = _train("bookkeeping", sigma=0.5)[0]
    for x, y in zip(a.parameters(), b.parameters(), strict=True):
        torch.testing.assert_close(x, y, rtol=1e-4, atol=1e-5)
    assert any(not torch.allclose(x, z) for x, z in zip(a.parameters(), last.parameters(), strict=True))


@pytest.mark.parametrize("clipping", ["bookkeeping", "ghost"])
def test_ema_is_bias_corrected_so_no_weight_stays_on_the_initialisation(clipping, monkeypatch):
    """The returned weights are Σ_t β^(T−t) θ_t / Σ_t β^(T−t) over the T iterates θ_1..θ_T: an EMA started at the
    initial weights kept β^T of them (98 % after these two steps at β = 0.99; 74 % after a 30-step task model)."""
    iterates = []
    original = torch.optim.Adam.step

    def step(self, *args, **kwargs):
        out = original(self, *args, **kwargs)
        iterates.append([p.detach().clone() for g in self.param_groups for p in g["params"]])
        return out

    monkeypatch.setattr(torch.optim.Adam, "step", step)
    beta = 0.99
    trained = _train(clipping, sigma=0.5, ema=beta, batch=N // 2)[0]  # two steps
    assert len(iterates) == 2
    w = [beta, 1.0]  # β^(T−t) for t = 1, 2
    for i, p in enumerate(trained.parameters()):
        expected = (w[0] * iterates[0][i] + w[1] * iterates[1][i]) / sum(w)
        torch.testing.assert_close(p.detach(), expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("accountant", ["prv", "rdp"])
def test_accounting_is_identical_on_both_paths_empty_batches_included(adam_grads, accountant):
    n, batch, epochs, sigma = 60, 2, 2, 1.2  # q = 1/30: about 13% of the steps draw nobody
    data = torch.cat([torch.randn(n, 4, generator=torch.Generator().manual_seed(0)),
                      torch.randint(2, (n, 1), generator=torch.Generator().manual_seed(1)).float()], 1)

    def loss(m, xb, crit):
        return crit(m(xb[:, :-1]), xb[:, -1].long())

    q, steps = steps_and_rate(n, batch_size=batch, epochs=epochs)
    runs = {}
    for clipping in ("bookkeeping", "ghost"):
        adam_grads.clear()
        torch.manual_seed(0)
        model, acct, _ = _train(clipping, sigma=sigma, data=data, model=nn.Linear(4, 2), loss_fn=loss, batch=batch,
                                epochs=epochs, accountant=accountant)
        assert model.dp_clipping_ == clipping
        runs[clipping] = (acct.history(), acct.epsilon(), len(adam_grads))
    assert runs["bookkeeping"] == runs["ghost"]
    history, eps, updates = runs["bookkeeping"]
    assert history == [(sigma, q, steps)]
    # some batches were empty: charged, and the noise alone is still released and applied (skipping the update
    # would tell that the sample was empty, an event whose probability depends on the number of rows)
    assert updates == steps
    assert np.isfinite(eps) and eps > 0


class _EmbeddingNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(5, 3)
        self.out = nn.Linear(6, 2)

    def forward(self, x):
        return self.out(self.emb(x).flatten(1))


class _SequenceNet(nn.Module):
    """A Linear on a 3-D input (rows × 2 positions × 3): only the forward pass shows it."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 2)

    def forward(self, x):
        return self.lin(x.reshape(-1, 2, 3)).mean(1)


def _cat_loss(m, xb, crit):
    return crit(m(xb[:, :2].contiguous()), xb[:, 2])  # Opacus' embedding norm sampler needs contiguous ids


def _float_loss(m, xb, crit):
    return crit(m(xb[:, :-1]), xb[:, -1].long())


def _float_data(d: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(0)
    return torch.cat([torch.randn(80, d, generator=g), torch.randint(2, (80, 1), generator=g).float()], 1)


@pytest.mark.parametrize("case", ["embedding", "layernorm", "3-d input"])
def test_models_outside_bookkeeping_fall_back_to_opacus(case):
    if case == "embedding":
        model, data, loss = _EmbeddingNet(), torch.randint(0, 2, (80, 3)), _cat_loss
        data[:, :2] = torch.randint(0, 5, (80, 2))
    elif case == "layernorm":
        model = nn.Sequential(nn.Linear(4, 8), nn.LayerNorm(8), nn.ReLU(), nn.Linear(8, 2))
        data, loss = _float_data(4), _float_loss
    else:
        model, data, loss = _SequenceNet(), _float_data(6), _float_loss
    layers, why = bk_layers(model)
    assert (layers is None) == (case != "3-d input"), why  # the 3-D input passes the structure check
    before = [p.detach().clone() for p in model.parameters()]
    trained, acct, _ = _train("auto", sigma=1.0, data=data, model=model, loss_fn=loss, batch=8)
    assert trained.dp_clipping_ == "ghost"
    assert acct.history()[0][2] == 10
    assert any(not torch.equal(a, b) for a, b in zip(before, trained.parameters(), strict=True))
    assert all("forward" not in m.__dict__ for m in trained.modules())
    with pytest.raises(ValueError, match="book-keeping clipping does not apply"):
        _train("bookkeeping", sigma=1.0, data=data, model=model, loss_fn=loss, batch=8)


def test_a_loss_that_is_not_per_row_is_not_bookkept():
    model = _net()
    with BookKeeping(model, bk_layers(model)[0]) as bk:
        why = bk.probe(lambda m, xb, c: _ar_loss(m, xb, c).mean(), _codes(4), nn.CrossEntropyLoss(reduction="none"))
    assert "one loss per row" in why


def test_dpsyn_models_take_the_bookkeeping_path():
    from dpsyn.synth.classifier import train_classifier
    from dpsyn.synth.dpgen import DPGenConfig, fit_ar_net

    codes = _codes(120).numpy()
    acct = PrivacyAccountant(epsilon=4.0, delta=1e-5)
    net = fit_ar_net(codes, SIZES, DPGenConfig(epochs=1, batch_size=40, hidden=8), sigma=1.0, accountant=acct,
                     noise=NoiseSource(secure=False, seed=0), label="gen", public_rows=len(codes))
    assert net.dp_clipping_ == "bookkeeping"
    for hidden in (0, 8):  # dpdsyn's task model, the utility check's and the fairness audit's
        task = train_classifier(codes, SIZES[:-1], SIZES[-1], hidden=hidden, accountant=acct,
                                noise=NoiseSource(secure=False, seed=0), noise_multiplier=1.0, batch_size=40,
                                epochs=1, max_grad_norm=1.0, lr=0.01, label=f"task{hidden}", public_rows=len(codes))
        assert task.dp_clipping_ == "bookkeeping"


# -- issue 19 findings 3 and 4 ------------------------------------------------------------------------------------
@pytest.mark.parametrize("clipping", ["bookkeeping", "ghost"])
@pytest.mark.parametrize("accountant", ["prv", "rdp"])
def test_steps_are_recorded_when_the_ledger_ends_with_the_same_sigma_and_rate(clipping, accountant):
    """Finding 4: Opacus merges consecutive identical (σ, q) entries, so a DP-SGD run whose (σ, q) equals the last
    ledger entry's was dropped by sync_from_opacus and ε was under-reported. Steps are now counted by the loop."""
    n, batch, epochs, sigma = 40, 20, 1, 1.0
    q, steps = steps_and_rate(n, batch_size=batch, epochs=epochs)
    acct = PrivacyAccountant(epsilon=50.0, delta=1e-5, accountant=accountant)
    acct.record("earlier", noise_multiplier=sigma, sample_rate=q, steps=3)  # same (σ, q) as the run below
    eps_before = acct.epsilon()
    train_dpsgd(_net(), data=_codes(n), loss_fn=_ar_loss, accountant=acct, noise=NoiseSource(secure=False, seed=7),
                noise_multiplier=sigma, batch_size=batch, epochs=epochs, max_grad_norm=C, lr=0.01, label="t",
                public_rows=n, clipping=clipping)
    assert acct.history() == [(sigma, q, 3), (sigma, q, steps)]
    assert acct.epsilon() > eps_before


def test_the_ghost_path_returns_a_module_without_opacus_state():
    """Finding 3: Opacus' ghost path left the last batch's un-noised clipped gradient sum (``summed_grad``) and
    per-row norms (``_norm_sample``) on the parameters, and hooks on the module; all of it pickled into model.pkl."""
    import pickle

    model = nn.Sequential(nn.Linear(4, 8), nn.LayerNorm(8), nn.ReLU(), nn.Linear(8, 2))
    trained, _, _ = _train("ghost", sigma=1.0, data=_float_data(4), model=model, loss_fn=_float_loss, batch=8)
    assert trained.dp_clipping_ == "ghost"
    clean = pickle.loads(pickle.dumps(trained))
    for m in clean.modules():
        assert not m._forward_hooks and not m._backward_hooks and not m._forward_pre_hooks
        assert not getattr(m, "_backward_pre_hooks", {})
        assert not [k for k in vars(m) if "grad_sample" in k or "norm_sample" in k or k.startswith("_opacus")]
    for p in clean.parameters():
        assert p.grad is None
        assert not vars(p), f"parameter carries {sorted(vars(p))}"  # summed_grad, _norm_sample, grad_sample, ...
    # the pickle holds the weights and the module structure only
    blob = pickle.dumps(trained)
    assert b"summed_grad" not in blob and b"_norm_sample" not in blob and b"grad_sample" not in blob
