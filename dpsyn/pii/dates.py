"""Reading the year or the whole date out of a detected date, for the ``year`` and ``shift`` operators."""

from __future__ import annotations

import re
from datetime import date

__all__ = ["parse_date", "year_of"]

_MONTHS = {m: i for i, names in enumerate((
    ("jan", "january", "januar", "janvier", "enero", "gennaio", "janeiro", "januari"),
    ("feb", "february", "februar", "février", "febrero", "febbraio", "fevereiro", "februari"),
    ("mar", "march", "märz", "mars", "marzo", "março", "maart"),
    ("apr", "april", "avril", "abril", "aprile"),
    ("may", "mai", "mayo", "maggio", "maio", "mei"),
    ("jun", "june", "juni", "juin", "junio", "giugno", "junho"),
    ("jul", "july", "juli", "juillet", "julio", "luglio", "julho"),
    ("aug", "august", "août", "agosto", "augustus"),
    ("sep", "sept", "september", "septembre", "septiembre", "settembre", "setembro"),
    ("oct", "october", "oktober", "octobre", "octubre", "ottobre", "outubro"),
    ("nov", "november", "novembre", "noviembre", "novembro"),
    ("dec", "december", "dezember", "décembre", "diciembre", "dicembre", "dezembro"),
), start=1) for m in names}  # fmt: skip
_YEAR = re.compile(r"(?<!\d)(1[89]\d{2}|20\d{2})(?!\d)")


def year_of(text: str) -> str | None:
    """The four-digit year written in a date, or ``None``."""
    m = _YEAR.search(text)
    return m.group(1) if m else None


def _safe(y: int, m: int, d: int) -> date | None:
    try:
        return date(y, m, d)
    except ValueError:
        return None


def parse_date(text: str) -> date | None:
    """A full date read from ``text`` (numeric in any order, or with a month name), or ``None``."""
    t = text.strip().lower()
    m = re.search(r"(1[89]\d{2}|20\d{2})[./\-]?(\d{1,2})[./\-]?(\d{1,2})", t)
    if m and (t.startswith(m.group(1)) or len(m.group(0)) == 8):
        return _safe(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    m = re.search(r"(\d{1,2})([./\-])(\d{1,2})\2(\d{4}|\d{2})", t)
    if m:
        a, b, y = int(m.group(1)), int(m.group(3)), int(m.group(4))
        y += (2000 if y < 50 else 1900) if y < 100 else 0
        return (_safe(y, a, b) if m.group(2) == "/" and a <= 12 else None) or _safe(y, b, a)
    year = year_of(t)
    day = re.search(r"(?<!\d)(\d{1,2})(?:st|nd|rd|th|er|º)?(?!\d)", t)
    month = next((i for w in re.findall(r"[^\W\d_]+", t) if (i := _MONTHS.get(w.rstrip("."))) is not None), None)
    if year and day and month:
        return _safe(int(year), month, int(day.group(1)))
    return None
