"""The Safe Harbor classes, table-driven with no-match rows; the exact shortcuts; the registry YAML;
the date operators (pattern mode: no spaCy model)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from dpsyn.errors import UnknownComponentError
from dpsyn.pii import ScrubConfig, build_engine, scrub_texts
from dpsyn.pii.config import SAFE_HARBOR, text_entities

CFG = ScrubConfig(mode="pattern")
REPO = Path(__file__).resolve().parents[3]

# (text, the part that must be gone, or None when nothing may be touched)
CASES = [
    # A names, by the words around them (NER adds the rest)
    ("My name is Ingrid Solberg and I live here", "Ingrid Solberg"),
    ("hey its rocco!! call me", "rocco"),
    ("Founders: Eklund, Mbatha and Hodge.", "Eklund, Mbatha and Hodge"),
    ("Seen with Mrs Okonkwo today", "Okonkwo"),
    ("Leiva seen today, doing well.", "Leiva"),
    ("Patient seen today, doing well.", None),
    # B streets, postcodes
    ("lives at Puruntie 82 Apt. 595", "Puruntie 82 Apt. 595"),
    ("Rua do Arenque 1634, Porto", "Rua do Arenque 1634"),
    ("221B Baker Street, London NW1 6XE", "221B Baker Street, London NW1 6XE"),
    ("Paffrathstraße 95, 62762 Bochum", "Paffrathstraße 95, 62762 Bochum"),
    ("12 rue Lambert, 69001 Lyon", "12 rue Lambert, 69001"),  # the town by NER
    ("Springfield, IL 62704", "62704"),
    ("Postcode: 88-216", "88-216"),
    ("walked 150 m with a frame, 2 rests", None),
    ("transport via ambulance", None),
    # C dates and ages over 89
    ("seen 14.03.2021", "14.03.2021"),
    ("on March 14th", "March 14th"),
    ("am 14. März 2021", "14. März 2021"),
    ("admitted 08AUG2019 at 14:30", "08AUG2019"),
    ("a 93-year-old woman", "93"),
    ("aged 101, lives alone", "101"),
    ("a 67-year-old man", None),
    ("pain 4/10, BP 120/80", None),
    # D/E phones and faxes
    ("call 60-56-85-91", "60-56-85-91"),
    ("Fax: 0141 496 0230", "0141 496 0230"),
    ("tel +33 (0)6 12 34 56 78", "+33 (0)6 12 34 56 78"),
    ("HR 88, RR 16, SpO2 96%", None),
    # F, G
    ("mail ingrid.s@example.no", "ingrid.s@example.no"),
    ("SSN 234-56-7891", "234-56-7891"),
    # H-M numbers after their label, and without one
    ("MRN: A1234567", "A1234567"),
    ("member ID W282001137", "W282001137"),
    ("acct #: 5543-2219-07", "5543-2219-07"),
    ("DEA BJ1234563", "BJ1234563"),
    ("VIN 1HGCM82633A004352", "1HGCM82633A004352"),
    ("plate 7ABC123", "7ABC123"),
    ("pacemaker serial PJN123456Y", "PJN123456Y"),
    ("IMEI 490154203237518", "490154203237518"),
    ("card 4788762328601290405", "4788762328601290405"),
    ("card 4788762328601290406", "4788762328601290406"),  # not Luhn-valid: still a unique number (R)
    ("ICD-10 E11.9, CPT 99214, COVID-19", None),
    # N, O, R
    ("see https://www.facebook.com/ingrid.solberg.85", "facebook.com/ingrid.solberg.85"),
    ("from 10.14.2.201", "10.14.2.201"),
    ("case no. 2023-00417", "2023-00417"),
    ("version 2.14.3 crashed; 1,245 users", None),
]


@pytest.fixture(scope="module")
def eng():
    return build_engine(CFG)


@pytest.mark.parametrize(("text", "gone"), CASES)
def test_safe_harbor_classes(eng, text, gone):
    out, _ = scrub_texts([text], engine=eng, config=CFG)
    if gone is None:
        assert out == [text]
    else:
        assert gone not in out[0] and out[0] != text
        for word in gone.replace(",", " ").split():
            if len(word) > 2 and word.lower() not in ("and", "apt."):
                assert word not in out[0], (word, out[0])


def test_every_safe_harbor_class_maps_to_known_entities():
    known = set(text_entities())
    assert len(SAFE_HARBOR) == 18
    for cls, entities in SAFE_HARBOR.items():
        assert set(entities) <= known, cls
    assert sum(bool(v) for v in SAFE_HARBOR.values()) == 16  # biometrics and photos are not text


def test_presidio_defaults_are_all_used():
    """dpsyn's list of Presidio defaults is Presidio's own (a new default recognizer fails this test)."""
    from presidio_analyzer import RecognizerRegistry

    from dpsyn.pii.recognizers import PRESIDIO_DEFAULTS

    reg = RecognizerRegistry(supported_languages=["en"])
    reg.load_predefined_recognizers(languages=["en"])
    names = [type(r).__name__ for r in reg.recognizers if type(r).__name__ != "SpacyRecognizer"]
    assert tuple(names) == PRESIDIO_DEFAULTS


def _wild(n: int) -> list[str]:
    spec = importlib.util.spec_from_file_location("pii_corpus", REPO / "benchmarks" / "pii_corpus.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return [c["text"] for c in mod.build_wild_corpus(n, seed=11)]


@pytest.fixture(scope="module")
def diverse() -> list[str]:
    return _wild(400) + [t for t, _ in CASES]


def test_no_match_shortcut_is_exact_on_a_diverse_corpus(eng, diverse):
    """Every recognizer with the shortcut returns exactly what it returns without it."""
    from dpsyn.pii.recognizers import _default_recognizers, default_recognizers

    quick, plain = default_recognizers("en"), _default_recognizers("en", CFG.mrn_pattern)
    nlp = eng.analyzer.nlp_engine
    differ = 0
    for text in diverse:
        art = nlp.process_text(text, "en")
        for q, p in zip(quick, plain, strict=True):
            a = sorted((r.entity_type, r.start, r.end, round(r.score, 6)) for r in q.analyze(text, q.supported_entities, art))
            b = sorted((r.entity_type, r.start, r.end, round(r.score, 6)) for r in p.analyze(text, p.supported_entities, art))
            differ += a != b
    assert differ == 0


def test_phone_region_length_filter_is_exact(diverse):
    """Skipping regions whose numbers cannot have the candidate's digit count changes no result."""
    import phonenumbers

    from dpsyn.pii.config import DEFAULT_LOCALES
    from dpsyn.pii.recognizers.phones import _CANDIDATE, _valid_in

    checked = 0
    for text in diverse:
        for m in _CANDIDATE.finditer(text):
            cand = m.group(0).rstrip(" \t.-/")
            plain = None
            t = "+" + cand[2:] if cand.startswith("00") else cand
            try:
                if t.startswith(("+", "(+")):
                    plain = "+" if phonenumbers.is_valid_number(phonenumbers.parse(t, None)) else None
                else:
                    plain = next((r for r in DEFAULT_LOCALES if phonenumbers.is_valid_number(phonenumbers.parse(t, r))), None)
            except phonenumbers.NumberParseException:
                plain = None
            assert (_valid_in(cand, DEFAULT_LOCALES) is None) == (plain is None), cand
            checked += 1
    assert checked > 100


def test_batched_scrub_equals_one_by_one(eng, diverse):
    """Deduplicated, batched analysis and the skipped re-scan of untouched texts give the one-by-one result."""
    texts = diverse[:120] + diverse[:40]
    batched, _ = scrub_texts(texts, engine=eng, config=CFG)
    single = [scrub_texts([t], engine=eng, config=CFG)[0][0] for t in texts]
    assert batched == single


REGISTRY = {
    "recognizers": [
        {"name": "StaffIdRecognizer", "type": "custom", "supported_entity": "STAFF_ID", "supported_language": "en",
         "patterns": [{"name": "staff id", "regex": r"\bSTF-\d{4}\b", "score": 0.9}]},
    ]
}  # fmt: skip


def test_registry_yaml_extends_detection_and_validation(tmp_path):
    import yaml

    path = tmp_path / "registry.yaml"
    path.write_text(yaml.safe_dump(REGISTRY), encoding="utf-8")
    text = ["badge STF-0042 returned"]
    plain, _ = scrub_texts(text, config=CFG.model_copy(update={"entities": ["PERSON"]}))
    assert plain == text  # nothing else would catch it with PERSON only
    cfg = ScrubConfig(mode="pattern", recognizer_registry=str(path), entities=["STAFF_ID"], operators={"STAFF_ID": "redact"})
    out, counts = scrub_texts(text, config=cfg)
    assert out == ["badge  returned"] and counts == {"STAFF_ID": 1}
    inline = ScrubConfig(mode="pattern", recognizer_registry=REGISTRY)
    assert scrub_texts(text, config=inline)[0] == ["badge [STAFF_ID] returned"]
    with pytest.raises(UnknownComponentError, match="STAFF_ID"):  # unknown without the registry: fail closed
        ScrubConfig(mode="pattern", entities=["STAFF_ID"]).validate_names()
    with pytest.raises(UnknownComponentError):  # a typo still fails closed with it
        ScrubConfig(mode="pattern", recognizer_registry=str(path), entities=["STAFF_IDS"]).validate_names()


@pytest.mark.parametrize(
    ("op", "text", "expected"),
    [
        ("year", "Seen 14.03.2021, DOB March 3, 1950", "Seen 2021, DOB 1950"),
        ("year", "next visit 3/14", "next visit [DATE_TIME]"),
        ("shift", "Seen 2021-03-14", "Seen 20"),
        ("replace", "Seen 2021-03-14", "Seen [DATE_TIME]"),
    ],
)
def test_date_operators(monkeypatch, op, text, expected):
    monkeypatch.setenv("DPSYN_PII_HMAC_KEY", "0123456789abcdef0123")
    cfg = ScrubConfig(mode="pattern", operators={"DATE_TIME": op, "DATE_OF_BIRTH": op})
    out, _ = scrub_texts([text], config=cfg)
    if op == "shift":  # 1-365 days earlier, as an ISO date
        from datetime import date

        moved = date.fromisoformat(out[0].removeprefix("Seen "))
        assert 1 <= (date(2021, 3, 14) - moved).days <= 365
    else:
        assert out[0] == expected
    assert "03-14" not in out[0] and "14.03" not in out[0]


def test_engine_shortcuts_are_exact_on_a_diverse_corpus(eng, diverse):
    """dpsyn's analyzer (no-match shortcut and gates, memoized recognizer lookup, grouped per-recognizer
    context step, linear-time context enhancer) gives the same results as Presidio's plain AnalyzerEngine
    with Presidio's own context enhancer over the same recognizers."""
    from presidio_analyzer import AnalyzerEngine, RecognizerRegistry
    from presidio_analyzer.context_aware_enhancers import LemmaContextAwareEnhancer

    from dpsyn.pii.recognizers import _default_recognizers

    registry = RecognizerRegistry(supported_languages=["en"])
    for rec in _default_recognizers("en", CFG.mrn_pattern):
        registry.add_recognizer(rec)
    plain = AnalyzerEngine(registry=registry, nlp_engine=eng.analyzer.nlp_engine, supported_languages=["en"],
                           context_aware_enhancer=LemmaContextAwareEnhancer())  # fmt: skip
    entities = eng.analyzable(CFG.text_entities())

    def run(analyzer, text):
        res = analyzer.analyze(text=text, language="en", entities=entities, score_threshold=0.0)
        return sorted((r.entity_type, r.start, r.end, round(r.score, 6)) for r in res)

    differ = [t for t in diverse if run(eng.analyzer, t) != run(plain, t)]
    assert differ == []
    assert sum(bool(run(plain, t)) for t in diverse) > 300  # not vacuous


def test_a_column_of_six_digit_numbers_is_not_a_phone_column(eng):
    """Adult's fnlwgt (6-digit weights) must not look like phones; the same digits under a phone header do."""
    from dpsyn.pii.structured import classify_sample

    weights = [str(100_000 + 7919 * i % 800_000) for i in range(200)]
    assert classify_sample(weights, engine=eng, config=CFG, context=["fnlwgt"], use_ner=False) == (None, 0.0)
    phones = [f"41555{50100 + i}" for i in range(200)]
    entity, share = classify_sample(phones, engine=eng, config=CFG, context=["phone"], use_ner=False)
    assert entity == "PHONE_NUMBER" and share > 0.9
