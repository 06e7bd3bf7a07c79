"""Dates, times and ages over 89 (HIPAA Safe Harbor class C).

* :class:`DateTimeRecognizer` (``DATE_TIME``): numeric dates in every order and separator
  (``14.03.2021``, ``3/14/21``, ``2021-03-14``, ``20210314``), dates with month names in
  English and nine other languages (``March 14th``, ``14 mars 2021``, ``14. März``, ``the 14th
  of March``, ``08AUG2019``), month and year (``09/2016``, ``June 2019``), weekdays, and clock
  times (``14:30``, ``2:30 pm``, ``12h30``). A day and month without a year (``3/14``) counts
  only next to a date word ("on", "seen", "since", "DOB", ...), so ratios such as a pain score
  ``4/10`` stay.
* :class:`DateOfBirthRecognizer` (``DATE_OF_BIRTH``): a full date next to "DOB", "born", ...
* :class:`AgeOver89Recognizer` (``AGE_OVER_89``): ages of 90 and more (``92-year-old``, ``aged
  94``, ``101 yo``), which Safe Harbor requires to be aggregated; ages up to 89 stay.
"""

from __future__ import annotations

from presidio_analyzer import Pattern, PatternRecognizer
from presidio_analyzer.predefined_recognizers import DateRecognizer

__all__ = ["AgeOver89Recognizer", "DateOfBirthRecognizer", "DateTimeRecognizer", "MONTHS"]

_EN = (r"jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?"
       r"|nov(?:ember)?|dec(?:ember)?")
_OTHER = (r"januar|februar|märz|maerz|mai|juni|juli|oktober|dezember|janvier|février|fevrier|mars|avril|juin|juillet|août"
          r"|aout|septembre|octobre|novembre|décembre|decembre|enero|febrero|marzo|abril|mayo|junio|julio|agosto"
          r"|septiembre|setiembre|octubre|noviembre|diciembre|gennaio|febbraio|aprile|maggio|giugno|luglio|settembre"
          r"|ottobre|dicembre|janeiro|fevereiro|março|marco|maio|junho|julho|setembro|outubro|novembro|dezembro|januari"
          r"|februari|maart|mei|augustus|juni|juli|tammikuuta|helmikuuta|maaliskuuta|huhtikuuta|toukokuuta|kesäkuuta"
          r"|heinäkuuta|elokuuta|syyskuuta|lokakuuta|marraskuuta|joulukuuta|stycznia|lutego|marca|kwietnia|maja|czerwca"
          r"|lipca|sierpnia|września|października|listopada|grudnia|januari|februari|augusti")
MONTHS = rf"(?:{_EN}|{_OTHER})\.?"
_DAY = r"(?:0?[1-9]|[12]\d|3[01])"
_MON = r"(?:0?[1-9]|1[0-2])"
_YEAR = r"(?:1[89]\d{2}|20\d{2})"
_ORD = r"(?:st|nd|rd|th|er|º|°)?"
_WEEKDAY = (r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|montag|dienstag|mittwoch|donnerstag|freitag"
            r"|samstag|sonntag|lundi|mardi|mercredi|jeudi|vendredi|samedi|dimanche|lunes|martes|miércoles|jueves|viernes"
            r"|sábado|domingo)")
_WEEKDAY_ABBR = r"(?:mon|tue|tues|wed|thu|thur|thurs|fri|sat|sun)"
_TIME = r"(?:[01]?\d|2[0-3])(?::[0-5]\d(?::[0-5]\d(?:\.\d+)?)?(?:\s?[ap]\.?m\.?)?|h[0-5]\d|\s?[ap]\.?m\.?)"
_L, _R = r"(?<![\w/.\-:,])", r"(?![\w/]|[.\-:,]\d)"

DATE_PATTERNS: tuple[tuple[str, str, float], ...] = (
    ("numeric d-m-y / m-d-y", rf"{_L}\d{{1,2}}([./\-])\d{{1,2}}\1(?:\d{{4}}|\d{{2}}){_R}", 0.6),
    ("numeric y-m-d", rf"{_L}{_YEAR}([./\-]){_MON}\1{_DAY}(?:[T ]{_TIME}(?:Z|[+\-]\d{{2}}:?\d{{2}})?)?{_R}", 0.6),
    ("compact yyyymmdd", rf"{_L}{_YEAR}(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01]){_R}", 0.45),
    ("month name d, y", rf"\b{MONTHS}\s+{_DAY}{_ORD},?(?:\s+{_YEAR}|\s+'\d{{2}})?\b", 0.6),
    ("d month y", rf"\b{_DAY}{_ORD}\.?\s*(?:of\s+|de\s+|di\s+)?{MONTHS},?(?:\s+(?:de\s+|del\s+)?{_YEAR})?\b", 0.6),
    ("ddMONyyyy", rf"\b{_DAY}[\-/ ]?(?:{_EN})[\-/ ]?(?:{_YEAR}|\d{{2}})\b", 0.6),
    ("the dth of month", rf"\bthe\s+{_DAY}(?:st|nd|rd|th)(?:\s+of\s+{MONTHS})?", 0.5),
    ("month year", rf"\b{MONTHS}\s+(?:of\s+)?{_YEAR}\b", 0.6),
    ("numeric month/year", rf"{_L}{_MON}[/.\-]{_YEAR}{_R}", 0.5),
    ("weekday", rf"\b{_WEEKDAY}\b(?:,?\s+(?:the\s+)?{_DAY}{_ORD}(?:\s+of)?(?:\s+{MONTHS})?)?", 0.5),
    ("weekday abbreviation and date", rf"\b{_WEEKDAY_ABBR}\.?,?\s+{_DAY}{_ORD}(?:\s+{MONTHS})?\b", 0.5),
    ("time", rf"{_L}(?:[01]?\d|2[0-3]):[0-5]\d(?::[0-5]\d)?(?:\s?[ap]\.?m\.?\b)?{_R}", 0.5),
    ("time h", r"\b(?:1[0-2]|0?[1-9])\s?[ap]\.?m\b\.?|\b(?:[01]?\d|2[0-3])h[0-5]\d\b", 0.5),
    ("day/month after a date word", rf"(?<=\b(?i:on|since|until|till|from|to|by|before|after|dob:?|dated?|of|moved\s+to)\s){_L}\d{{1,2}}/\d{{1,2}}(?![\w/]|[.\-:,]\d)", 0.45),
    ("day/month without year (needs context)", rf"{_L}\d{{1,2}}[/.]\d{{1,2}}\.?(?![\w/]|[.\-:,]\d)", 0.2),
)
DATE_CONTEXT = ["seen", "since", "until", "date", "dated", "visit", "admitted", "discharged",
                "appointment", "due", "last", "next", "scheduled", "surgery", "died", "deceased", "edd", "lmp"]  # fmt: skip


class DateTimeRecognizer(PatternRecognizer):
    """Dates and times in many formats and languages (see the module docstring)."""

    ENTITY = "DATE_TIME"

    def __init__(self, context: list[str] | None = None, supported_language: str = "en"):
        super().__init__(
            supported_entity=self.ENTITY,
            patterns=[Pattern(n, r, s) for n, r, s in DATE_PATTERNS],
            context=list(context) if context is not None else list(DATE_CONTEXT),
            supported_language=supported_language,
            name="DateTimeRecognizer",
        )

    def validate_result(self, pattern_text: str) -> bool | None:  # noqa: D102
        import re

        m = re.fullmatch(r"(\d{1,2})[/.](\d{1,2})\.?", pattern_text)
        if m is None:
            return None
        a, b = int(m.group(1)), int(m.group(2))
        if b == 10 and a <= 10:  # an out-of-ten score such as pain 4/10
            return False
        ok = (1 <= a <= 12 and 1 <= b <= 31) or (1 <= b <= 12 and 1 <= a <= 31)
        return None if ok else False  # None keeps the (context-dependent) score


class DateOfBirthRecognizer(PatternRecognizer):
    """A full date with a birth context word nearby ("DOB", "born", "date of birth").

    Every full date matches with a low score (0.3, under the usual 0.4 threshold); a
    context word within the five words before it raises the score to 0.65, above the
    plain date (0.6), so the more specific tag names the span.
    """

    ENTITY = "DATE_OF_BIRTH"
    CONTEXT = ["dob", "d.o.b", "birth", "born", "birthday", "birthdate", "nata", "nato", "né", "née", "geboren"]
    BASE_SCORE = 0.3

    def __init__(self, context: list[str] | None = None, supported_language: str = "en"):
        numeric = [
            Pattern(p.name, p.regex, self.BASE_SCORE)
            for p in DateRecognizer.PATTERNS
            if p.name
            in ("mm/dd/yyyy or mm/dd/yy", "dd/mm/yyyy or dd/mm/yy", "yyyy/mm/dd", "mm-dd-yyyy", "dd-mm-yyyy",
                "yyyy-mm-dd", "dd.mm.yyyy or dd.mm.yy", "dd-MMM-yyyy or dd-MMM-yy")
        ]  # fmt: skip
        worded = [
            Pattern("Month d, yyyy", rf"\b{MONTHS}\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+\d{{4}}\b", self.BASE_SCORE),
            Pattern("d Month yyyy", rf"\b\d{{1,2}}(?:st|nd|rd|th)?\.?\s+(?:of\s+|de\s+)?{MONTHS},?\s+(?:de\s+)?\d{{4}}\b",
                    self.BASE_SCORE),
        ]  # fmt: skip
        super().__init__(
            supported_entity=self.ENTITY,
            patterns=numeric + worded,
            context=list(context) if context is not None else list(self.CONTEXT),
            supported_language=supported_language,
            name="DateOfBirthRecognizer",
        )


class AgeOver89Recognizer(PatternRecognizer):
    """Ages of 90 to 129 written as ages: ``92-year-old``, ``92 yo``, ``aged 94``, ``age: 97``."""

    ENTITY = "AGE_OVER_89"
    _AGE = r"(?:9\d|1[0-2]\d)"
    PATTERNS = (
        ("age before unit", rf"\b{_AGE}(?=\s?-?\s?(?:years?|yrs?|y)[\s-]*(?:old|o\b|/o\b|\.o\.)|\s?(?:yo|y/o|y\.o\.)\b)", 0.7),
        ("age after word", rf"(?<=\b(?:aged?|age:|alter|âge|edad|età|idade|ikä|ålder)\s{{1,2}}){_AGE}\b(?!\s?(?:%|mg|kg|ml|mm|cm))", 0.7),
        ("after 'pt is'", rf"(?<=\b(?i:pt|patient|she|he|who)\s+(?:is|was|turned|turns)\s){_AGE}\b(?![.,]\d|\s?(?:%|mg|kg|/))", 0.6),
        ("in brackets after a name", rf"(?<=[A-Za-z]\s\(){_AGE}(?=\))", 0.45),
        ("number near an age word", rf"\b{_AGE}\b(?![.,]\d|\s?(?:%|mg|kg|ml|mm|cm|bpm|mmhg|/))", 0.05),
    )

    def __init__(self, supported_language: str = "en"):
        super().__init__(
            supported_entity=self.ENTITY,
            patterns=[Pattern(n, r, s) for n, r, s in self.PATTERNS],
            context=["age", "aged", "yo", "old", "years", "elderly", "nonagenarian", "centenarian"],
            supported_language=supported_language,
            name="AgeOver89Recognizer",
        )
