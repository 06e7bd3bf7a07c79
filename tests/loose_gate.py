"""A gate that judges nothing: for tests of the run's wiring, not of the synthesizer's fidelity.

No rules either: a schema's shipped hard rules (diabetes130) can be broken in every row of a small, noisy synthetic
batch, which is a fidelity verdict (tests/unit/validation/test_loose_gate.py).

And a noise margin of 8 noise stds on every check: with the default (a family-wise false-alarm rate of 5 %), a
check whose exact value met its threshold still failed on the DP noise alone in about one run in twenty (CI-style
failure of tests/integration/test_drift_flow.py: `constant:worst (0.502 > 0.419)` with the constant threshold at
1.0, i.e. an exact excess ≤ 0); six monthly runs made that a frequent flake."""

LOOSE = {"ks_threshold": 1.0, "tvd_threshold": 1.0, "pair_tvd_threshold": 1.0, "max_auc_drop": 1.0,
         "target_tvd_threshold": 1.0, "target_pair_threshold": 1.0, "tail_threshold": 1.0, "constant_threshold": 1.0,
         "utility_margin": 0.45, "verdict_resolution": 1.0, "target_signal_alpha": None, "rules": None,
         "noise_margin": 8.0}
