"""Recognizers registered into dpsyn's Presidio engine.

Importing this module imports Presidio (slow); :mod:`dpsyn.pii` only imports
it when an engine is built.

* :class:`MedicalRecordNumberRecognizer`: ``MEDICAL_RECORD_NUMBER``, a
  configurable regex (default ``MRN[:# ]*`` followed by 6-10 digits) plus bare
  6-10 digit numbers that only count when a context word ("mrn", "record",
  "chart") is within the five words before it.
* :class:`DateOfBirthRecognizer`: ``DATE_OF_BIRTH``, a date that only counts
  when a birth context word ("dob", "born", "birth") is nearby.
* :class:`OfflineEmailRecognizer`: Presidio's email recognizer, whose domain
  check uses a tldextract instance that never fetches the public-suffix list
  (it uses the snapshot bundled with tldextract).
* US SSN (:class:`UsSsnRecognizer`; it rejects well-known sample numbers such
  as 078-05-1120 and 123-45-6789) and US phone numbers
  (:class:`PhoneRecognizer`) come from Presidio; see :func:`default_recognizers`.
"""

from __future__ import annotations

import os

# tldextract reads this when its module-level extractor is built; an empty value
# means "never fetch the public-suffix list, use the bundled snapshot".
os.environ.setdefault("TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS", "")

import tldextract  # noqa: E402
from presidio_analyzer import EntityRecognizer, Pattern, PatternRecognizer  # noqa: E402
from presidio_analyzer.predefined_recognizers import (  # noqa: E402
    CreditCardRecognizer,
    DateRecognizer,
    EmailRecognizer,
    IbanRecognizer,
    IpRecognizer,
    PhoneRecognizer,
    UrlRecognizer,
    UsBankRecognizer,
    UsItinRecognizer,
    UsLicenseRecognizer,
    UsPassportRecognizer,
    UsSsnRecognizer,
)

from dpsyn.pii.config import DEFAULT_MRN_PATTERN  # noqa: E402

__all__ = [
    "DateOfBirthRecognizer",
    "MedicalRecordNumberRecognizer",
    "OfflineEmailRecognizer",
    "default_recognizers",
]

# An extractor that can never touch the network: no URLs, no disk cache, the
# bundled public-suffix snapshot only.
_OFFLINE_TLD = tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None, fallback_to_snapshot=True)

PHONE_REGIONS = ("US", "CA", "GB")


class OfflineEmailRecognizer(EmailRecognizer):
    """Presidio's ``EmailRecognizer`` with an offline domain check."""

    def validate_result(self, pattern_text: str) -> bool:  # noqa: D102
        return _OFFLINE_TLD(pattern_text).fqdn != ""


class MedicalRecordNumberRecognizer(PatternRecognizer):
    """Medical record numbers.

    :param pattern: the main regex (matched case-insensitively), scored 0.7.
    :param context: words that, when near a bare 6-10 digit number, make it count.
    :param bare_number_score: the score of a bare 6-10 digit number without context
        (below the usual 0.4 threshold; context adds 0.35).
    """

    ENTITY = "MEDICAL_RECORD_NUMBER"
    CONTEXT = ["mrn", "record", "chart"]  # substring match on lower-cased tokens

    def __init__(
        self,
        pattern: str = DEFAULT_MRN_PATTERN,
        context: list[str] | None = None,
        supported_language: str = "en",
        bare_number_score: float = 0.05,
    ):
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


_MONTHS = r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"


class DateOfBirthRecognizer(PatternRecognizer):
    """A full date with a birth context word nearby ("DOB", "born", "date of birth").

    Every full date matches with a low score (0.1, under the usual 0.4
    threshold); a context word within the five words before it raises the
    score to 0.45. Visit dates therefore stay, dates of birth go.
    """

    ENTITY = "DATE_OF_BIRTH"
    CONTEXT = ["dob", "d.o.b", "birth", "born", "birthday", "birthdate"]
    BASE_SCORE = 0.1

    def __init__(self, context: list[str] | None = None, supported_language: str = "en"):
        numeric = [
            Pattern(p.name, p.regex, self.BASE_SCORE)
            for p in DateRecognizer.PATTERNS
            if p.name
            in (
                "mm/dd/yyyy or mm/dd/yy",
                "dd/mm/yyyy or dd/mm/yy",
                "yyyy/mm/dd",
                "mm-dd-yyyy",
                "dd-mm-yyyy",
                "yyyy-mm-dd",
                "dd.mm.yyyy or dd.mm.yy",
                "dd-MMM-yyyy or dd-MMM-yy",
            )
        ]
        worded = [
            Pattern("Month d, yyyy", rf"\b{_MONTHS}\.?\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+\d{{4}}\b", self.BASE_SCORE),
            Pattern(
                "d Month yyyy", rf"\b\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTHS}\.?,?\s+\d{{4}}\b", self.BASE_SCORE
            ),
        ]
        super().__init__(
            supported_entity=self.ENTITY,
            patterns=numeric + worded,
            context=list(context) if context is not None else list(self.CONTEXT),
            supported_language=supported_language,
            name="DateOfBirthRecognizer",
        )


def default_recognizers(language: str = "en", *, mrn_pattern: str = DEFAULT_MRN_PATTERN) -> list[EntityRecognizer]:
    """The pattern recognizers of a dpsyn engine (the NER recognizer is added separately)."""
    lang = language
    return [
        CreditCardRecognizer(supported_language=lang),
        UsSsnRecognizer(supported_language=lang),
        OfflineEmailRecognizer(supported_language=lang),
        PhoneRecognizer(supported_language=lang, supported_regions=PHONE_REGIONS),
        IpRecognizer(supported_language=lang),
        IbanRecognizer(supported_language=lang),
        UrlRecognizer(supported_language=lang),
        UsPassportRecognizer(supported_language=lang),
        UsLicenseRecognizer(supported_language=lang),
        UsItinRecognizer(supported_language=lang),
        UsBankRecognizer(supported_language=lang),
        DateRecognizer(supported_language=lang),
        MedicalRecordNumberRecognizer(pattern=mrn_pattern, supported_language=lang),
        DateOfBirthRecognizer(supported_language=lang),
    ]
