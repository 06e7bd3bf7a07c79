"""DP synthesizers behind one contract, created by name.

``create(name, config, privacy=...)`` returns an unfitted synthesizer; ``fit(df, schema, accountant=...,
rows=...)`` returns it fitted; ``sample(n, random_state=...)`` returns a frame conforming to the schema.

Registered: ``pgm`` (marginal backbone: MST-style selection and Private-PGM estimation, a DP task model for the
labels on top; the default by :func:`choose_synthesizer`), ``dpgen`` (DP-SGD autoregressive generator) and ``dpdsyn`` (task-oriented: a DP classifier of the
target on top of a DP feature generator; the name is the method's in the literature, DPDSyn, made DP-correct,
docs/privacy.md). The one DP-SGD loop is :mod:`dpsyn.synth.dpsgd` (book-keeping clipping in
:mod:`dpsyn.synth.bookkeeping`, DP-SGD-S in :mod:`dpsyn.synth.group_clip`); the one DP classifier is
:mod:`dpsyn.synth.classifier`.
"""

from dpsyn.synth.base import Synthesizer
from dpsyn.synth.choice import AUTO, choose_synthesizer
from dpsyn.synth.registry import create, get_class, list_synthesizers, register_synthesizer, require_registered

__all__ = [
    "AUTO",
    "Synthesizer",
    "choose_synthesizer",
    "create",
    "get_class",
    "list_synthesizers",
    "register_synthesizer",
    "require_registered",
]
