"""Dataset synthesizers are created by name (a registry of their own: their contract is fit(tables, dataset))."""

from __future__ import annotations

import pytest

from dpsyn.errors import ConfigError, UnknownComponentError
from dpsyn.relational import (
    RelationalSynthesizer,
    create_relational,
    list_relational_synthesizers,
    register_relational_synthesizer,
)


def test_default_is_registered_and_unknown_names_list_the_choices():
    assert "relational" in list_relational_synthesizers()
    assert isinstance(create_relational("relational"), RelationalSynthesizer)
    with pytest.raises(UnknownComponentError, match="choose one of: relational"):
        create_relational("nope")


def test_registering_twice_needs_force():
    with pytest.raises(ValueError, match="already registered"):
        register_relational_synthesizer("relational", RelationalSynthesizer)


def test_a_task_model_in_a_component_is_refused():
    # the budget split composes full-batch Gaussian components only
    with pytest.raises(ConfigError, match="backbone.task must be off"):
        create_relational("relational", {"backbone": {"task": "on"}})
