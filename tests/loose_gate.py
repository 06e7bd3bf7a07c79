"""A gate that judges nothing: for tests of the run's wiring, not of the synthesizer's fidelity.

No rules either: a schema's shipped hard rules (diabetes130) can be broken in every row of a small, noisy synthetic
batch, which is a fidelity verdict (tests/unit/validation/test_loose_gate.py)."""

LOOSE = {"ks_threshold": 1.0, "tvd_threshold": 1.0, "pair_tvd_threshold": 1.0, "max_auc_drop": 1.0,
         "target_tvd_threshold": 1.0, "target_pair_threshold": 1.0, "tail_threshold": 1.0, "constant_threshold": 1.0,
         "utility_margin": 0.45, "verdict_resolution": 1.0, "target_signal_alpha": None, "rules": None}
