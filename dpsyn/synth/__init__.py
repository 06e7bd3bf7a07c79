"""DP synthesizers behind one contract, created by name.

``create(name, config, privacy=...)`` returns an unfitted synthesizer;
``fit(df, schema, accountant=...)`` returns it fitted; ``sample(n,
random_state=...)`` returns a frame conforming to the schema.
"""

from dpsyn.synth.base import PrivacyConfig, Synthesizer, default_delta
from dpsyn.synth.encoding import DiscreteEncoder
from dpsyn.synth.registry import create, get_class, list_synthesizers, register_synthesizer

__all__ = [
    "DiscreteEncoder",
    "PrivacyConfig",
    "Synthesizer",
    "create",
    "default_delta",
    "get_class",
    "list_synthesizers",
    "register_synthesizer",
]
