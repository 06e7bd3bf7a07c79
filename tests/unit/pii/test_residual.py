"""The residual re-scan in NER mode: tags are not residuals, late detections get a second pass, and
worker processes give the same result as one process."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from dpsyn.errors import PIIResidualError
from dpsyn.pii import ScrubConfig, build_engine, scrub_texts
from dpsyn.pii.scrub import _uncovered


@pytest.fixture(scope="module")
def ner_cfg(tmp_path_factory):
    """A tiny rule-based spaCy pipeline standing in for an NER model that (like en_core_web_sm on
    "Called [PERSON] at [PHONE_NUMBER]") calls the words inside our tags names, and that only
    finds "Zed" as a name once the e-mail before it has become a tag."""
    import spacy

    nlp = spacy.blank("en")
    ruler = nlp.add_pipe("entity_ruler")
    ruler.add_patterns(
        [
            {"label": "PERSON", "pattern": [{"LOWER": "quint"}]},
            {"label": "PERSON", "pattern": [{"TEXT": "PHONE_NUMBER"}]},
            {"label": "PERSON", "pattern": [{"TEXT": "PERSON"}]},
            {"label": "PERSON", "pattern": [{"TEXT": "EMAIL_ADDRESS"}, {"TEXT": "]"}, {"LOWER": "zed"}]},
        ]
    )
    path = tmp_path_factory.mktemp("model") / "tag_confused"
    nlp.to_disk(path)
    return ScrubConfig(mode="ner", spacy_model=str(path))


def test_uncovered():
    text = "Called [PERSON] at [PHONE_NUMBER] x"
    tags = [(7, 15), (19, 33)]
    assert not _uncovered(text, 8, 14, tags)  # PERSON inside [PERSON]
    assert not _uncovered(text, 7, 15, tags)  # the whole tag
    assert _uncovered(text, 7, 33, tags)  # two tags and "at" between them
    assert _uncovered(text, 16, 18, tags)  # "at"
    assert _uncovered(text, 34, 35, tags)


def test_tags_in_scrubbed_text_are_not_residuals(ner_cfg):
    eng = build_engine(ner_cfg)
    out, counts = scrub_texts(["Called Quint at (212) 555-0199 today"], engine=eng, config=ner_cfg)
    assert out == ["Called [PERSON] at [PHONE_NUMBER] today"]
    assert counts == {"PERSON": 1, "PHONE_NUMBER": 1}


def test_late_detection_gets_a_second_pass(ner_cfg):
    eng = build_engine(ner_cfg)
    out, counts = scrub_texts(["mail a.b@example.org zed please"], engine=eng, config=ner_cfg)
    assert "zed" not in out[0].lower() and "example" not in out[0]
    assert counts["EMAIL_ADDRESS"] == 1 and counts["PERSON"] == 1


def test_broken_anonymizer_still_fails_closed(ner_cfg, monkeypatch):
    eng = build_engine(ner_cfg)
    monkeypatch.setattr(
        eng.anonymizer, "anonymize", lambda text, analyzer_results, operators=None, **k: SimpleNamespace(text=text)
    )
    with pytest.raises(PIIResidualError, match="PERSON=1") as err:
        scrub_texts(["Called Quint today"], engine=eng, config=ner_cfg)
    assert "Quint" not in str(err.value)


def test_worker_processes_match_one_process(engine, monkeypatch):
    """Large inputs go to `python -m dpsyn.pii._worker` processes: same texts, counts and pseudonyms."""
    monkeypatch.delenv("DPSYN_PII_HMAC_KEY", raising=False)
    base = ScrubConfig(mode="pattern", operators={"EMAIL_ADDRESS": "pseudonym"})
    texts = [f"note {i}: write to p{i % 7}@example.org or call (212) 555-01{10 + i % 80}" for i in range(60)]
    texts[5] = None
    deny = [[("PERSON", "Ana Ruiz")] for _ in texts]
    texts[7] = "Ana Ruiz seen"
    one, c1 = scrub_texts(texts, engine=engine, config=base, deny_lists=deny)
    import dpsyn.pii.workers as workers_mod

    calls = []
    real = workers_mod.run_workers
    monkeypatch.setattr(workers_mod, "run_workers", lambda *a, **k: calls.append(k["n"]) or real(*a, **k))
    par = base.model_copy(update={"n_process": 2, "parallel_min_texts": 10})
    many, c2 = scrub_texts(texts, engine=engine, config=par, deny_lists=deny)
    assert calls == [2]
    assert many == one and c2 == c1
    assert one[7] == "[PERSON] seen" and one[5] is None
    assert sum("EMAIL_ADDRESS_" in t for t in one if t) == 58


def test_worker_failure_fails_closed(engine, monkeypatch):
    """A worker that cannot build its engine makes the parent raise, naming no value."""
    cfg = ScrubConfig(mode="pattern", n_process=2, parallel_min_texts=2)
    monkeypatch.setattr(ScrubConfig, "model_dump_json", lambda self, **k: '{"mode": "bogus"}')
    with pytest.raises(RuntimeError, match="worker process failed") as err:
        scrub_texts(["SSN 234-56-7891", "SSN 345-67-8912"], engine=engine, config=cfg)
    assert "234" not in str(err.value)


def test_context_words_work_in_ner_mode(ner_cfg):
    """Without a lemmatizer the keywords must be rebuilt from the tokens, or no context word is ever seen."""
    eng = build_engine(ner_cfg)
    texts = ["DOB: 03/14/1975", "chart 7654321", "passport 912345678", "visit 03/14", "room 41/12"]
    out, _ = scrub_texts(texts, engine=eng, config=ner_cfg)
    assert out == [
        "DOB: [DATE_OF_BIRTH]",
        "chart [MEDICAL_RECORD_NUMBER]",
        "passport [US_PASSPORT]",
        "visit [DATE_TIME]",  # a day and month count next to a date word
        "room 41/12",
    ]


def test_second_pass_never_tags_a_tag(ner_cfg):
    """The second pass leaves what the first pass wrote alone: NER calls PHONE_NUMBER inside the tag a name."""
    eng = build_engine(ner_cfg)
    out, counts = scrub_texts(["Called Quint at (212) 555-0199, mail a.b@example.org zed"], engine=eng, config=ner_cfg)
    assert out[0].startswith("Called [PERSON] at [PHONE_NUMBER], mail [EMAIL_ADDRESS]")
    assert "[[" not in out[0] and "zed" not in out[0] and counts["EMAIL_ADDRESS"] == 1
