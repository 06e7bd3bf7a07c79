"""The same-row deny-list: values of a row's PII columns, searched for in that row's free text.

A row's name, e-mail, phone, SSN, national ID, MRN, card, address and identifier values are
replaced wherever they occur in the row's text (whole words, case-insensitive, any run of
whitespace for a space; digits also with up to three separators between them; a person's name
also by each part of 3+ letters). In pattern mode it is the main way names are caught. The
search uses substring look-ups on projections of the text, so no regex is compiled per row.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from dpsyn.schema import PIIClass

__all__ = ["DENY_LIST_CLASSES", "GENERIC_DENY_ENTITY", "Term", "deny_spans", "is_missing", "row_terms"]

# PII classes whose values, when they occur in the same row's free text, are replaced.
DENY_LIST_CLASSES: frozenset[PIIClass] = frozenset(
    {
        PIIClass.person,
        PIIClass.email,
        PIIClass.phone,
        PIIClass.ssn,
        PIIClass.national_id,
        PIIClass.medical_record,
        PIIClass.credit_card,
        PIIClass.address,
    }
)
_DIGIT_ENTITIES = frozenset({"PHONE_NUMBER", "US_SSN", "CREDIT_CARD", "NATIONAL_ID", "MEDICAL_RECORD_NUMBER"})
GENERIC_DENY_ENTITY = "PII"  # entity of deny-list terms given as plain strings
MIN_NAME_TOKEN = 3
MIN_TERM = 2
MIN_IDENTIFIER_TERM = 4
_NAME_STOPWORDS = frozenset({"the", "and", "mrs", "miss", "von", "van", "der", "den", "del", "iii", "phd"})


def _flex(value: str) -> str:
    """Escaped value with any whitespace run matching any whitespace run."""
    return r"\s+".join(re.escape(p) for p in value.split())


@dataclass(frozen=True)
class _Term:
    """One deny-list alternative: its regex source and a needle for a cheap pre-check."""

    entity: str
    source: str
    needle: str  # lower-cased words (or the digit string when ``digits``); "" = no pre-check
    digits: bool = False


def _needle(value: str) -> str:
    value = " ".join(value.split())
    # lower() only approximates re.IGNORECASE outside ASCII: no pre-check there (never skip a real match)
    return value.lower() if value.isascii() else ""


def _terms(entity: str, value: str) -> list[_Term]:
    """Deny-list alternatives for one value of one entity."""
    value = value.strip()
    minimum = MIN_IDENTIFIER_TERM if entity == "IDENTIFIER" else MIN_TERM
    if len(value) < minimum:
        return []
    out = [_Term(entity, _flex(value), _needle(value))]
    if entity == "PERSON":
        for tok in re.split(r"[^\w'’-]+", value):
            for part in {tok, *tok.split("-")}:
                part = part.strip("'’-")
                if len(part) >= MIN_NAME_TOKEN and part.casefold() not in _NAME_STOPWORDS:
                    out.append(_Term(entity, re.escape(part), _needle(part)))
    if entity in _DIGIT_ENTITIES or entity == "IDENTIFIER":
        digits = re.sub(r"\D", "", value)
        if len(digits) >= 7 and digits.isascii():
            forms = {digits}
            if entity == "PHONE_NUMBER" and len(digits) == 11 and digits.startswith("1"):
                forms.add(digits[1:])
            if entity == "PHONE_NUMBER" and len(digits) >= 10:
                forms.add(digits[-7:])  # the local part, written without the area code
            for d in sorted(forms):
                out.append(_Term(entity, r"(?<!\d)" + r"[\s\-.()/]{0,3}".join(d) + r"(?!\d)", d, digits=True))
    return out


def _row_terms(items: Sequence[str | tuple[str, str]] | None) -> list[_Term]:
    """The deny-list terms of one row, from plain strings or ``(entity, value)`` pairs."""
    out: list[_Term] = []
    for item in items or ():
        entity, value = (GENERIC_DENY_ENTITY, item) if isinstance(item, str) else item
        if not _is_missing(value):
            out.extend(_terms(entity, str(value)))
    return out


@functools.lru_cache(maxsize=4096)
def _compile_alternation(body: str) -> re.Pattern:
    return re.compile(rf"(?<!\w)(?:{body})(?!\w)", re.IGNORECASE)


_DIGIT_GAP = frozenset(" \t\n\r\f\v-.()/")
_ASCII_DIGITS = frozenset("0123456789")


def _is_word(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def _digit_projection(text: str) -> tuple[str, list[int]]:
    pos = [i for i, ch in enumerate(text) if ch in _ASCII_DIGITS]
    return "".join(text[i] for i in pos), pos


def _lower_projection(text: str) -> tuple[str, list[int]]:
    """``text`` lower-cased with whitespace runs collapsed to one space, and each char's original index."""
    chars: list[str] = []
    pos: list[int] = []
    prev_space = False
    for i, ch in enumerate(text):
        if ch.isspace():
            if not prev_space:
                chars.append(" ")
                pos.append(i)
            prev_space = True
            continue
        prev_space = False
        low = ch.lower()
        chars.append(low if len(low) == 1 else ch)
        pos.append(i)
    return "".join(chars), pos


def _bounded(text: str, start: int, end: int) -> bool:
    """No word character directly before ``start`` or at ``end`` (regex ``(?<!\\w)...(?!\\w)``)."""
    return (start == 0 or not _is_word(text[start - 1])) and (end >= len(text) or not _is_word(text[end]))


def _find_all(hay: str, needle: str):
    i = hay.find(needle)
    while i >= 0:
        yield i
        i = hay.find(needle, i + 1)


def _deny_spans(terms: list[_Term], text: str) -> list[tuple[int, int, str]]:
    """``(start, end, entity)`` of every occurrence of the row's deny-list terms in ``text``.

    Equivalent to matching each term's regex (whole words, case-insensitive,
    any whitespace run for a space; digits with up to three separators between
    them), but done with substring searches on projections of the text so that
    no regex is compiled per row. Terms without an ASCII needle fall back to
    their compiled regex.
    """
    if not terms:
        return []
    out: list[tuple[int, int, str]] = []
    digits: tuple[str, list[int]] | None = None
    low: tuple[str, list[int]] | None = None
    fallback: dict[str, set[str]] = {}
    for t in terms:
        if t.digits:
            if digits is None:
                digits = _digit_projection(text)
            proj, pos = digits
            n = len(t.needle)
            for p in _find_all(proj, t.needle):
                idx = pos[p : p + n]
                gaps_ok = all(
                    b - a - 1 <= 3 and all(text[k] in _DIGIT_GAP for k in range(a + 1, b))
                    for a, b in zip(idx, idx[1:], strict=False)
                )
                if gaps_ok and _bounded(text, idx[0], idx[-1] + 1):
                    out.append((idx[0], idx[-1] + 1, t.entity))
        elif t.needle:
            if low is None:
                low = _lower_projection(text)
            proj, pos = low
            n = len(t.needle)
            for p in _find_all(proj, t.needle):
                a, b = pos[p], pos[p + n - 1] + 1
                if _bounded(text, a, b):
                    out.append((a, b, t.entity))
        else:
            fallback.setdefault(t.entity, set()).add(t.source)
    for entity, alts in sorted(fallback.items()):
        pat = _compile_alternation("|".join(sorted(alts, key=lambda a: (-len(a), a))))
        out.extend((m.start(), m.end(), entity) for m in pat.finditer(text))
    return out


def _is_missing(value: Any) -> bool:
    if value is None:
        return True
    try:
        import pandas as pd

        res = pd.isna(value)
        return bool(res) if isinstance(res, bool) or getattr(res, "ndim", 1) == 0 else False
    except (TypeError, ValueError):
        return False


# -- core --------------------------------------------------------------------------------


# public names
Term = _Term
row_terms = _row_terms
deny_spans = _deny_spans
is_missing = _is_missing
