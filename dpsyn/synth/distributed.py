"""DP-SGD over several processes (Opacus distributed DP, ``torch.distributed`` with the gloo backend, CPU).

:func:`train_dpsgd_distributed` is :func:`dpsyn.synth.dpsgd.train_dpsgd` split
over ``world_size`` processes. The mechanism is the same, so is its accounting:

1. **sampling**: the rows are cut into ``world_size`` disjoint shards; each
   process draws a Poisson sample of its shard with the same rate q (from its
   own noise source: OS CSPRNG in secure mode). Every row joins the global batch
   independently with probability q, exactly as in one process.
2. **clipping**: Opacus ghost clipping bounds each row's gradient to L2 norm C in
   the process that holds the row.
3. **noise**: only rank 0 adds N(0, σ²C²) (from its noise source); the clipped
   sums and rank 0's noise are summed over the processes by all-reduce
   (Opacus' ``DistributedDPOptimizerFastGradientClipping``), so the global noisy
   sum is the one-process release; scaling by the expected batch size matches.
4. **update**: every process applies the same averaged update (the model is
   broadcast from rank 0 first: ``DPDDP``), so the replicas stay equal.

Each process keeps an Opacus accountant; a step is (σ, q) in all of them. The
processes' histories are returned to the caller, checked to be equal, and rank
0's is recorded on the run's :class:`~dpsyn.privacy.PrivacyAccountant` under
``label``: one ``(σ, q, T)`` entry, as :func:`train_dpsgd` records.

The processes are started with ``torch.multiprocessing`` (spawn) and meet
through a rendezvous file in a private temporary folder; the data tensor is
shared through shared memory, never written to disk. ``model_factory`` and
``loss_fn`` must be picklable (module-level functions, classes or partials).
On a 2-core CPU the two processes each run one thread.
"""

from __future__ import annotations

import os
import tempfile
import types
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from torch import nn

from dpsyn.privacy import NoiseSource, PrivacyAccountant
from dpsyn.synth.dpsgd import steps_and_rate

__all__ = ["label_loss", "train_dpsgd_distributed"]


def label_loss(model: nn.Module, batch: torch.Tensor, criterion: nn.Module):
    """Cross-entropy of ``model(features)`` against the label in the batch's last column (a picklable loss)."""
    return criterion(model(batch[:, :-1]), batch[:, -1].long())


def train_dpsgd_distributed(
    model_factory: Callable[[], nn.Module],
    *,
    data: torch.Tensor,
    loss_fn: Callable[[nn.Module, torch.Tensor, nn.Module], object],
    accountant: PrivacyAccountant,
    noise_multiplier: float,
    batch_size: int,
    epochs: int,
    max_grad_norm: float,
    lr: float,
    label: str,
    public_rows: int,
    world_size: int = 2,
    secure_rng: bool = True,
    seed: int | None = None,
    threads_per_process: int = 1,
) -> nn.Module:
    """Train ``model_factory()`` with DP-SGD on the rows of ``data`` in ``world_size`` processes.

    Same contract as :func:`~dpsyn.synth.dpsgd.train_dpsgd` (σ calibrated on ``accountant`` beforehand with
    :func:`~dpsyn.synth.dpsgd.steps_and_rate` of ``public_rows``, ``batch_size`` and ``epochs``); returns the
    trained module. ``seed`` (tests only, with ``secure_rng=False``) seeds the model and the processes' coins.
    Raises :class:`RuntimeError` if a process fails (its error type only) or the processes disagree.
    """
    if world_size < 1:
        raise ValueError(f"world_size must be at least 1, got {world_size}")
    if secure_rng and seed is not None:
        raise ValueError("a seed is for tests only: pass secure_rng=False with it")
    import torch.multiprocessing as mp

    n = len(data)
    q, steps = steps_and_rate(public_rows, batch_size=batch_size, epochs=epochs)
    init_seed = seed if seed is not None else int.from_bytes(os.urandom(4), "little") >> 1
    with tempfile.TemporaryDirectory(prefix="dpsyn-ddp-") as tmp:
        os.chmod(tmp, 0o700)
        settings = dict(n=n, public_rows=public_rows, q=q, steps=steps, noise_multiplier=noise_multiplier, batch_size=batch_size,
                        max_grad_norm=max_grad_norm, lr=lr, accountant=accountant.name, secure_rng=secure_rng,
                        seed=seed, init_seed=init_seed, threads=threads_per_process, folder=tmp)
        ctx = mp.spawn(_worker, args=(world_size, model_factory, loss_fn, data.share_memory_(), settings),
                       nprocs=world_size, join=False)
        try:
            while not ctx.join():
                pass
        except Exception as e:  # a worker's traceback may quote tensors: report the kind only
            raise RuntimeError(f"a DP-SGD worker process failed ({type(e).__name__}); nothing was trained") from None
        results = [torch.load(Path(tmp) / f"rank{r}.pt", weights_only=True) for r in range(world_size)]
    histories = [[tuple(h) for h in r["history"]] for r in results]
    if any(h != histories[0] for h in histories[1:]):
        raise RuntimeError("the DP-SGD processes recorded different privacy histories")
    if any(not torch.equal(results[0]["checksum"], r["checksum"]) for r in results[1:]):
        raise RuntimeError("the DP-SGD processes ended with different weights")
    counts: dict[tuple[float, float], int] = {}
    for s, rate, t in histories[0]:
        counts[(s, rate)] = counts.get((s, rate), 0) + int(t)
    for (s, rate), t in counts.items():
        accountant.record(label, noise_multiplier=s, sample_rate=rate, steps=t)
    model = model_factory()
    model.load_state_dict(results[0]["state"])
    return model


def _shard(n: int, rank: int, world_size: int) -> tuple[int, int]:
    """Rows [lo, hi) of this process: contiguous, disjoint, covering all rows."""
    return n * rank // world_size, n * (rank + 1) // world_size


def _worker(rank: int, world_size: int, model_factory, loss_fn, data: torch.Tensor, s: dict) -> None:
    import torch.distributed as dist
    from opacus import PrivacyEngine
    from opacus.distributed import DifferentiallyPrivateDistributedDataParallel as DPDDP

    from dpsyn.privacy.accountant import _make

    torch.set_num_threads(s["threads"])
    dist.init_process_group("gloo", init_method=f"file://{s['folder']}/rendezvous", rank=rank,
                            world_size=world_size)
    try:
        seed = s["seed"] if s["seed"] is None or rank == 0 else \
            int(np.random.SeedSequence([s["seed"], rank]).generate_state(1)[0] >> 1)  # independent coins per rank
        noise = NoiseSource(secure=s["secure_rng"], seed=seed)
        torch.manual_seed(s["init_seed"])
        model = DPDDP(model_factory())  # rank 0's initial weights are broadcast to every process
        optimizer = torch.optim.Adam(model.parameters(), lr=s["lr"])
        shape_loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.zeros(s["public_rows"], 1)),
                                                   batch_size=s["batch_size"])
        assert abs(1.0 / len(shape_loader) - s["q"]) < 1e-12
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Secure RNG turned off")
            engine = PrivacyEngine(accountant=s["accountant"], secure_mode=False)
        engine.accountant = _make(s["accountant"])
        dp_model, optimizer, criterion, _ = engine.make_private(
            module=model, optimizer=optimizer, criterion=nn.CrossEntropyLoss(), data_loader=shape_loader,
            noise_multiplier=s["noise_multiplier"], max_grad_norm=s["max_grad_norm"], poisson_sampling=False,
            grad_sample_mode="ghost")
        _rank0_noise(optimizer, noise, rank)
        lo, hi = _shard(s["n"], rank, world_size)
        local = data[lo:hi]
        params = [p for p in optimizer.params if p.requires_grad]
        dp_model.train()
        for _ in range(s["steps"]):
            idx = torch.from_numpy(np.flatnonzero(noise.uniform(hi - lo) < s["q"]))
            optimizer.zero_grad(set_to_none=True)
            if len(idx):
                loss = loss_fn(dp_model, local[idx], criterion)
                loss.backward()
            else:  # this shard drew nobody: it adds a zero sum, but still takes part in the step
                for p in params:
                    p.grad = torch.zeros_like(p)
            optimizer.step()
        trained = dp_model._module.module if hasattr(dp_model, "_module") else dp_model.module
        state = {k: v.detach().clone() for k, v in trained.state_dict().items()}
        checksum = torch.cat([v.flatten().double() for v in state.values()]).sum().reshape(1)
        torch.save({"state": state, "history": [list(h) for h in engine.accountant.history],
                    "checksum": checksum}, Path(s["folder"]) / f"rank{rank}.pt")
    finally:
        dist.destroy_process_group()


def _rank0_noise(optimizer, noise: NoiseSource, rank: int) -> None:
    """Rank 0 adds the Gaussian noise from the run's noise source; the other ranks pass their sums through."""
    from opacus.optimizers.optimizer import _check_processed_flag, _mark_as_processed

    def add_noise(self):
        std = getattr(self, "_adjusted_noise_multiplier", self.noise_multiplier) * self.max_grad_norm
        for p in self.params:
            _check_processed_flag(p.summed_grad)
            extra = noise.normal_like(p.summed_grad, std) if rank == 0 else 0.0
            p.grad = (p.summed_grad + extra).view_as(p)
            _mark_as_processed(p.summed_grad)

    optimizer.add_noise = types.MethodType(add_noise, optimizer)
