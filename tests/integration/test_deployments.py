"""prefect.yaml loads and every entrypoint imports as a flow."""

import importlib
from pathlib import Path

import yaml

from dpsyn.config import SynthesizeConfig

PREFECT_YAML = Path(__file__).resolve().parents[2] / "deployments" / "prefect.yaml"


def test_every_entrypoint_is_a_flow_with_valid_parameters():
    from prefect import Flow

    spec = yaml.safe_load(PREFECT_YAML.read_text())
    assert spec["deployments"]
    for dep in spec["deployments"]:
        path, _, name = dep["entrypoint"].partition(":")
        module = importlib.import_module(path.removesuffix(".py").replace("/", "."))
        fl = getattr(module, name)
        assert isinstance(fl, Flow)
        if "config" in dep.get("parameters", {}):
            SynthesizeConfig(**dep["parameters"]["config"])  # the parameters validate
