"""Identifying numbers: medical record, health-plan, account, licence and certificate, vehicle,
device and other unique numbers (HIPAA Safe Harbor classes H-M and R), card numbers of every
length, and the Chinese resident ID.

* :class:`MedicalRecordNumberRecognizer`: a configurable regex (``MRN[:# ]*`` + 6-10 digits) and
  bare 6-10 digit numbers near "mrn", "record", "chart";
* :func:`labelled_recognizers`: one :class:`~dpsyn.pii.recognizers.base.LabelledValueRecognizer`
  per class, for a value written after its label (``member ID``, ``acct #``, ``DEA``, ``VIN``,
  ``S/N``, ``case no.`` ...);
* :class:`VinRecognizer` (17 characters, ISO 3779 check digit) and :class:`ImeiRecognizer`
  (15 digits, Luhn) without a label;
* :class:`CardNumberRecognizer`: 12-19 digit card numbers (any issuer prefix 2-6, grouped or
  not) that pass the Luhn check;
* :class:`UniqueNumberRecognizer`: any other standalone number of 6+ digits (grouped with ``-``,
  spaces or dots) or code of letters with 3+ digits (Safe Harbor class R, "any other unique
  identifying number"), so that an identifier in an unknown format is still removed;
* :class:`CnResidentIdRecognizer`: 18 characters, ISO 7064 MOD 11-2 check character and a real
  birth date.
"""

from __future__ import annotations

from datetime import date

from presidio_analyzer import Pattern, PatternRecognizer

from dpsyn.pii.config import DEFAULT_MRN_PATTERN
from dpsyn.pii.recognizers.base import LabelledValueRecognizer, same_digits

__all__ = ["CardNumberRecognizer", "CnResidentIdRecognizer", "ImeiRecognizer", "MedicalRecordNumberRecognizer",
           "GroupedIbanRecognizer", "UniqueNumberRecognizer", "VinRecognizer", "WebAddressRecognizer", "cn_resident_id_check_char", "labelled_recognizers", "luhn_ok"]  # fmt: skip


def luhn_ok(digits: str) -> bool:
    """The Luhn (mod 10) check of a string of digits."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        n = int(ch) * (2 if i % 2 else 1)
        total += n - 9 if n > 9 else n
    return total % 10 == 0


class MedicalRecordNumberRecognizer(PatternRecognizer):
    """Medical record numbers.

    :param pattern: the main regex (matched case-insensitively), scored 0.7.
    :param context: words that, when near a bare 6-10 digit number, make it count.
    :param bare_number_score: the score of a bare 6-10 digit number without context
        (below the usual 0.4 threshold; context adds 0.35).
    """

    ENTITY = "MEDICAL_RECORD_NUMBER"
    CONTEXT = ["mrn", "record", "chart"]  # substring match on lower-cased tokens

    def __init__(self, pattern: str = DEFAULT_MRN_PATTERN, context: list[str] | None = None,
                 supported_language: str = "en", bare_number_score: float = 0.05):  # fmt: skip
        patterns = [Pattern("MRN (labelled)", pattern, 0.7)]
        if bare_number_score > 0:
            patterns.append(Pattern("MRN (bare number, needs context)", r"\b\d{6,10}\b", bare_number_score))
        super().__init__(
            supported_entity=self.ENTITY,
            patterns=patterns,
            context=list(context) if context is not None else list(self.CONTEXT),
            supported_language=supported_language,
            name="MedicalRecordNumberRecognizer",
        )


# (entity, label words): the value follows the label, as in "member ID W282001137"
_NO = r"(?:\s*(?:no|nr|num|number|#)\.?)?"
LABELS: tuple[tuple[str, str], ...] = (
    ("MEDICAL_RECORD_NUMBER", rf"mrn|medical\s+record{_NO}|med\.?\s*rec(?:ord)?{_NO}|record\s*(?:no|number|#)\.?"
                              rf"|chart{_NO}|hospital\s+(?:no|number)\.?|patient\s+(?:id|no|number)\.?|pt\.?\s+id|ur\s+(?:no|number)\.?"),
    ("HEALTH_PLAN_ID", r"member(?:ship)?|beneficiary|health\s*plan(?:\s+beneficiary)?|policy|subscriber|insurance|insured"
                       r"|medicare(?:\s+mbi)?|mbi|medicaid|nhs|group|versichertennummer|kvnr|carte\s+vitale|tessera\s+sanitaria"),
    ("ACCOUNT_NUMBER", r"account|acct|a/c|billing|customer|invoice|routing|sort\s+code|kontonummer|konto|compte|conta"),
    ("LICENSE_NUMBER", r"licen[cs]e|lic|dl|driver'?s?\s+licen[cs]e|driving\s+licen[cs]e|permit|certificate|cert|dea|npi|gmc"
                       r"|registration\s+(?:no|number)\.?|f[üu]hrerschein|patente|permis|c[ée]dula"),
    ("VEHICLE_ID", r"vin|vehicle(?:\s+id(?:entification)?)?|chassis|(?:licen[cs]e\s+|number\s+|car\s+)?plate|reg(?:istration)?"
                   r"(?:\s+plate)?|car\s+reg|kennzeichen|immatriculation|targa|matr[íi]cula|rekisterinumero|registreringsnummer"),
    ("DEVICE_ID", r"serial|s/n|sn|imei|mac(?:\s+address)?|device(?:\s+id)?|udi|lot|asset\s+tag|hardware\s+id|pacemaker|pump"),
    ("ID_NUMBER", r"id|identification|case|claim|ticket|ref(?:erence)?|employee|staff|student|badge|passport|visa|national\s+id"
                  r"|id\s+card|tax\s+id|tin|personnummer|henkil[öo]tunnus|hetu|bsn|pesel|codice\s+fiscale|dni|nie|nif|cpf|cpr"
                  r"|aadhaar|nino|ni\s+number|sin|tfn|steuer-?id|personalausweis|document"),
)  # fmt: skip


def labelled_recognizers(supported_language: str = "en") -> list[LabelledValueRecognizer]:
    """One recognizer per Safe Harbor number class, for values written after their label."""
    return [
        LabelledValueRecognizer(entity=e, labels=labels, name=f"Labelled{e.title().replace('_', '')}Recognizer",
                                supported_language=supported_language, min_digits=3 if e != "VEHICLE_ID" else 2)
        for e, labels in LABELS
    ]  # fmt: skip


_VIN_VALUES = {**{str(i): i for i in range(10)}, **dict(zip("ABCDEFGH", range(1, 9), strict=True)),
               **dict(zip("JKLMN", range(1, 6), strict=True)), "P": 7, "R": 9,
               **dict(zip("STUVWXYZ", range(2, 10), strict=True))}  # fmt: skip
_VIN_WEIGHTS = (8, 7, 6, 5, 4, 3, 2, 10, 0, 9, 8, 7, 6, 5, 4, 3, 2)


class VinRecognizer(PatternRecognizer):
    """Vehicle identification numbers: 17 characters without I, O, Q, with a valid check digit."""

    def __init__(self, supported_language: str = "en"):
        super().__init__(
            supported_entity="VEHICLE_ID",
            patterns=[Pattern("VIN", r"\b(?=[A-HJ-NPR-Z0-9]*\d)(?=[A-HJ-NPR-Z0-9]*[A-Z])[A-HJ-NPR-Z0-9]{17}\b", 0.6)],
            context=["vin", "vehicle", "chassis", "car"],
            supported_language=supported_language,
            global_regex_flags=0,
            name="VinRecognizer",
        )

    def validate_result(self, pattern_text: str) -> bool:  # noqa: D102
        s = sum(_VIN_VALUES[c] * w for c, w in zip(pattern_text, _VIN_WEIGHTS, strict=True)) % 11
        return pattern_text[8] == ("X" if s == 10 else str(s))


class ImeiRecognizer(PatternRecognizer):
    """IMEI device numbers: 15 digits (``35-209900-176148-1`` grouping allowed), Luhn-valid."""

    def __init__(self, supported_language: str = "en"):
        super().__init__(
            supported_entity="DEVICE_ID",
            patterns=[Pattern("IMEI", r"(?<![\d\-])\d{2}-?\d{6}-?\d{6}-?\d(?![\d\-])", 0.4)],
            context=["imei", "device", "phone", "serial"],
            supported_language=supported_language,
            name="ImeiRecognizer",
        )

    def validate_result(self, pattern_text: str) -> bool:  # noqa: D102
        return luhn_ok(pattern_text.replace("-", ""))


class CardNumberRecognizer(PatternRecognizer):
    """Card numbers of 12-19 digits, issuer prefix 2-6, grouped by spaces or dashes or not, Luhn-valid."""

    def __init__(self, supported_language: str = "en"):
        super().__init__(
            supported_entity="CREDIT_CARD",
            patterns=[Pattern("card (any length)", r"(?<![\w\-.,])[2-6]\d{2,3}(?:[ \-]?\d){8,16}(?![\w\-]|[.,]\d)", 0.5)],
            context=["card", "credit", "debit", "visa", "mastercard", "amex", "paid"],
            supported_language=supported_language,
            name="CardNumberRecognizer",
        )

    def validate_result(self, pattern_text: str) -> bool:  # noqa: D102
        digits = pattern_text.replace(" ", "").replace("-", "")
        return 12 <= len(digits) <= 19 and not same_digits(digits) and luhn_ok(digits)


class UniqueNumberRecognizer(PatternRecognizer):
    """Any other unique identifying number (Safe Harbor class R), scored 0.4.

    * 6 or more digits standing alone, optionally in groups joined by single dashes, dots
      (3+ groups, 9+ digits: ``400.481.269-00``) or spaces (8+ digits: ``2016 6131 8604``);
    * codes of letters and digits with 3+ digits in a row (``RX8033401``, ``EHV307924J``,
      ``130470-368J``, ``A1234``).

    Numbers inside decimals, thousands-grouped amounts, ratios and times are not matched.
    """

    PATTERNS = (
        ("digits", r"(?<![\w\-.,/:+])\d(?:-?\d){5,}(?![\w]|[\-.,/:]\d)", 0.4),
        ("digit groups (spaces)", r"(?<![\w\-.,/:+])\d{1,6}(?: \d{1,6}){2,5}(?![\w]|[\-.,/:]\d)", 0.4),
        ("digit groups (dots)", r"(?<![\w\-.,/:+])\d{2,4}(?:\.\d{2,4}){2,4}(?:-\d{1,3})?(?![\w]|[\-.,/:]\d)", 0.4),
        ("code", r"(?<![\w\-])(?=[A-Za-z0-9\-]*\d{3})(?=[A-Za-z0-9\-]*[A-Za-z])[A-Za-z0-9]{2,}(?:-[A-Za-z0-9]+){0,3}(?![\w\-])", 0.4),
    )

    def __init__(self, supported_language: str = "en"):
        super().__init__(
            supported_entity="ID_NUMBER",
            patterns=[Pattern(n, r, s) for n, r, s in self.PATTERNS],
            supported_language=supported_language,
            global_regex_flags=0,
            name="UniqueNumberRecognizer",
        )

    def validate_result(self, pattern_text: str) -> bool | None:  # noqa: D102
        # None keeps the pattern's score (True would raise it to 1.0); False drops the match
        digits = sum(ch.isdigit() for ch in pattern_text)
        if " " in pattern_text:
            ok = digits >= 8
        elif "." in pattern_text:
            ok = digits >= 9
        else:
            ok = digits >= 6 or any(ch.isalpha() for ch in pattern_text)
        return None if ok else False


# -- Chinese resident identity card number ---------------------------------------------

_CN_ID_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
_CN_ID_CHECK = "10X98765432"  # check character for (sum of weighted digits) mod 11


def cn_resident_id_check_char(first17: str) -> str:
    """The ISO 7064 MOD 11-2 check character of the first 17 digits of a CN resident ID."""
    if len(first17) != 17 or not first17.isdigit() or not first17.isascii():
        raise ValueError("expected 17 ASCII digits")
    return _CN_ID_CHECK[sum(int(d) * w for d, w in zip(first17, _CN_ID_WEIGHTS, strict=True)) % 11]


class CnResidentIdRecognizer(PatternRecognizer):
    """18-character Chinese resident ID numbers, check digit and birth date validated.

    The regex fixes the shape (region code not starting with 0, birth year
    18xx-20xx, month 01-12, day 01-31); :meth:`validate_result` then requires
    a real calendar date not in the future and the right check character, so
    a mistyped or made-up number with a wrong check digit is not reported.
    The first-generation 15-digit numbers (no check digit) are not matched.
    """

    ENTITY = "CN_RESIDENT_ID"
    PATTERN = (
        r"(?<![0-9A-Za-z])[1-9]\d{5}(?:18|19|20)\d{2}(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])\d{3}[0-9Xx]"
        r"(?![0-9A-Za-z])"
    )
    CONTEXT = ["身份证", "resident", "identity", "citizen", "national", "prc", "china", "chinese"]

    def __init__(self, context: list[str] | None = None, supported_language: str = "en"):
        super().__init__(
            supported_entity=self.ENTITY,
            patterns=[Pattern("CN resident ID (18)", self.PATTERN, 0.5)],
            context=list(context) if context is not None else list(self.CONTEXT),
            supported_language=supported_language,
            name="CnResidentIdRecognizer",
        )

    def validate_result(self, pattern_text: str) -> bool:  # noqa: D102
        v = pattern_text.upper()
        if len(v) != 18 or not v[:17].isdigit():
            return False
        try:
            born = date(int(v[6:10]), int(v[10:12]), int(v[12:14]))
        except ValueError:
            return False
        if born > date.today():
            return False
        return cn_resident_id_check_char(v[:17]) == v[17]


class WebAddressRecognizer(PatternRecognizer):
    """Web addresses with a scheme or ``www.`` whatever their top-level domain (``http://reynolds.biz``)."""

    def __init__(self, supported_language: str = "en"):
        super().__init__(
            supported_entity="URL",
            patterns=[Pattern("scheme or www", r"\b(?:https?://|www\.)[^\s<>\"'()\[\]]+[^\s<>\"'()\[\].,;:!?]", 0.6)],
            supported_language=supported_language,
            name="WebAddressRecognizer",
        )


class GroupedIbanRecognizer(PatternRecognizer):
    """IBANs written in groups of four with a shorter last group (``GB41 QFIC 0805 5467 5834 1``), ISO 7064 mod 97."""

    def __init__(self, supported_language: str = "en"):
        super().__init__(
            supported_entity="IBAN_CODE",
            patterns=[Pattern("IBAN (grouped)", r"\b[A-Z]{2}\d{2}(?:[ \-]?[A-Z0-9]{4}){2,7}(?:[ \-]?[A-Z0-9]{1,3})?\b", 0.5)],
            supported_language=supported_language,
            global_regex_flags=0,
            name="GroupedIbanRecognizer",
        )

    def validate_result(self, pattern_text: str) -> bool:  # noqa: D102
        v = pattern_text.replace(" ", "").replace("-", "")
        if not 15 <= len(v) <= 34:
            return False
        digits = "".join(str(int(ch, 36)) for ch in v[4:] + v[:4])
        return int(digits) % 97 == 1
