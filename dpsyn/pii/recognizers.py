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
* :class:`CnResidentIdRecognizer`: ``CN_RESIDENT_ID``, the 18-character
  Chinese resident identity card number (GB 11643-1999): 6-digit region, an
  8-digit birth date, 3-digit sequence and an ISO 7064 MOD 11-2 check digit
  (``0``-``9`` or ``X``). The check digit and the birth date are validated: a
  well-formed number with a wrong check digit does not match.
* :class:`UsPhoneRecognizer` and :class:`CnPhoneRecognizer`: ``PHONE_NUMBER``
  by regex (NANP numbers such as ``(212) 555-0199``, ``+1 415 555 0132``; CN
  mobiles such as ``138 0013 8000``, ``+86 138-0013-8000`` and landlines such
  as ``010-12345678``). Bare digit runs score low and need a context word.
* :class:`IntlPhoneRecognizer`: ``+``-prefixed international numbers, checked
  with python-phonenumbers (Presidio's ``PhoneRecognizer`` is not used: it
  runs phonenumbers' matcher on every text, several ms each).
* :class:`FastContextEnhancer`: Presidio's context rules without its
  quadratic cost on long texts.
* US SSN (:class:`UsSsnRecognizer`; it rejects well-known sample numbers such
  as 078-05-1120 and 123-45-6789), cards (Luhn), IBAN, IP, URL and US
  passport/licence/ITIN/bank numbers come from Presidio; see
  :func:`default_recognizers`.
"""

from __future__ import annotations

import os
import re
from datetime import date

# tldextract reads this when its module-level extractor is built; an empty value
# means "never fetch the public-suffix list, use the bundled snapshot".
os.environ.setdefault("TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS", "")

import phonenumbers  # noqa: E402
import tldextract  # noqa: E402
from presidio_analyzer import EntityRecognizer, Pattern, PatternRecognizer, RecognizerResult  # noqa: E402
from presidio_analyzer.context_aware_enhancers import LemmaContextAwareEnhancer  # noqa: E402
from presidio_analyzer.predefined_recognizers import (  # noqa: E402
    CreditCardRecognizer,
    DateRecognizer,
    EmailRecognizer,
    IbanRecognizer,
    IpRecognizer,
    UrlRecognizer,
    UsBankRecognizer,
    UsItinRecognizer,
    UsLicenseRecognizer,
    UsPassportRecognizer,
    UsSsnRecognizer,
)

from presidio_analyzer.pattern_recognizer import REGEX_TIMEOUT_SECONDS as _REGEX_TIMEOUT  # noqa: E402

from dpsyn.pii.config import DEFAULT_MRN_PATTERN  # noqa: E402

__all__ = [
    "CnPhoneRecognizer",
    "CnResidentIdRecognizer",
    "DateOfBirthRecognizer",
    "MedicalRecordNumberRecognizer",
    "OfflineEmailRecognizer",
    "FastContextEnhancer",
    "IntlPhoneRecognizer",
    "UsPhoneRecognizer",
    "cn_resident_id_check_char",
    "default_recognizers",
]

# An extractor that can never touch the network: no URLs, no disk cache, the
# bundled public-suffix snapshot only.
_OFFLINE_TLD = tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None, fallback_to_snapshot=True)


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


# -- phone numbers --------------------------------------------------------------------

_PHONE_CONTEXT = ["phone", "telephone", "tel", "cell", "mobile", "call", "contact", "fax", "number", "reach", "电话", "手机"]
_SEP = r"[ \t.\-]"  # one separator between groups (no newlines: a table's cells are joined by newlines)


def _same_digits(text: str) -> bool:
    digits = re.sub(r"\D", "", text)
    return len(set(digits)) <= 1


class UsPhoneRecognizer(PatternRecognizer):
    """North American (NANP) phone numbers.

    Area code and exchange start with 2-9. Formatted numbers (``(212)
    555-0199``, ``212-555-0199``, ``212.555.0199``, ``+1 415 555 0132``)
    score 0.6; a bare run of 10 digits (or 11 with a leading 1) scores 0.1 and
    needs a context word such as "phone" or "call". Numbers whose digits are
    all the same are rejected.
    """

    ENTITY = "PHONE_NUMBER"
    _LEFT = r"(?<![A-Za-z0-9_+.\-/])"  # ASCII word characters only: CJK text runs into numbers
    _RIGHT = r"(?![A-Za-z0-9_\-]|[.,/]\d)"
    PATTERNS = (
        (
            "US phone (formatted)",
            _LEFT + r"(?:\+?1" + _SEP + r"?)?(?:\([2-9]\d{2}\)[ \t]?|[2-9]\d{2}" + _SEP + r")[2-9]\d{2}" + _SEP + r"\d{4}"
            + _RIGHT,
            0.6,
        ),
        ("US phone (+1, bare)", r"(?<![A-Za-z0-9_+])\+1[2-9]\d{2}[2-9]\d{6}" + _RIGHT, 0.6),
        ("US phone (bare 10 digits, needs context)", _LEFT + r"1?[2-9]\d{2}[2-9]\d{6}" + _RIGHT, 0.1),
    )

    def __init__(self, context: list[str] | None = None, supported_language: str = "en"):
        super().__init__(
            supported_entity=self.ENTITY,
            patterns=[Pattern(n, r, sc) for n, r, sc in self.PATTERNS],
            context=list(context) if context is not None else list(_PHONE_CONTEXT),
            supported_language=supported_language,
            name="UsPhoneRecognizer",
        )

    def invalidate_result(self, pattern_text: str) -> bool:  # noqa: D102
        return _same_digits(pattern_text)


class CnPhoneRecognizer(PatternRecognizer):
    """Chinese mobile and landline numbers.

    * mobiles: 11 digits starting 13-19, optionally ``+86``/``0086``-prefixed,
      grouped 3-4-4 or not (``138 0013 8000``, ``+86 138-0013-8000``,
      ``13800138000``): 0.5 (bare, unprefixed: 0.4);
    * landlines: a 2-3 digit area code after a trunk ``0`` and a 7-8 digit
      local number, separated (``010-12345678``, ``(0755) 8765 4321``,
      ``+86 10 1234 5678``): 0.5; unseparated: 0.1, needs a context word.
    """

    ENTITY = "PHONE_NUMBER"
    _L = r"(?<![A-Za-z0-9_+.\-/])"
    _R = r"(?![A-Za-z0-9_\-]|[.,/]\d)"
    _CC = r"(?:\+|00)86" + _SEP + r"?"
    PATTERNS = (
        ("CN mobile (+86)", r"(?<![A-Za-z0-9_+])" + _CC + r"1[3-9]\d(?:" + _SEP + r"?\d{4}){2}" + _R, 0.6),
        ("CN mobile (grouped)", _L + r"1[3-9]\d" + _SEP + r"\d{4}" + _SEP + r"\d{4}" + _R, 0.5),
        ("CN mobile (bare)", _L + r"1[3-9]\d{9}" + _R, 0.4),
        (
            "CN landline",
            _L + r"(?:\(0[1-9]\d{1,2}\)[ \t]?|0[1-9]\d{1,2}" + _SEP + r")[2-9]?\d{3,4}" + _SEP + r"?\d{4}" + _R,
            0.5,
        ),
        ("CN landline (+86)", r"(?<![A-Za-z0-9_+])" + _CC + r"\(?[1-9]\d{1,2}\)?" + _SEP + r"?\d{3,4}" + _SEP + r"?\d{4}" + _R, 0.5),
        ("CN landline (bare, needs context)", _L + r"0[1-9]\d{1,2}[2-9]\d{6,7}" + _R, 0.1),
    )

    def __init__(self, context: list[str] | None = None, supported_language: str = "en"):
        super().__init__(
            supported_entity=self.ENTITY,
            patterns=[Pattern(n, r, sc) for n, r, sc in self.PATTERNS],
            context=list(context) if context is not None else list(_PHONE_CONTEXT),
            supported_language=supported_language,
            name="CnPhoneRecognizer",
        )

    def invalidate_result(self, pattern_text: str) -> bool:  # noqa: D102
        return _same_digits(pattern_text)


class IntlPhoneRecognizer(PatternRecognizer):
    """Phone numbers in international format (``+44 20 7946 0958``, ``0049 30 901820``).

    A regex finds ``+``/``00``-prefixed digit groups; python-phonenumbers then
    checks that the number is possible for its country code. (Presidio's own
    ``PhoneRecognizer`` scans every text with phonenumbers' matcher, which
    costs several milliseconds per text; national formats of countries other
    than the US and China are not covered here.)
    """

    ENTITY = "PHONE_NUMBER"
    PATTERN = r"(?<![\w+])(?:\+|00)[1-9]\d{0,2}[ \t.\-]?(?:\(\d{1,4}\)[ \t.\-]?)?\d{1,5}(?:[ \t.\-]?\d{2,5}){1,4}(?![\w\-]|[.,/]\d)"

    def __init__(self, context: list[str] | None = None, supported_language: str = "en"):
        super().__init__(
            supported_entity=self.ENTITY,
            patterns=[Pattern("international phone", self.PATTERN, 0.4)],
            context=list(context) if context is not None else list(_PHONE_CONTEXT),
            supported_language=supported_language,
            name="IntlPhoneRecognizer",
        )

    def validate_result(self, pattern_text: str) -> bool:  # noqa: D102
        digits = re.sub(r"\D", "", pattern_text)
        if pattern_text.startswith("00"):
            digits = digits[2:]
        try:
            return phonenumbers.is_possible_number(phonenumbers.parse("+" + digits))
        except phonenumbers.NumberParseException:
            return False


class FastContextEnhancer(LemmaContextAwareEnhancer):
    """Presidio's lemma context enhancer, same rules, without its per-result linear scans.

    Presidio's version deep-copies every result and walks the token list from
    the start for each one (a list membership test per token), which is
    quadratic on long texts. Here the token of a match is found by bisection
    and the keywords are a set; words before the match (``context_prefix_count``),
    after it (``context_suffix_count``) and the caller's ``context`` words are
    matched against each recognizer's context words as Presidio does.
    """

    def enhance_using_context(self, text, raw_results, nlp_artifacts, recognizers, context=None):  # noqa: D102
        import bisect

        if nlp_artifacts is None or not raw_results:
            return raw_results
        by_id = {r.id: r for r in recognizers}
        extra = [w.lower() for w in context] if context else []
        tokens = nlp_artifacts.tokens
        if tokens is None or len(tokens) == 0:
            return raw_results
        starts = list(nlp_artifacts.tokens_indices)
        ends = [a + len(tok) for a, tok in zip(starts, tokens, strict=True)]
        lemmas = [lem.lower() for lem in nlp_artifacts.lemmas]
        keywords = set(nlp_artifacts.keywords)
        for result in raw_results:
            meta = result.recognition_metadata or {}
            rec = by_id.get(meta.get(RecognizerResult.RECOGNIZER_IDENTIFIER_KEY))
            if rec is None or not rec.context or meta.get(RecognizerResult.IS_SCORE_ENHANCED_BY_CONTEXT_KEY):
                continue
            if result.score >= self.MAX_SCORE:
                continue
            i = min(bisect.bisect_right(ends, result.start), len(tokens) - 1)
            words = self._collect(lemmas, keywords, i, self.context_prefix_count, -1)
            words += self._collect(lemmas, keywords, i, self.context_suffix_count, 1)
            words += extra
            word = self._find_supportive_word_in_context(words, rec.context, self.context_matching_mode)
            if word:
                result.score = min(
                    max(result.score + self.context_similarity_factor, self.min_score_with_context_similarity),
                    self.MAX_SCORE,
                )
                if result.analysis_explanation is not None:
                    result.analysis_explanation.set_supportive_context_word(word)
                    result.analysis_explanation.set_improved_score(result.score)
        return raw_results

    @staticmethod
    def _collect(lemmas: list[str], keywords: set[str], index: int, n_words: int, step: int) -> list[str]:
        out: list[str] = []
        remaining = n_words + 1  # the match's own token counts too, as in Presidio
        i = index
        while 0 <= i < len(lemmas) and remaining > 0:
            if lemmas[i] in keywords:
                out.append(lemmas[i])
                remaining -= 1
            i += step
        return out


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


_PATTERNS_METHOD = "_PatternRecognizer__analyze_patterns"  # PatternRecognizer.__analyze_patterns, name-mangled


def skip_when_no_match(recognizer: EntityRecognizer) -> EntityRecognizer:
    """Let a pattern recognizer return at once on a text none of its patterns matches.

    Presidio's pattern loop costs several microseconds of timing, logging and
    bookkeeping per pattern and text even when nothing matches, which is most
    texts for most recognizers. Here each compiled pattern is searched first;
    only if one matches (or a pattern is not compiled yet, or a search times
    out) does Presidio's own loop run, so results are the same by construction.
    Recognizers that are not plain pattern recognizers are returned unchanged.
    """
    full = getattr(recognizer, _PATTERNS_METHOD, None)
    if not isinstance(recognizer, PatternRecognizer) or full is None:
        return recognizer

    def analyze_patterns(text: str, flags: int | None = None):
        flags = flags if flags else recognizer.global_regex_flags
        for pattern in recognizer.patterns:
            compiled = pattern.compiled_regex
            if compiled is None or pattern.compiled_with_flags != flags:
                return full(text, flags)
            try:
                if compiled.search(text, timeout=_REGEX_TIMEOUT) is not None:
                    return full(text, flags)
            except TimeoutError:
                return full(text, flags)
        return []

    setattr(recognizer, _PATTERNS_METHOD, analyze_patterns)
    return recognizer


def default_recognizers(language: str = "en", *, mrn_pattern: str = DEFAULT_MRN_PATTERN) -> list[EntityRecognizer]:
    """The pattern recognizers of a dpsyn engine (the NER recognizer is added separately)."""
    return [skip_when_no_match(r) for r in _default_recognizers(language, mrn_pattern)]


def _default_recognizers(language: str, mrn_pattern: str) -> list[EntityRecognizer]:
    lang = language
    return [
        CreditCardRecognizer(supported_language=lang),
        UsSsnRecognizer(supported_language=lang),
        OfflineEmailRecognizer(supported_language=lang),
        UsPhoneRecognizer(supported_language=lang),
        CnPhoneRecognizer(supported_language=lang),
        IntlPhoneRecognizer(supported_language=lang),
        CnResidentIdRecognizer(supported_language=lang),
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
