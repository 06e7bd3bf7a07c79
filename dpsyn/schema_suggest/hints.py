"""What the schema draft guesses from: header words, and light patterns over sampled values (with check digits).

Constants and pure functions only; nothing here reads a file.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from dpsyn.schema import PIIClass

DEFAULT_ROWS = 200
MAX_ROWS = 100_000
_PARQUET = (".parquet", ".pq")

# Cells read as missing when guessing (a fixed list of common markers, never taken from the data).
NA_MARKERS = ("", "?", "NA", "N/A", "n/a", "NaN", "nan", "NULL", "null", "-")
_SHOWN_MARKERS = ("?", "NA", "N/A", "n/a", "NULL", "null", "-")  # suggested as read.na_values when seen

MATCH_SHARE = 0.8  # share of non-missing sampled values that must match a pattern
NUMERIC_SHARE = 0.95
DISTINCT_SHARE = 0.9  # "nearly every value distinct"
MIN_FOR_DISTINCT = 20  # below this many sampled values, distinctness says nothing

# -- value patterns -----------------------------------------------------------------------

_EMAIL = re.compile(r"[A-Za-z0-9._%+'-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}")
_SSN = re.compile(r"(?!000|666|9\d\d)\d{3}-(?!00)\d{2}-(?!0000)\d{4}")
_PHONE = re.compile(
    r"(?:\+?1[\s.-]?)?(?:\(\d{3}\)\s?|\d{3}[\s.-])\d{3}[\s.-]\d{4}(?:\s*(?:x|ext\.?)\s*\d{1,5})?"  # NANP, separated
    r"|\+\d{1,3}[\s.-]?\d[\d\s.-]{6,14}\d"  # international, with +
    r"|1[3-9]\d{9}"  # CN mobile
)
_CARD = re.compile(r"\d(?:[ -]?\d){12,18}")
_IPV4 = re.compile(r"(?:(?:25[0-5]|2[0-4]\d|1?\d?\d)\.){3}(?:25[0-5]|2[0-4]\d|1?\d?\d)")
_CN_ID = re.compile(r"\d{17}[\dXx]")
_DATE = re.compile(
    r"\d{4}-\d{1,2}-\d{1,2}(?:[ T]\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?)?(?:Z|[+-]\d{2}:?\d{2})?"
    r"|\d{1,2}/\d{1,2}/\d{4}|\d{1,2}\.\d{1,2}\.\d{4}|\d{4}/\d{1,2}/\d{1,2}"
)
_ICD10 = re.compile(r"[A-Za-z]\d[0-9A-Za-z](?:\.?[0-9A-Za-z]{1,4})?")
_ICD9 = re.compile(r"(?:\d{1,3}|[Vv]\d{1,2}|[Ee]\d{1,3})(?:\.\d{1,2})?")


def _luhn(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def _is_card(v: str) -> bool:
    if not _CARD.fullmatch(v):
        return False
    digits = re.sub(r"\D", "", v)
    return 13 <= len(digits) <= 19 and _luhn(digits)


_CN_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)


def _is_cn_id(v: str) -> bool:  # ISO 7064 MOD 11-2 check digit
    if not _CN_ID.fullmatch(v):
        return False
    s = sum(int(c) * w for c, w in zip(v[:17], _CN_WEIGHTS, strict=True))
    return "10X98765432"[s % 11] == v[17].upper()


_VALUE_CHECKS: tuple[tuple[PIIClass, str, object], ...] = (
    (PIIClass.email, "email addresses", _EMAIL.fullmatch),
    (PIIClass.ssn, "US social security numbers", _SSN.fullmatch),
    (PIIClass.national_id, "resident ID numbers with a valid check digit", _is_cn_id),
    (PIIClass.credit_card, "card numbers with a valid Luhn check", _is_card),
    (PIIClass.ip_address, "IPv4 addresses", _IPV4.fullmatch),
    (PIIClass.phone, "phone numbers", _PHONE.fullmatch),
)
_INLINE = (_EMAIL, _SSN, re.compile(r"(?:\(\d{3}\)\s?|\b\d{3}[\s.-])\d{3}[\s.-]\d{4}\b"))  # identifiers inside text

# -- header hints -------------------------------------------------------------------------


def _snake(name: str) -> str:
    """``"Full Name"`` -> ``"full_name"``, ``"patientNbr"`` -> ``"patient_nbr"``."""
    return re.sub(r"[^a-z0-9]+", "_", re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()).strip("_")


def _words(name: str) -> tuple[set[str], str]:
    tokens = {t for t in _snake(name).split("_") if t}
    compact = re.sub(r"[^a-z0-9]", "", name.lower())
    return tokens, compact


def _hint(tokens: set[str], compact: str, *, words: Iterable[str] = (), parts: Iterable[str] = ()) -> str | None:
    for w in words:
        if w in tokens:
            return w
    for p in parts:
        if p in compact:
            return p
    return None


_PII_HINTS: tuple[tuple[PIIClass, dict], ...] = (
    (PIIClass.email, {"words": ("email", "mail"), "parts": ("email",)}),
    (PIIClass.ssn, {"words": ("ssn",), "parts": ("socialsecurity",)}),
    (PIIClass.ip_address, {"words": ("ip",), "parts": ("ipaddress", "ipaddr")}),
    (PIIClass.phone, {"words": ("phone", "tel", "telephone", "mobile", "cell", "fax"), "parts": ("phone",)}),
    (PIIClass.credit_card, {"words": ("pan",), "parts": ("creditcard", "cardnumber", "ccnum", "cardno")}),
    (PIIClass.date_of_birth, {"words": ("dob",), "parts": ("birthdate", "dateofbirth", "birthday")}),
    (PIIClass.medical_record, {
        "words": ("mrn",),
        "parts": ("medicalrecord", "patientid", "patientnbr", "patientnumber", "patientno", "encounterid", "chartnumber"),
    }),
    (PIIClass.national_id, {
        "words": ("nino", "nhs", "sin"),
        "parts": ("nationalid", "passport", "idcard", "idnumber", "citizenid", "residentid", "driverslicense", "licence"),
    }),
    (PIIClass.address, {"words": ("addr",), "parts": ("address", "street")}),
    (PIIClass.location, {"words": ("lat", "lon", "lng", "latitude", "longitude", "gps", "city", "town", "geo"), "parts": ()}),
)
_PERSON_NAME = re.compile(r"(?:full|first|last|given|family|middle|maiden|patient|person|sur|nick|user|contact)?_?name")
_COUNT_WORDS = {"number", "num", "n", "count", "cnt", "total"}  # "number_diagnoses" counts codes, it is not one
_ID_WORDS = ("id", "uuid", "guid", "nbr", "key", "identifier", "record")
_POSTCODE = {"words": ("zip", "zipcode", "postcode", "postal", "plz"), "parts": ("zipcode", "postcode", "postalcode")}
_DEMOGRAPHIC = {
    "words": ("age", "sex", "gender", "race", "ethnicity", "ethnic", "marital", "education", "occupation",
              "nationality", "country", "religion", "yob", "birthyear", "language"),
    "parts": ("maritalstatus", "nativecountry", "ethnic", "birthyear", "countryoforigin"),
}
_CLINICAL = {
    "words": ("dx", "lab", "labs", "test", "result", "results", "bmi", "bp", "cpt", "loinc", "snomed", "rx", "glu",
              "med", "meds", "diabetes"),
    "parts": ("diag", "icd", "drug", "dose", "dosage", "medication", "procedure", "treatment", "therapy", "prescri",
              "condition", "disease", "symptom", "a1c", "glucose", "insulin", "cholesterol", "pressure",
              "readmi", "admission", "admit", "discharge", "clinical", "pathology", "allergy", "vaccin", "surgery"),
}
_TEXT = {"words": ("note", "notes", "comment", "comments", "text", "narrative", "remarks", "summary", "memo"), "parts": ()}

_DIRECT = {PIIClass.person, PIIClass.email, PIIClass.phone, PIIClass.ssn, PIIClass.national_id,
           PIIClass.medical_record, PIIClass.credit_card, PIIClass.address, PIIClass.ip_address,
           PIIClass.date_of_birth}
