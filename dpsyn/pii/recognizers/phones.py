"""Phone and fax numbers (``PHONE_NUMBER``).

* :class:`UsPhoneRecognizer`, :class:`CnPhoneRecognizer`: NANP and Chinese formats by regex
  (bare digit runs score low and need a context word);
* :class:`IntlPhoneRecognizer`: ``+``/``00``-prefixed numbers, checked with python-phonenumbers;
* :class:`NationalPhoneRecognizer`: numbers written the national way of any configured region
  (``60-56-85-91``, ``06 12 34 56 78``, ``(02) 9876 5432``, ``040 123 4567``, ``08-123 456 78``):
  digit groups with separators are parsed with python-phonenumbers for each region and kept
  when the number is valid in one of them. It finds every number Presidio's ``PhoneRecognizer``
  finds for its default regions (tested) without running phonenumbers' matcher over every text.
"""

from __future__ import annotations

import functools
import re

import phonenumbers
from presidio_analyzer import AnalysisExplanation, EntityRecognizer, Pattern, PatternRecognizer, RecognizerResult

from dpsyn.pii.recognizers.base import same_digits

__all__ = ["CnPhoneRecognizer", "IntlPhoneRecognizer", "NationalPhoneRecognizer", "PHONE_CONTEXT", "UsPhoneRecognizer"]

PHONE_CONTEXT = ["phone", "telephone", "tel", "cell", "mobile", "call", "contact", "fax", "reach", "whatsapp", "电话",
                 "手机"]  # fmt: skip
_SEP = r"[ \t.\-]"  # one separator between groups (no newlines: a table's cells are joined by newlines)


class _RegexPhoneRecognizer(PatternRecognizer):
    """Phone patterns of one country (``PATTERNS``: name, regex, score); all-same-digit numbers rejected."""

    ENTITY = "PHONE_NUMBER"
    PATTERNS: tuple[tuple[str, str, float], ...] = ()

    def __init__(self, context: list[str] | None = None, supported_language: str = "en"):
        super().__init__(
            supported_entity=self.ENTITY,
            patterns=[Pattern(n, r, sc) for n, r, sc in self.PATTERNS],
            context=list(context) if context is not None else list(PHONE_CONTEXT),
            supported_language=supported_language,
            name=type(self).__name__,
        )

    def invalidate_result(self, pattern_text: str) -> bool:  # noqa: D102
        return same_digits(pattern_text)


class UsPhoneRecognizer(_RegexPhoneRecognizer):
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
            + r"(?:[ \t]?(?:x|ext\.?|extension)[ \t]?\d{1,6})?" + _RIGHT,
            0.6,
        ),
        ("US phone (+1, bare)", r"(?<![A-Za-z0-9_+])\+1[2-9]\d{2}[2-9]\d{6}" + _RIGHT, 0.6),
        ("US phone (bare 10 digits, needs context)", _LEFT + r"1?[2-9]\d{2}[2-9]\d{6}" + _RIGHT, 0.1),
    )



class CnPhoneRecognizer(_RegexPhoneRecognizer):
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



class IntlPhoneRecognizer(PatternRecognizer):
    """Phone numbers in international format (``+44 20 7946 0958``, ``0049 30 901820``).

    A regex finds ``+``/``00``-prefixed digit groups; python-phonenumbers then
    checks that the number is possible for its country code.
    """

    ENTITY = "PHONE_NUMBER"
    PATTERN = r"(?<![\w+])(?:\+|00)[1-9]\d{0,2}[ \t.\-]?(?:\(\d{1,4}\)[ \t.\-]?)?\d{1,5}(?:[ \t.\-]?\d{2,5}){1,4}(?![\w\-]|[.,/]\d)"

    def __init__(self, context: list[str] | None = None, supported_language: str = "en"):
        super().__init__(
            supported_entity=self.ENTITY,
            patterns=[Pattern("international phone", self.PATTERN, 0.4)],
            context=list(context) if context is not None else list(PHONE_CONTEXT),
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


# digit groups with separators (at least 6 digits), an optional +/00 prefix, (0) and (area) groups,
# and an optional extension; not inside a longer token, a decimal, a date-like a/b/c or an IP
_CANDIDATE = re.compile(
    r"(?<![\w+\-/.:])(?:\+|00)?(?:\(\+?\d{1,4}\)[ \t.\-/]{0,2})?\d(?:[ \t]?\(\d{1,5}\)[ \t]?|[ \t.\-/]{0,2}\d){5,16}"
    r"(?:[ \t]?(?:x|ext\.?|extension|#)[ \t]?\d{1,6})?(?![\w\-]|[.,:/]\d)",
    re.IGNORECASE,
)


_DECIMAL = re.compile(r"\d+[.,]\d+")  # a decimal or an amount, not a phone number
_DATE_SHAPE = re.compile(r"\d{1,4}([./\-])\d{1,2}\1\d{1,4}")
_EXT = re.compile(r"[ \t]?(?:x|ext\.?|extension|#)[ \t]?\d{1,6}$", re.IGNORECASE)


@functools.lru_cache(maxsize=512)
def _region_lengths(region: str) -> frozenset[int]:
    """Digit counts a national-format number of ``region`` can have (with or without its trunk prefix)."""
    meta = phonenumbers.PhoneMetadata.metadata_for_region(region)
    if meta is None or meta.general_desc is None:
        return frozenset()
    lengths = set(meta.general_desc.possible_length or ())
    prefix = len(meta.national_prefix or "")
    return frozenset(lengths | {n + prefix for n in lengths} | {n + 1 for n in lengths})


@functools.lru_cache(maxsize=65536)
def _valid_in(candidate: str, regions: tuple[str, ...]) -> str | None:
    """The first region (or ``"+"``) in which ``candidate`` parses as a valid number, or ``None``.

    Regions whose numbers cannot have as many digits as the candidate are not tried (a number
    with another count of digits is never valid there).
    """
    text = candidate.strip()
    if text.startswith("00"):
        text = "+" + text[2:]
    n = sum(ch.isdigit() for ch in _EXT.sub("", text))
    if n < 6 or n > 17:
        return None
    try:
        if text.startswith("+") or text.startswith("(+"):
            return "+" if phonenumbers.is_valid_number(phonenumbers.parse(text, None)) else None
        for region in regions:
            if n in _region_lengths(region) and phonenumbers.is_valid_number(phonenumbers.parse(text, region)):
                return region
    except phonenumbers.NumberParseException:
        return None
    return None


class NationalPhoneRecognizer(EntityRecognizer):
    """Numbers that are valid phone numbers of one of ``regions`` (python-phonenumbers metadata).

    Score 0.45 (scrubbed at the default 0.4; ``dpsyn scan``, at 0.5, needs a phone word nearby). A run of digits without any separator or prefix is left to the US and CN
    recognizers (which need a phone word for it) and, in free text, to ``ID_NUMBER``: a column
    of 6-digit weights or the numbers of an HTML report are not phones. Results of the parse are
    cached per distinct candidate.
    """

    ENTITY = "PHONE_NUMBER"

    def __init__(self, regions: list[str] | tuple[str, ...], context: list[str] | None = None,
                 supported_language: str = "en"):  # fmt: skip
        self.regions = tuple(r for r in dict.fromkeys(r.upper() for r in regions) if r in phonenumbers.SUPPORTED_REGIONS)
        super().__init__(
            supported_entities=[self.ENTITY],
            supported_language=supported_language,
            context=list(context) if context is not None else list(PHONE_CONTEXT),
            name="NationalPhoneRecognizer",
        )

    def load(self) -> None:  # noqa: D102
        pass

    def analyze(self, text, entities, nlp_artifacts=None):  # noqa: D102
        out = []
        for m in _CANDIDATE.finditer(text):
            cand = m.group(0).rstrip(" \t.-/")
            if same_digits(cand) or _DATE_SHAPE.fullmatch(cand) or _DECIMAL.fullmatch(cand):
                continue
            if _valid_in(cand, self.regions) is None:
                continue
            if cand.isdigit():
                continue  # a bare run of digits: the US/CN recognizers (with context) and ID_NUMBER cover it
            score = 0.45  # counts when scrubbing (0.4); a scan (0.5) needs a phone word nearby
            out.append(
                RecognizerResult(self.ENTITY, m.start(), m.start() + len(cand), score,
                                 analysis_explanation=AnalysisExplanation(self.name, score),
                                 recognition_metadata={RecognizerResult.RECOGNIZER_NAME_KEY: self.name,
                                                       RecognizerResult.RECOGNIZER_IDENTIFIER_KEY: self.id})
            )  # fmt: skip
        return out
