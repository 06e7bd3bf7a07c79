"""The name-keyed registry of scrubbing operators.

An operator turns one detected PII value into its replacement:

``replace``
    an entity tag such as ``[PERSON]`` (the default);
``redact``
    the empty string (the span is removed);
``hash``
    the hex HMAC-SHA256 of the value, keyed by the secret in the environment
    variable ``DPSYN_PII_HMAC_KEY`` (at least 16 characters; required);
``pseudonym``
    a consistent token ``PERSON_<8 hex>`` (same value, same key -> same token),
    keyed by ``DPSYN_PII_HMAC_KEY`` when set, else by a random key drawn once per
    process (consistent within the process only);
``drop``
    for structured columns: the whole column is dropped. In free text a span
    cannot be "dropped" on its own, so it is removed as with ``redact``;
``year``
    for dates: only the year is kept (``March 14, 2021`` -> ``2021``), the Safe
    Harbor rule for dates; a date without a year becomes its tag;
``shift``
    for dates: the date moves by a number of days drawn from
    ``DPSYN_PII_HMAC_KEY`` (required; 1-365 days back, the same for every date of
    a run with that key, so intervals are kept) and is written as ``YYYY-MM-DD``;
    a date that cannot be read becomes its tag. Shifting is not Safe Harbor
    (it needs an expert determination).

``hash`` and ``pseudonym`` normalize the value first (case-folded, whitespace
collapsed), so ``"Jane  DOE"`` and ``"jane doe"`` map to the same output.
Neither the key nor any value is ever logged.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass

from dpsyn.errors import InputError, UnknownComponentError

__all__ = ["HMAC_KEY_ENV", "OPERATORS", "Operator", "get_operator", "tag"]

logger = logging.getLogger(__name__)

HMAC_KEY_ENV = "DPSYN_PII_HMAC_KEY"
MIN_KEY_CHARS = 16

_process_key: bytes | None = None
_key_lock = threading.Lock()


def tag(entity: str) -> str:
    """The tag that ``replace`` writes for an entity."""
    return f"[{entity}]"


def _normalize(value: str) -> bytes:
    return " ".join(str(value).split()).casefold().encode("utf-8")


def _env_key(required: bool) -> bytes | None:
    raw = os.environ.get(HMAC_KEY_ENV, "")
    if not raw:
        if required:
            raise InputError(
                f"PII operator 'hash' needs a secret key: set the environment variable {HMAC_KEY_ENV} "
                f"(at least {MIN_KEY_CHARS} characters, kept out of version control), or use 'pseudonym' or 'replace'"
            )
        return None
    if len(raw) < MIN_KEY_CHARS:
        raise InputError(
            f"the environment variable {HMAC_KEY_ENV} is too short for a hashing key: "
            f"use at least {MIN_KEY_CHARS} random characters"
        )
    return raw.encode("utf-8")


def _pseudonym_key() -> bytes:
    global _process_key
    key = _env_key(required=False)
    if key is not None:
        return key
    with _key_lock:
        if _process_key is None:
            _process_key = secrets.token_bytes(32)
            logger.info(
                "PII operator 'pseudonym': %s is not set, so pseudonyms are keyed by a random per-process key "
                "(consistent within this process only)",
                HMAC_KEY_ENV,
            )
        return _process_key


@dataclass(frozen=True)
class Operator:
    """An operator: ``bind(entity)`` returns the function applied to each value of that entity."""

    name: str
    drops_column: bool
    factory: Callable[[str], Callable[[str], str]]
    description: str

    def bind(self, entity: str) -> Callable[[str], str]:
        """Check prerequisites (e.g. the key) now, and return value -> replacement."""
        return self.factory(entity)


def _replace(entity: str) -> Callable[[str], str]:
    t = tag(entity)
    return lambda _value: t


def _redact(entity: str) -> Callable[[str], str]:
    return lambda _value: ""


def _keyed(key: bytes) -> Callable[[str], str]:
    """``value -> hex HMAC-SHA256`` (the keyed state is set up once and copied per value)."""
    base = hmac.new(key, digestmod=hashlib.sha256)

    def digest(value: str) -> str:
        h = base.copy()
        h.update(_normalize(value))
        return h.hexdigest()

    return digest


def _hash(entity: str) -> Callable[[str], str]:
    return _keyed(_env_key(required=True))


def _pseudonym(entity: str) -> Callable[[str], str]:
    digest = _keyed(_pseudonym_key())
    return lambda value: f"{entity}_{digest(value)[:8]}"


def _year(entity: str) -> Callable[[str], str]:
    from dpsyn.pii.dates import year_of

    t = tag(entity)
    return lambda value: year_of(value) or t


def _shift(entity: str) -> Callable[[str], str]:
    from dpsyn.pii.dates import parse_date

    key = _env_key(required=True)
    days = 1 + int(hmac.new(key, b"dpsyn-date-shift", hashlib.sha256).hexdigest(), 16) % 365
    t = tag(entity)

    def shift(value: str) -> str:
        d = parse_date(value)
        return t if d is None else (d - __import__("datetime").timedelta(days=days)).isoformat()

    return shift


OPERATORS: dict[str, Operator] = {
    "replace": Operator("replace", False, _replace, "an entity tag such as [PERSON]"),
    "redact": Operator("redact", False, _redact, "removes the value"),
    "hash": Operator("hash", False, _hash, f"HMAC-SHA256 keyed by ${HMAC_KEY_ENV}"),
    "pseudonym": Operator("pseudonym", False, _pseudonym, "a consistent token such as PERSON_1a2b3c4d"),
    "drop": Operator("drop", True, _redact, "drops a structured column (removes the span in free text)"),
    "year": Operator("year", False, _year, "keeps only the year of a date (Safe Harbor)"),
    "shift": Operator("shift", False, _shift, f"moves a date by a keyed offset (${HMAC_KEY_ENV})"),
}


def get_operator(name: str) -> Operator:
    try:
        return OPERATORS[name]
    except KeyError:
        raise UnknownComponentError(f"unknown PII operator '{name}'; valid: {', '.join(sorted(OPERATORS))}") from None
