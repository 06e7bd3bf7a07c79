"""scrub_texts and the recognizers, table-driven (pattern mode: no spaCy model)."""

from __future__ import annotations

import pytest

from dpsyn.errors import PIIResidualError
from dpsyn.pii import ScrubConfig, scrub_texts

CFG = ScrubConfig(mode="pattern")

CASES = [
    # (text, expected output)
    ("BP 120/80, HR 72, temp 98.6", None),
    ("Follow up in 2 weeks.", None),
    ("Seen on 2021-01-02 for follow-up.", "Seen on [DATE_TIME] for follow-up."),  # every date (Safe Harbor C)
    ("Pain 4/10, improved from 7/10; BP 132/84, 1,245 steps", None),  # ratios, scores and counts stay
    ("Dose 500 mg BID x 10 days; ICD 250.83", None),
    ("Patient number 88123456 noted", "Patient number [MEDICAL_RECORD_NUMBER] noted"),
    ("ref QX8812345 noted", "ref [ID_NUMBER] noted"),  # any other unique number or code (Safe Harbor R)
    ("Room 412, 3 units, 20 mg", None),  # short numbers stay
    ("SSN 234-56-7891", "SSN [US_SSN]"),
    ("SSN 078-05-1120", "SSN [ID_NUMBER]"),  # Presidio rejects the sample SSN; the number is still removed
    ("MRN: 0012345678 admitted", "[MEDICAL_RECORD_NUMBER] admitted"),
    ("chart 7654321", "chart [MEDICAL_RECORD_NUMBER]"),
    ("DOB: 03/14/1975", "DOB: [DATE_OF_BIRTH]"),
    ("born on 3 March 1980", "born on [DATE_OF_BIRTH]"),
    ("call (212) 555-0199 today", "call [PHONE_NUMBER] today"),
    ("+1 415 555 0132", "[PHONE_NUMBER]"),
    ("Card 4111111111111111", "Card [CREDIT_CARD]"),
    ("from 192.168.10.5", "from [IP_ADDRESS]"),
    ("IBAN GB82 WEST 1234 5698 7654 32", "IBAN [IBAN_CODE]"),
    ("email j.doe@mail.example.co.uk", "email [EMAIL_ADDRESS]"),
    ("", None),
]


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_recognizers(engine, text, expected):
    out, counts = scrub_texts([text], engine=engine, config=CFG)
    assert out == [text if expected is None else expected]
    assert (sum(counts.values()) == 0) == (expected is None)


DENY_CASES = [
    # (text, deny list, expected)
    ("Seen with Ms Okafor today", [("PERSON", "Adaeze Okafor")], "Seen with Ms [PERSON] today"),
    ("ADAEZE called", [("PERSON", "Adaeze Okafor")], "[PERSON] called"),
    ("Okaforville clinic", [("PERSON", "Adaeze Okafor")], None),  # whole words only
    ("al came in", [("PERSON", "Al Okafor")], None),  # name tokens under 3 characters are not used
    ("call 555 0132 back", [("PHONE_NUMBER", "415-555-0132")], "call [PHONE_NUMBER] back"),
    ("id 98-7654-321 noted", [("NATIONAL_ID", "987654321")], "id [NATIONAL_ID] noted"),
    ("code zebra9 used", ["zebra9"], "code [PII] used"),
    ("NÚÑEZ llamó; José  Núñez", [("PERSON", "José Núñez")], "[PERSON] llamó; [PERSON]"),  # non-ASCII, case, spaces
    ("nothing to see", [("PERSON", "Adaeze Okafor")], None),
]


@pytest.mark.parametrize(("text", "deny", "expected"), DENY_CASES)
def test_same_row_deny_list(engine, text, deny, expected):
    out, _ = scrub_texts([text], engine=engine, config=CFG, deny_lists=[deny])
    assert out == [text if expected is None else expected]


def test_deny_list_is_per_row(engine):
    texts = ["Okafor's bill", "Okafor's bill"]
    out, counts = scrub_texts(texts, engine=engine, config=CFG, deny_lists=[[("PERSON", "Adaeze Okafor")], []])
    assert out == ["[PERSON]'s bill", "Okafor's bill"]
    assert counts == {"PERSON": 1}


def test_missing_values_and_order(engine):
    out, _ = scrub_texts([None, "SSN 234-56-7891", float("nan"), "ok"], engine=engine, config=CFG)
    assert out == [None, "SSN [US_SSN]", None, "ok"]


def test_batching_matches_one_by_one(engine):
    texts = [f"note {i}: call (212) 555-01{i % 90 + 10} or SSN 234-56-78{i % 90 + 10}" for i in range(40)]
    small = CFG.model_copy(update={"batch_size": 3})
    batched, _ = scrub_texts(texts, engine=engine, config=small)
    single = [scrub_texts([t], engine=engine, config=CFG)[0][0] for t in texts[:5]]
    assert batched[:5] == single
    assert all("555" not in t for t in batched)


def test_redact_and_entity_selection(engine):
    cfg = CFG.model_copy(update={"entities": ["EMAIL_ADDRESS"], "default_operator": "redact"})
    out, counts = scrub_texts(["mail a@b.org, SSN 234-56-7891"], engine=engine, config=cfg)
    assert out == ["mail , SSN 234-56-7891"]
    assert counts == {"EMAIL_ADDRESS": 1}


def test_custom_mrn_pattern():
    cfg = ScrubConfig(mode="pattern", mrn_pattern=r"\bHOSP-\d{5}\b")
    out, _ = scrub_texts(["see HOSP-12345"], config=cfg)
    assert out == ["see [MEDICAL_RECORD_NUMBER]"]


def test_residual_check_in_scrub_texts(engine, monkeypatch):
    from types import SimpleNamespace

    monkeypatch.setattr(
        engine.anonymizer, "anonymize", lambda text, analyzer_results, operators=None, **k: SimpleNamespace(text=text)
    )
    with pytest.raises(PIIResidualError, match="US_SSN=1") as err:
        scrub_texts(["SSN 234-56-7891"], engine=engine, config=CFG)
    assert "234" not in str(err.value)


def test_deny_lists_length_must_match(engine):
    with pytest.raises(ValueError, match="deny_lists"):
        scrub_texts(["a", "b"], engine=engine, config=CFG, deny_lists=[[]])


def test_each_distinct_text_is_analyzed_once_and_rows_keep_their_own_deny_lists(engine, monkeypatch):
    seen = []
    real = engine.analyzer.analyze

    def counting(*a, **k):
        seen.append(k["text"])
        return real(*a, **k)

    monkeypatch.setattr(engine.analyzer, "analyze", counting)
    texts = ["Okafor's bill, SSN 234-56-7891"] * 3 + ["No change."] * 4
    deny = [[("PERSON", "Adaeze Okafor")], [], [("PERSON", "Adaeze Okafor")], [], [], [], []]
    out, counts = scrub_texts(texts, engine=engine, config=CFG, deny_lists=deny)
    assert out == ["[PERSON]'s bill, SSN [US_SSN]", "Okafor's bill, SSN [US_SSN]", "[PERSON]'s bill, SSN [US_SSN]"] + [
        "No change."
    ] * 4
    assert counts == {"PERSON": 2, "US_SSN": 3}
    # first pass: the two distinct texts; re-scan: the two distinct scrubbed texts
    assert sorted(seen) == sorted(["Okafor's bill, SSN 234-56-7891", "No change.", "[PERSON]'s bill, SSN [US_SSN]",
                                   "Okafor's bill, SSN [US_SSN]"])
