"""Recognizers from Presidio's own recognizer-registry YAML, so users extend detection without code.

``ScrubConfig.recognizer_registry`` is the path of such a file, or the same content inline (a
mapping with a ``recognizers:`` list), in the format of Presidio's ``RecognizerRegistryProvider``
(``conf/default_recognizers.yaml``, ``example_recognizers.yaml``)::

    recognizers:
      - name: StaffIdRecognizer
        type: custom
        supported_entity: STAFF_ID
        supported_language: en
        patterns: [{name: staff id, regex: "\\\\bSTF-\\\\d{6}\\\\b", score: 0.8}]
        context: [staff]
      - name: UkNinoRecognizer          # a predefined Presidio recognizer, by class name
        type: predefined

The recognizers are added to dpsyn's own (they never replace them), and the entity names they
define are accepted by :meth:`ScrubConfig.validate_names`; any other unknown name still fails
closed. Reading the entity names needs only PyYAML; predefined entries import Presidio.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from dpsyn.errors import ConfigError

__all__ = ["load_registry_recognizers", "registry_entities"]


def _read(spec: str | dict[str, Any]) -> dict[str, Any]:
    if isinstance(spec, dict):
        return spec
    from dpsyn.io import read_mapping_file

    return read_mapping_file(spec, "recognizer registry", holds="a mapping with a 'recognizers' list",
                             hint=" (ScrubConfig.recognizer_registry)")


@functools.lru_cache(maxsize=64)
def _entities(key: str) -> frozenset[str]:
    raw = json.loads(key)
    out: set[str] = set()
    for rec in raw.get("recognizers") or []:
        if isinstance(rec, str):
            rec = {"name": rec, "type": "predefined"}
        if not isinstance(rec, dict):
            raise ConfigError("each entry of a recognizer registry's 'recognizers' list must be a mapping")
        if rec.get("supported_entity"):
            out.add(str(rec["supported_entity"]))
        out.update(str(e) for e in rec.get("supported_entities") or [])
        if rec.get("type", "predefined") == "predefined" and not (rec.get("supported_entity") or rec.get("supported_entities")):
            from presidio_analyzer import predefined_recognizers as pre

            cls = getattr(pre, str(rec.get("class_name") or rec.get("name")), None)
            if cls is None:
                raise ConfigError(f"unknown predefined Presidio recognizer '{rec.get('name')}' in the recognizer registry")
            out.update(cls().supported_entities)
    return frozenset(out)


def registry_entities(spec: str | dict[str, Any] | None) -> set[str]:
    """The entity names a registry YAML defines (empty without one)."""
    if spec is None:
        return set()
    raw = _read(spec)
    return set(_entities(json.dumps(raw, sort_keys=True, default=str)))


def load_registry_recognizers(spec: str | dict[str, Any], language: str) -> list:
    """The recognizers of a registry YAML for ``language``, built by Presidio's ``RecognizerRegistryProvider``."""
    from presidio_analyzer.recognizer_registry import RecognizerRegistryProvider

    raw = dict(_read(spec))
    raw.setdefault("supported_languages", [language])
    raw.setdefault("global_regex_flags", 26)
    try:
        registry = RecognizerRegistryProvider(registry_configuration=raw).create_recognizer_registry()
    except (ValueError, TypeError, KeyError) as e:
        raise ConfigError(f"invalid recognizer registry ({type(e).__name__}): check it against Presidio's format") from None
    return [r for r in registry.recognizers if r.supported_language == language]
