"""Privacy audits: empirical lower bounds on ε, for the data owner and for the test suite, never a release.

:mod:`dpsyn.audit.gradient_canaries` audits the DP-SGD step white-box with Dirac gradient canaries (Steinke et
al. 2023; Nasr et al. 2023).
"""

from dpsyn.audit.gradient_canaries import GradientCanaries, audit_dpsgd_with_gradient_canaries

__all__ = ["GradientCanaries", "audit_dpsgd_with_gradient_canaries"]
