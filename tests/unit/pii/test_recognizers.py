"""dpsyn's own recognizers, table-driven, with no-match rows (pattern mode: no spaCy model)."""

from __future__ import annotations

import pytest

from dpsyn.pii import ScrubConfig, scrub_texts
from dpsyn.pii.recognizers import _default_recognizers, cn_resident_id_check_char, default_recognizers

CFG = ScrubConfig(mode="pattern")


def _id(first17: str) -> str:
    return first17 + cn_resident_id_check_char(first17)


def _wrong(first17: str) -> str:
    right = cn_resident_id_check_char(first17)
    return first17 + ("0" if right != "0" else "1")


VALID_ID = _id("11010519491231002")  # the GB 11643 textbook example: check character X
VALID_ID2 = _id("44030619900307151")
WRONG_ID = _wrong("44030619900307151")


def _analyze(engine, text: str, entity: str) -> list[str]:
    res = engine.analyzer.analyze(text=text, language="en", entities=[entity], score_threshold=0.4)
    return sorted(text[r.start : r.end] for r in res)


def test_check_char_known_values():
    assert VALID_ID == "11010519491231002X"
    assert cn_resident_id_check_char("44030619900307151") in "0123456789X"
    with pytest.raises(ValueError):
        cn_resident_id_check_char("1234")


CN_ID_CASES = [
    # (text, expected matches)
    (f"身份证 {VALID_ID}", [VALID_ID]),
    (f"ID {VALID_ID.lower()} on file", [VALID_ID.lower()]),  # lower-case x
    (f"resident id {VALID_ID2}.", [VALID_ID2]),
    (f"resident id {WRONG_ID}", []),  # well-formed, wrong check digit: no match
    ("born 19491231 ref 11010519491332002X", []),  # month 13
    ("11010519490230002X", []),  # 30 February: not a date
    (f"{VALID_ID[:17]}", []),  # 17 digits
    (f"9{VALID_ID}", []),  # inside a longer run of digits
    (f"{VALID_ID}7", []),
    ("01010519491231002X", []),  # region code cannot start with 0
    ("no id here", []),
]


@pytest.mark.parametrize(("text", "expected"), CN_ID_CASES)
def test_cn_resident_id(engine, text, expected):
    assert _analyze(engine, text, "CN_RESIDENT_ID") == expected


PHONE_CASES = [
    # CN mobiles and landlines
    ("mobile 138 0013 8000", ["138 0013 8000"]),
    ("+86 138-0013-8000", ["+86 138-0013-8000"]),
    ("0086 13800138000", ["0086 13800138000"]),
    ("手机 13800138000", ["13800138000"]),
    ("tel 010-12345678", ["010-12345678"]),
    ("office (0755) 8765 4321", ["(0755) 8765 4321"]),
    ("+86 10 1234 5678", ["+86 10 1234 5678"]),
    # US
    ("call (212) 555-0199 today", ["(212) 555-0199"]),
    ("212-555-0199", ["212-555-0199"]),
    ("212.555.0199", ["212.555.0199"]),
    ("+1 415 555 0132", ["+1 415 555 0132"]),
    ("1-800-555-0199", ["1-800-555-0199"]),
    ("phone 4155550132", ["4155550132"]),  # bare 10 digits with context
    # international
    ("+44 20 7946 0958", ["+44 20 7946 0958"]),
    # national formats of other countries (python-phonenumbers, every configured region)
    ("60-56-85-91", ["60-56-85-91"]),  # Denmark
    ("ring 06 12 34 56 78", ["06 12 34 56 78"]),  # France
    ("(02) 9876 5432", ["(02) 9876 5432"]),  # Australia
    ("040 123 4567", ["040 123 4567"]),  # Finland
    ("08-123 456 78", ["08-123 456 78"]),  # Sweden
    ("+49(0)2997 220033", ["+49(0)2997 220033"]),
    ("360.318.9555x9797", ["360.318.9555x9797"]),  # with an extension
    ("order 4155550132 shipped", []),  # bare digits need a phone word (they are scrubbed as ID_NUMBER)
    ("tel. 4155550132", ["4155550132"]),
    # no match
    ("222-222-2222", []),  # one repeated digit
    ("BP 132/84, HR 88", []),
    ("1,245 participants", []),
    ("pain 4/10", []),
    ("seen 07.09.2021", []),  # a date, not a phone
    ("version 3.17.2, score 0.8734", []),
    ("2021-01-02 12:00", []),
    ("SSN 234-56-7891", []),
    ("+99 1234", []),  # not a possible number
]


@pytest.mark.parametrize(("text", "expected"), PHONE_CASES)
def test_phone_numbers(engine, text, expected):
    assert _analyze(engine, text, "PHONE_NUMBER") == expected


SCRUB_CASES = [
    (f"Resident ID {VALID_ID} verified", "Resident ID [CN_RESIDENT_ID] verified"),
    (f"Resident ID {WRONG_ID} verified", None),  # not as CN_RESIDENT_ID (see test_wrong_check_digit_is_not_a_resident_id)
    (
        "DOB 1975-03-14. Routine follow-up visit scheduled with clinic team 2021-01-02",
        "DOB [DATE_OF_BIRTH]. Routine follow-up visit scheduled with clinic team [DATE_TIME]",
    ),
    ("date of birth: March 3, 1980", "date of birth: [DATE_OF_BIRTH]"),
    ("visit on March 3, 2020", "visit on [DATE_TIME]"),
    ("pain 4/10, 2 tablets", None),
    ("MRN#12345678 and chart 7654321", "[MEDICAL_RECORD_NUMBER] and chart [MEDICAL_RECORD_NUMBER]"),
    ("room 41", None),
    ("call 138 0013 8000 or (212) 555-0199", "call [PHONE_NUMBER] or [PHONE_NUMBER]"),
]


@pytest.mark.parametrize(("text", "expected"), SCRUB_CASES)
def test_scrub_with_new_recognizers(engine, text, expected):
    cfg = CFG if "Resident" not in text else CFG.model_copy(update={"entities": ["CN_RESIDENT_ID"]})
    out, _ = scrub_texts([text], engine=engine, config=cfg)
    assert out == [text if expected is None else expected]


def test_cn_resident_id_is_a_known_entity():
    from dpsyn.pii import text_entities

    assert "CN_RESIDENT_ID" in text_entities()
    assert "CN_RESIDENT_ID" in ScrubConfig().text_entities()


QUICK_TEXTS = [
    "No change since last visit.",
    "Call Annette Wheeler at (212) 555-0142.",
    "SSN 234-56-7891, card 4111111111111111, from 192.168.10.5 and fe80::1ff:fe23:4567:890a",
    "IBAN GB82 WEST 1234 5698 7654 32; see www.example.org or https://example.com/x",
    "MRN: 0012345678, DOB: 03/14/1975, passport 912803456, licence A1234567, ITIN 912-70-1234",
    f"id {VALID_ID} or {WRONG_ID}; +86 138-0013-8000; bank 123456789012",
    "",
]


@pytest.mark.parametrize("text", QUICK_TEXTS)
def test_skipping_no_match_texts_changes_no_result(text):
    """The no-match shortcut returns exactly what Presidio's own pattern loop returns."""
    quick, plain = default_recognizers("en"), _default_recognizers("en", CFG.mrn_pattern)

    def results(recs):
        out = []
        for r in recs:
            found = r.analyze(text, r.supported_entities)
            out.append(sorted((x.entity_type, x.start, x.end, round(x.score, 6)) for x in found))
        return out

    assert results(quick) == results(plain)
    assert results(quick)  # not vacuous: one call per recognizer
