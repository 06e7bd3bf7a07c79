"""The tests' gate that judges nothing (tests/loose_gate.py) judges no rule either.

Reproduces CI's failure of tests/integration/test_drift_flow.py::test_six_monthly_batches: dpgen's output on a
1,500-row diabetes130 batch at ε = 1 can break a shipped hard rule in every row (no compliant row to redraw from),
and the 'loose' gate still failed it on rule:pregnancy_only_female and two others. A wiring test must not depend on
the synthesizer's fidelity on a batch that small; the hard rules keep their own tests (test_repair, test_gate).
"""

from __future__ import annotations

from loose_gate import LOOSE

from dpsyn.schema import load_schema
from dpsyn.validation import ValidationConfig, gate_rules


def test_the_loose_gate_loads_no_rules_even_for_a_schema_that_ships_them():
    schema = load_schema("diabetes130")
    assert gate_rules(ValidationConfig(), schema) is not None  # the shipped rules, by default
    assert gate_rules(ValidationConfig(**LOOSE), schema) is None
