"""Public generalization hierarchies: a name-keyed registry of pure functions.

A hierarchy maps a column to a coarser version of itself (an age to its
10-year band, a postcode to its first digits, an ICD code to its category). It
is a fixed function of each value alone: it reads no statistic of the other
rows, so applying it costs no privacy budget. Anything a hierarchy cannot read
(a malformed code, a negative age, an unparseable date) becomes missing; it
never raises on data and never turns a malformed value into a new category.

Names are written in a schema's ``generalize`` field or a k-anonymity ladder.
Parametrized hierarchies take one argument after a colon::

    generalize: age_band_10           # 37 -> "[30-40)"
    generalize: "age_band:20"         # 37 -> "[20-40)"
    generalize: "postcode_prefix:3"   # "SW1A 1AA" -> "SW1"; "02139" -> "021"

:func:`get_hierarchy` fails closed: an unknown name raises
:class:`~dpsyn.errors.UnknownComponentError`, a bad or missing argument raises
:class:`~dpsyn.errors.ConfigError`; both list what is valid.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from dpsyn.errors import ConfigError, UnknownComponentError

__all__ = [
    "ICD9_CHAPTERS",
    "MAX_AGE",
    "Hierarchy",
    "HierarchyFactory",
    "age_band",
    "age_band_5",
    "age_band_10",
    "describe_hierarchies",
    "get_hierarchy",
    "icd9_category",
    "icd9_chapter",
    "icd10_category",
    "list_hierarchies",
    "month",
    "postcode_prefix",
    "register_hierarchy",
    "suppress",
    "year",
    "zip3",
]

Hierarchy = Callable[[pd.Series], pd.Series]
HierarchyFactory = Callable[[str], Hierarchy]  # argument text -> hierarchy; raises ValueError if bad

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


@dataclass(frozen=True)
class _Factory:
    make: HierarchyFactory
    arg: str  # how the argument is written in the usage line, e.g. "N"
    help: str  # what the argument means and its valid range


_HIERARCHIES: dict[str, Hierarchy] = {}
_FACTORIES: dict[str, _Factory] = {}


def register_hierarchy(
    name: str,
    fn: Hierarchy | HierarchyFactory,
    *,
    force: bool = False,
    parametrized: bool = False,
    arg: str = "ARG",
    arg_help: str = "",
) -> None:
    """Add a hierarchy to the registry.

    ``fn`` maps a Series to a Series of the same index. With ``parametrized``,
    ``fn`` is a factory instead: it takes the argument text (what follows the
    colon in ``name:arg``) and returns the hierarchy, raising ``ValueError``
    for a bad argument; ``arg``/``arg_help`` describe the argument in errors.
    """
    if not _NAME.match(name):
        raise ValueError(f"hierarchy name '{name}' must be lower-case letters, digits and underscores")
    if (name in _HIERARCHIES or name in _FACTORIES) and not force:
        raise ValueError(f"hierarchy '{name}' is already registered (pass force=True to replace it)")
    _HIERARCHIES.pop(name, None)
    _FACTORIES.pop(name, None)
    if parametrized:
        _FACTORIES[name] = _Factory(make=fn, arg=arg, help=arg_help)
    else:
        _HIERARCHIES[name] = fn


def list_hierarchies() -> list[str]:
    """Registered hierarchy names (parametrized ones without their argument)."""
    return sorted([*_HIERARCHIES, *_FACTORIES])


def describe_hierarchies() -> list[str]:
    """Usage of every registered hierarchy, e.g. ``age_band_10`` or ``postcode_prefix:N``."""
    return [f"{n}:{_FACTORIES[n].arg}" if n in _FACTORIES else n for n in list_hierarchies()]


def get_hierarchy(spec: str) -> Hierarchy:
    """The hierarchy that ``spec`` names: ``"name"`` or, for a parametrized one, ``"name:arg"``."""
    name, colon, arg = str(spec).partition(":")
    name, arg = name.strip(), arg.strip()
    if name in _FACTORIES:
        fac = _FACTORIES[name]
        usage = f"write '{name}:{fac.arg}'" + (f" ({fac.help})" if fac.help else "")
        if not arg:
            raise ConfigError(f"hierarchy '{name}' needs an argument: {usage}")
        try:
            return fac.make(arg)
        except ValueError as e:
            raise ConfigError(f"bad argument for hierarchy '{name}': {e}; {usage}") from None
    if name in _HIERARCHIES:
        if colon:
            raise ConfigError(f"hierarchy '{name}' takes no argument (write '{name}')")
        return _HIERARCHIES[name]
    raise UnknownComponentError(
        f"unknown generalization hierarchy '{name}'; choose one of: {', '.join(describe_hierarchies())}"
    )


# -- helpers ------------------------------------------------------------------------------


def _text(s: pd.Series) -> pd.Series:
    return s.astype("string")


def _int_arg(arg: str, *, low: int, high: int) -> int:
    if not re.fullmatch(r"\d{1,4}", arg):
        raise ValueError(f"expected a whole number from {low} to {high}")
    n = int(arg)
    if not low <= n <= high:
        raise ValueError(f"expected a whole number from {low} to {high}")
    return n


def _missing_like(s: pd.Series, dtype: str = "string") -> pd.Series:
    return pd.Series(pd.NA, index=s.index, dtype=dtype)


# -- ages ---------------------------------------------------------------------------------

MAX_AGE = 150  # ages outside [0, MAX_AGE) are implausible and become missing


def _age_bands(s: pd.Series, width: int) -> pd.Series:
    x = s if pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s) else _text(s).str.strip()
    x = pd.to_numeric(x, errors="coerce").astype("float64")
    ok = np.isfinite(x) & (x >= 0) & (x < MAX_AGE)
    lo = (np.floor(x.where(ok) / width) * width).astype("Int64")
    return ("[" + lo.astype("string") + "-" + (lo + width).astype("string") + ")").astype("string")


def age_band(width: int) -> Hierarchy:
    """Ages to ``width``-year bands written as the diabetes130 release does: 37 -> "[30-40)" for width 10.

    Accepts numbers or numeric text; anything else, negative ages and ages of
    ``MAX_AGE`` or more become missing.
    """
    if not isinstance(width, int) or isinstance(width, bool) or not 1 <= width <= MAX_AGE:
        raise ValueError(f"band width must be a whole number from 1 to {MAX_AGE}")

    def bands(s: pd.Series) -> pd.Series:
        return _age_bands(s, width)

    bands.__name__ = f"age_band_{width}"
    bands.__doc__ = f"Ages to {width}-year bands, e.g. 37 -> '[{37 // width * width}-{37 // width * width + width})'."
    return bands


age_band_5 = age_band(5)
age_band_10 = age_band(10)


# -- postcodes ----------------------------------------------------------------------------


def postcode_prefix(n: int) -> Hierarchy:
    """A postcode truncated to its first ``n`` letters or digits ("02139" -> "021", "SW1A 1AA" -> "SW1").

    The first ``n`` characters after leading spaces must all be letters or
    digits; otherwise (too short, punctuation) the value becomes missing.
    Postcodes must arrive as text: a numeric column has lost its leading
    zeros, so every value becomes missing rather than a wrong prefix.
    """
    if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= 9:
        raise ValueError("prefix length must be a whole number from 1 to 9")
    pattern = re.compile(rf"^\s*([A-Za-z0-9]{{{n}}})")

    def prefix(s: pd.Series) -> pd.Series:
        if pd.api.types.is_numeric_dtype(s):
            return _missing_like(s)
        return _text(s).str.extract(pattern, expand=False).str.upper().astype("string")

    prefix.__name__ = f"postcode_prefix_{n}"
    return prefix


_ZIP3 = re.compile(r"^\s*(\d{3})")


def zip3(s: pd.Series) -> pd.Series:
    """US ZIP code truncated to its first three digits (HIPAA Safe Harbor style); non-digits become missing."""
    if pd.api.types.is_numeric_dtype(s):
        return _missing_like(s)
    return _text(s).str.extract(_ZIP3, expand=False).astype("string")


# -- dates --------------------------------------------------------------------------------


def _dates(s: pd.Series) -> pd.Series:
    if pd.api.types.is_datetime64_any_dtype(s):
        return s
    return pd.to_datetime(_text(s).str.strip(), errors="coerce", format="mixed")


def year(s: pd.Series) -> pd.Series:
    """Dates to the first day of their year; unparseable dates become missing."""
    return _dates(s).dt.to_period("Y").dt.to_timestamp()


def month(s: pd.Series) -> pd.Series:
    """Dates to the first day of their month; unparseable dates become missing."""
    return _dates(s).dt.to_period("M").dt.to_timestamp()


# -- ICD-9-CM -----------------------------------------------------------------------------

# A whole ICD-9-CM code: 1-3 digits (the file may drop leading zeros: "8" is 008),
# V + 1-2 digits, or E + 1-3 digits, then an optional ".subcode" of up to two digits.
_ICD9 = re.compile(r"^\s*(?:(?P<num>\d{1,3})|(?P<v>[Vv]\d{1,2})|(?P<e>[Ee]\d{1,3}))(?:\.\d{0,2})?\s*$")

# ICD-9-CM tabular list: the 17 chapters of categories 001-999 and the two
# supplementary classifications (CDC/NCHS ICD-9-CM, public).
ICD9_CHAPTERS: tuple[tuple[int, int, str], ...] = (
    (1, 139, "001-139"),  # infectious and parasitic diseases
    (140, 239, "140-239"),  # neoplasms
    (240, 279, "240-279"),  # endocrine, nutritional and metabolic diseases, immunity disorders
    (280, 289, "280-289"),  # blood and blood-forming organs
    (290, 319, "290-319"),  # mental disorders
    (320, 389, "320-389"),  # nervous system and sense organs
    (390, 459, "390-459"),  # circulatory system
    (460, 519, "460-519"),  # respiratory system
    (520, 579, "520-579"),  # digestive system
    (580, 629, "580-629"),  # genitourinary system
    (630, 679, "630-679"),  # pregnancy, childbirth and the puerperium
    (680, 709, "680-709"),  # skin and subcutaneous tissue
    (710, 739, "710-739"),  # musculoskeletal system and connective tissue
    (740, 759, "740-759"),  # congenital anomalies
    (760, 779, "760-779"),  # conditions originating in the perinatal period
    (780, 799, "780-799"),  # symptoms, signs and ill-defined conditions
    (800, 999, "800-999"),  # injury and poisoning
)
ICD9_V_CHAPTER = "V01-V91"  # supplementary: factors influencing health status
ICD9_E_CHAPTER = "E000-E999"  # supplementary: external causes of injury and poisoning


def _icd9_parts(s: pd.Series) -> pd.DataFrame:
    return _text(s).str.extract(_ICD9)


def icd9_category(s: pd.Series) -> pd.Series:
    """ICD-9-CM code to its 3-character category: "250.83" -> "250", "V57.1" -> "V57", "E888.9" -> "E888".

    Codes are kept as written (no zero padding: "8" stays "8"); anything that
    is not a whole ICD-9-CM code becomes missing.
    """
    p = _icd9_parts(s)
    return p["num"].fillna(p["v"]).fillna(p["e"]).str.upper().astype("string")


def icd9_chapter(s: pd.Series) -> pd.Series:
    """ICD-9-CM code to its chapter, as a range label: "250.83" -> "240-279", "V57.1" -> "V01-V91".

    Category 000, V00 and V92+ do not exist and become missing, as does anything malformed.
    """
    p = _icd9_parts(s)
    num = pd.to_numeric(p["num"], errors="coerce").astype("float64").to_numpy()
    v = pd.to_numeric(p["v"].str[1:], errors="coerce").astype("float64").to_numpy()
    starts = np.array([lo for lo, _, _ in ICD9_CHAPTERS], dtype=float)
    labels = np.array([lab for _, _, lab in ICD9_CHAPTERS] + [None], dtype=object)
    with np.errstate(invalid="ignore"):
        in_range = (num >= 1) & (num <= 999)
        is_v = (v >= 1) & (v <= 91)
    idx = np.where(in_range, np.searchsorted(starts, np.nan_to_num(num), side="right") - 1, len(ICD9_CHAPTERS))
    out = labels[idx]
    out[is_v] = ICD9_V_CHAPTER
    out[p["e"].notna().to_numpy()] = ICD9_E_CHAPTER
    return pd.Series(out, index=s.index, dtype="string")


# -- ICD-10 -------------------------------------------------------------------------------

# A letter, a digit and a letter or digit (the category: "E11", "C7A"), then an optional
# subcode of up to four letters or digits, with or without the dot.
_ICD10 = re.compile(r"^\s*([A-Za-z]\d[0-9A-Za-z])(?:\.[0-9A-Za-z]{0,4}|[0-9A-Za-z]{1,4})?\s*$")


def icd10_category(s: pd.Series) -> pd.Series:
    """ICD-10 (WHO or -CM) code to its 3-character category: "E11.65" -> "E11", "c7a.00" -> "C7A"."""
    return _text(s).str.extract(_ICD10, expand=False).str.upper().astype("string")


# -- top of every ladder ------------------------------------------------------------------


def suppress(s: pd.Series) -> pd.Series:
    """Every value to missing (the top of a generalization ladder, Datafly's "*"); keeps the dtype."""
    return s.where(np.zeros(len(s), dtype=bool))


def _age_band_factory(arg: str) -> Hierarchy:
    return age_band(_int_arg(arg, low=1, high=MAX_AGE))


def _postcode_factory(arg: str) -> Hierarchy:
    return postcode_prefix(_int_arg(arg, low=1, high=9))


for _name, _fn in {
    "age_band_5": age_band_5,
    "age_band_10": age_band_10,
    "icd9_category": icd9_category,
    "icd9_chapter": icd9_chapter,
    "icd10_category": icd10_category,
    "month": month,
    "suppress": suppress,
    "year": year,
    "zip3": zip3,
}.items():
    register_hierarchy(_name, _fn)
register_hierarchy("age_band", _age_band_factory, parametrized=True, arg="W", arg_help=f"band width in years, 1-{MAX_AGE}")
register_hierarchy("postcode_prefix", _postcode_factory, parametrized=True, arg="N", arg_help="characters kept, 1-9")
