"""Privacy accounting and DP noise: one accountant per run charges every mechanism."""

from dpsyn.privacy.accountant import Mechanism, PrivacyAccountant, gaussian_epsilon, list_accountants
from dpsyn.privacy.noise import NoiseSource

__all__ = ["Mechanism", "NoiseSource", "PrivacyAccountant", "gaussian_epsilon", "list_accountants"]
