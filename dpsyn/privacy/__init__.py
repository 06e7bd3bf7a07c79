"""Privacy accounting and DP noise: one accountant per run charges every mechanism.

``PrivacyConfig`` (the run's ε, δ, accountant and noise source), the public δ rule, the accountant, the
noise source and the noisy row counts live here; nothing in this package knows a synthesizer, the gate or
an attack (docs/architecture.md).
"""

from dpsyn.privacy.accountant import NEIGHBOURING, Mechanism, PrivacyAccountant, gaussian_epsilon, list_accountants
from dpsyn.privacy.config import DEFAULT_DELTA, PrivacyConfig, default_delta, derive_seed
from dpsyn.privacy.count import COUNT_LABEL, CountPlan, NoisyCounts, plan_counts, release_counts
from dpsyn.privacy.noise import NoiseSource

__all__ = ["COUNT_LABEL", "DEFAULT_DELTA", "NEIGHBOURING", "CountPlan", "Mechanism", "NoiseSource", "NoisyCounts",
           "PrivacyAccountant", "PrivacyConfig", "default_delta", "derive_seed", "gaussian_epsilon",
           "list_accountants", "plan_counts", "release_counts"]
