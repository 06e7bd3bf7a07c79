"""The Prefect flow and the library's run are the same run: the same manifest keys and the same ε."""

from __future__ import annotations

import json

import pytest
from loose_gate import LOOSE

from dpsyn.config import SynthesizeConfig

pytestmark = pytest.mark.slow



def test_the_flow_and_the_library_publish_the_same_manifest_and_spend(prefect_harness, small_adult, tmp_path):
    from dpsyn.pipeline import run
    from flows.synthesize import synthesize

    def cfg(name):
        return SynthesizeConfig(data=small_adult, table_schema="adult", out=tmp_path / name, validation=LOOSE,
                                register_model=False, experiment="parity", budget={"population": "parity"})

    by_flow = synthesize(cfg("flow"))
    by_library = run(cfg("library"))
    manifests = [json.loads((tmp_path / n / "manifest.json").read_text()) for n in ("flow", "library")]
    assert set(manifests[0]) == set(manifests[1])
    assert set(by_flow) == set(by_library)
    assert by_flow["epsilon_spent"] == pytest.approx(by_library["epsilon_spent"], abs=2e-3)
    assert max(by_flow["epsilon_spent"], by_library["epsilon_spent"]) <= 1.0
    assert by_flow["delta"] == by_library["delta"] and by_flow["accountant"] == by_library["accountant"]
    assert by_flow["training_batch"]["batch_id"] != by_library["training_batch"]["batch_id"]  # random ids
