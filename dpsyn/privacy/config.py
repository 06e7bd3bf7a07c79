"""The privacy settings of a run, and the public rules that turn them into (ε, δ) and noise seeds.

Nothing here reads data: δ's default comes from a *public* population size (config or schema), never from the
private row count, so the budget ledger reserves the same δ that the run then spends (docs/privacy.md).
"""

from __future__ import annotations

import hashlib
import math

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["DEFAULT_DELTA", "PrivacyConfig", "default_delta", "derive_seed"]

#: δ when neither the config nor the schema declares a population size: at most 1/(10 n) up to n = 100,000.
DEFAULT_DELTA = 1e-6


class PrivacyConfig(BaseModel):
    """The privacy settings of a run: the target (ε, δ), the accountant and the noise source."""

    model_config = ConfigDict(extra="forbid")

    epsilon: float = Field(default=1.0, gt=0, allow_inf_nan=False,
                           description="Total ε for the run (row count, synthesis and validation).")
    delta: float | None = Field(
        default=None, gt=0, lt=1,
        description="δ of the whole release; default: a power of ten ≤ 1/(10·N) for the public population size N "
        "(population_size here, else the schema's), else 1e-6.")
    population_size: int | None = Field(
        default=None, ge=1,
        description="Public upper bound on the number of privacy units (rows) the data can hold, from public "
        "knowledge (a census count, a registry size); sets the default δ. Never the private row count.")
    accountant: str = Field(default="prv", description="Opacus accountant: prv or rdp.")
    count_share: float = Field(
        default=0.1, gt=0, lt=1,
        description="ε share (alone) of the one Gaussian release of the noisy row counts (training and holdout "
        "rows) that sets every size-dependent quantity of the run: sample rates, steps, synthetic rows, the gate's "
        "sensitivities. Under composition it costs about 1 % of ε.")
    secure_rng: bool = Field(default=True, description="Draw DP noise and sampling from the OS CSPRNG.")
    noise_seed: int | None = Field(
        default=None, description="Seed for non-secure noise (library tests only: a run with it cannot publish or "
        "register; each mechanism gets its own seed derived from it; never logged).")

    def resolved_delta(self, schema_population_size: int | None = None) -> float:
        """The run's δ: explicit, or the public rule of :func:`default_delta`."""
        if self.delta is not None:
            return self.delta
        return default_delta(self.population_size or schema_population_size)


def default_delta(population_size: int | None) -> float:
    """A round δ ≤ 1/(10·N) for a public population size N: 10^floor(log10(1/(10 N))); 1e-6 if N is unknown."""
    if population_size is None:
        return DEFAULT_DELTA
    return float(10 ** math.floor(math.log10(1.0 / (10 * max(int(population_size), 1)))))


def derive_seed(seed: int | None, label: str) -> int | None:
    """A seed of its own for the mechanism ``label`` (None stays None): no two noise sources share a stream."""
    if seed is None:
        return None
    return int.from_bytes(hashlib.sha256(f"{seed}\x1f{label}".encode()).digest()[:8], "little") >> 1
