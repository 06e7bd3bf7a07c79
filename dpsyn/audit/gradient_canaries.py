"""White-box one-run audit of the DP-SGD step with gradient canaries.

Steinke, Nasr & Jagielski (2023), "Privacy auditing with one (1) training run", §7 (white-box, gradient
canaries), with Dirac canaries as in Nasr et al. (2023), "Tight auditing of differentially private machine
learning". The black-box and log-likelihood scores of :mod:`dpsyn.audit.canaries` have little power (a lower
bound near 0 at any claim); this audit gives the auditor what the DP-SGD analysis assumes the adversary has: every
step's noisy gradient sum. So a bug in the noise scale, the sampling or the accounting shows up as a lower bound
above the claimed ε.

1. **Canaries.** The audited model gets ``m`` extra input features that are 0 in every real row, so the weights
   they feed (one coordinate per canary, ``W[0, d + i]``) get no gradient from real rows. Canary i is the
   gradient ``C · e_i``: a unit vector in its own coordinate, of norm exactly the clip bound ``C``.
2. **Coins.** Each canary is included with probability 1/2 (the auditor's secret coins).
3. **Training.** The real :func:`~dpsyn.synth.dpsgd.train_dpsgd` runs with the run's noise source and
   accountant; at every step each included canary joins the Poisson sample with the same probability q as a row
   (drawn from the same noise source) and its gradient joins the clipped sum before the noise is added.
4. **Scores.** The auditor reads the canary coordinate of every step's release, x_{i,t} = C·b_{i,t} + N(0, σ²C²),
   and scores canary i by the log-likelihood ratio of "included" against "excluded" under the *claimed*
   mechanism: Σ_t log(1 − q + q·exp((2 x_{i,t}/C − 1)/(2σ²))) (Neyman–Pearson optimal for the claim).
5. **Guesses and bound.** IN for the top m/10 scores, OUT for the bottom m/10 (fixed in advance), and the
   largest ε that (ε, δ)-DP cannot explain at 95 % confidence (:func:`dpsyn.audit.canaries.run_audit`,
   Theorem 3.1 of Steinke et al.). With m = 1,000 the bound cannot exceed about 4.2, so audit at a claim below.

The canaries are made-up gradients, not people: the audit measures the mechanism, it is never part of a release.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from dpsyn.audit.canaries import AuditResult, run_audit
from dpsyn.privacy import NoiseSource, PrivacyAccountant

__all__ = ["GradientCanaries", "audit_dpsgd_with_gradient_canaries"]


@dataclass
class GradientCanaries:
    """A :class:`~dpsyn.synth.dpsgd.StepHook`: Dirac gradient canaries in the weights of ``m`` unused features.

    ``weight_index`` is the position of the audited ``nn.Linear`` weight among the model's trainable parameters;
    the canaries live in row 0, columns ``first_column … first_column + m − 1`` of that weight.
    """

    m: int
    clip: float
    included: np.ndarray  # the secret coins
    weight_index: int = 0
    first_column: int = 0
    observed: list[np.ndarray] = field(default_factory=list)  # per step: the canary coordinates of the release

    def extra(self, step: int, shapes: list, *, noise: NoiseSource, sample_rate: float) -> list[torch.Tensor]:
        sampled = np.zeros(self.m, dtype=bool)
        sampled[noise.poisson_sample(self.m, sample_rate)] = True  # each canary joins like a row would
        out = [torch.zeros(s) for s in shapes]
        cols = self.first_column + np.flatnonzero(sampled & self.included)
        out[self.weight_index][0, torch.from_numpy(cols)] = self.clip  # norm C each, disjoint coordinates
        return out

    def observe(self, step: int, noisy_sum: list[torch.Tensor]) -> None:
        w = noisy_sum[self.weight_index][0, self.first_column:self.first_column + self.m]
        self.observed.append(w.detach().double().numpy().copy())

    def scores(self, *, noise_multiplier: float, sample_rate: float) -> np.ndarray:
        """Log-likelihood ratio of each canary under the claimed mechanism (σ, q)."""
        x = np.stack(self.observed, axis=1) / self.clip  # m × T, in units of C
        s2 = noise_multiplier**2
        return np.logaddexp(math.log1p(-sample_rate), math.log(sample_rate) + (2 * x - 1) / (2 * s2)).sum(axis=1)


def audit_dpsgd_with_gradient_canaries(
    features: torch.Tensor, labels: torch.Tensor, n_classes: int, *, epsilon: float, delta: float, m: int = 1000,
    batch_size: int, epochs: int, clip: float = 1.0, lr: float = 0.05, noise: NoiseSource, coins_seed: int,
    accountant: str = "prv", beta: float = 0.05,
) -> tuple[AuditResult, dict]:
    """Audit one DP-SGD training of a logistic regression of ``labels`` on ``features`` claimed (ε, δ)-DP.

    σ is calibrated for the claim on a fresh accountant (public row count: ``len(features)``, as in an audit the
    size is the auditor's); the training runs through :func:`~dpsyn.synth.dpsgd.train_dpsgd` with ``noise``.
    Returns the audit's result and what was claimed (σ, q, T, ε)."""
    from dpsyn.synth.dpsgd import steps_and_rate, train_dpsgd

    n, d = features.shape
    acct = PrivacyAccountant(epsilon=epsilon, delta=delta, accountant=accountant)
    q, steps = steps_and_rate(n, batch_size=batch_size, epochs=epochs)
    sigma = acct.calibrate(sample_rate=q, steps=steps, label="audit.dpsgd")
    included = np.random.default_rng(coins_seed).random(m) < 0.5
    hook = GradientCanaries(m=m, clip=clip, included=included, weight_index=0, first_column=d)
    data = torch.cat([features.float(), torch.zeros(n, m), labels.float().unsqueeze(1)], dim=1)

    def loss(model, xb, criterion):
        return criterion(model(xb[:, :-1]), xb[:, -1].long())

    train_dpsgd(nn.Linear(d + m, n_classes), data=data, loss_fn=loss, accountant=acct, noise=noise,
                noise_multiplier=sigma, batch_size=batch_size, epochs=epochs, max_grad_norm=clip, lr=lr,
                label="audit.dpsgd", public_rows=n, clipping="bookkeeping", step_hook=hook)
    scores = hook.scores(noise_multiplier=sigma, sample_rate=q)
    result = run_audit(scores, included, delta=delta, beta=beta, score="gradient canaries (white-box LLR)",
                       rng=np.random.default_rng(coins_seed + 1))
    return result, {"noise_multiplier": sigma, "sample_rate": q, "steps": steps, "epsilon": acct.epsilon(),
                    "claimed_epsilon": epsilon, "delta": delta, "canaries": m}
