"""Name-keyed registry of synthesizers, with lazy imports.

    >>> from dpsyn.synth import create, list_synthesizers
    >>> synth = create("dpgen", {"epochs": 5}, privacy={"epsilon": 1.0})
"""

from __future__ import annotations

import importlib

from dpsyn.errors import UnknownComponentError

__all__ = ["create", "get_class", "list_synthesizers", "register_synthesizer", "require_registered"]

_REGISTRY: dict[str, object] = {
    "dpdsyn": "dpsyn.synth.dpdsyn:DPDSyn",
    "dpgen": "dpsyn.synth.dpgen:DPGen",
    "pgm": "dpsyn.synth.pgm:PGM",
}


def register_synthesizer(name: str, cls_or_path, *, force: bool = False) -> None:
    """Register a synthesizer class (or a ``"module:Class"`` path) under ``name``."""
    if name in _REGISTRY and not force:
        raise ValueError(f"synthesizer '{name}' is already registered (pass force=True to replace it)")
    _REGISTRY[name] = cls_or_path


def list_synthesizers() -> list[str]:
    return sorted(_REGISTRY)


def require_registered(name: str) -> None:
    """Raise :class:`UnknownComponentError` listing the registered names unless ``name`` is one (imports nothing)."""
    if name not in _REGISTRY:
        raise UnknownComponentError(f"unknown synthesizer '{name}'; choose one of: {', '.join(list_synthesizers())}")


def get_class(name: str):
    require_registered(name)
    entry = _REGISTRY[name]
    if isinstance(entry, str):
        mod, _, attr = entry.partition(":")
        entry = getattr(importlib.import_module(mod), attr)
        _REGISTRY[name] = entry
    return entry


def create(name: str, config=None, **kwargs):
    """A new, unfitted synthesizer ``name`` with ``config`` (a dict or its config model)."""
    return get_class(name)(config, **kwargs)
