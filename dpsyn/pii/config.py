"""Configuration of PII scrubbing, and the catalog of entity names it knows.

Nothing here imports Presidio or spaCy: building a :class:`ScrubConfig` and
validating its entity and operator names is cheap.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from dpsyn.errors import InputError, UnknownComponentError
from dpsyn.schema import PIIClass

__all__ = [
    "DEFAULT_MRN_PATTERN",
    "DEFAULT_TEXT_ENTITIES",
    "NER_ENTITIES",
    "PATTERN_ENTITIES",
    "PII_CLASS_ENTITY",
    "ScrubConfig",
    "known_entities",
    "text_entities",
]

# Entities found in free text by pattern recognizers (work without a spaCy model).
PATTERN_ENTITIES: tuple[str, ...] = (
    "CN_RESIDENT_ID",  # dpsyn.pii.recognizers: 18 characters, ISO 7064 MOD 11-2 check digit
    "CREDIT_CARD",
    "DATE_OF_BIRTH",  # dpsyn.pii.recognizers: a date next to "DOB", "born", "date of birth"
    "DATE_TIME",
    "EMAIL_ADDRESS",
    "IBAN_CODE",
    "IP_ADDRESS",
    "MEDICAL_RECORD_NUMBER",  # dpsyn.pii.recognizers
    "PHONE_NUMBER",  # US, CN and +-prefixed international formats (dpsyn.pii.recognizers)
    "URL",
    "US_BANK_NUMBER",
    "US_DRIVER_LICENSE",
    "US_ITIN",
    "US_PASSPORT",
    "US_SSN",
)
# Entities only a spaCy NER model finds (mode "ner").
NER_ENTITIES: tuple[str, ...] = ("LOCATION", "NRP", "PERSON")

# Tags of structured columns that no text recognizer produces.
_STRUCTURED_ONLY: tuple[str, ...] = ("ADDRESS", "FREE_TEXT", "IDENTIFIER", "NATIONAL_ID")

# The entity (and tag) that stands for a schema PII class.
PII_CLASS_ENTITY: dict[PIIClass, str] = {
    PIIClass.person: "PERSON",
    PIIClass.email: "EMAIL_ADDRESS",
    PIIClass.phone: "PHONE_NUMBER",
    PIIClass.ssn: "US_SSN",
    PIIClass.national_id: "NATIONAL_ID",
    PIIClass.medical_record: "MEDICAL_RECORD_NUMBER",
    PIIClass.credit_card: "CREDIT_CARD",
    PIIClass.address: "ADDRESS",
    PIIClass.location: "LOCATION",
    PIIClass.date_of_birth: "DATE_OF_BIRTH",
    PIIClass.ip_address: "IP_ADDRESS",
    PIIClass.free_text: "FREE_TEXT",
    PIIClass.none: "IDENTIFIER",  # an identifier column without a finer class
}

# The default set of entities looked for in free text. DATE_TIME is left out on
# purpose: visit and event dates in notes are usually not identifying on their
# own and redacting them all destroys the text; dates of birth are caught by
# DATE_OF_BIRTH (a date with birth context nearby). Add "DATE_TIME" to
# ``entities`` to redact every date. PERSON and LOCATION need NER (mode "ner");
# in pattern mode names are caught only through the same-row deny-list.
DEFAULT_TEXT_ENTITIES: tuple[str, ...] = (
    "PERSON",
    "EMAIL_ADDRESS",
    "PHONE_NUMBER",
    "US_SSN",
    "CREDIT_CARD",
    "CN_RESIDENT_ID",
    "IP_ADDRESS",
    "IBAN_CODE",
    "US_PASSPORT",
    "US_DRIVER_LICENSE",
    "US_ITIN",
    "LOCATION",
    "MEDICAL_RECORD_NUMBER",
    "DATE_OF_BIRTH",
    "URL",
)

DEFAULT_MRN_PATTERN = r"\bMRN[:#\s]*\d{6,10}\b"

Mode = Literal["auto", "ner", "pattern"]


def text_entities() -> list[str]:
    """Every entity name that can be looked for in free text."""
    return sorted(set(PATTERN_ENTITIES) | set(NER_ENTITIES))


def known_entities() -> list[str]:
    """Every entity name an operator can be configured for."""
    return sorted(set(text_entities()) | set(_STRUCTURED_ONLY) | set(PII_CLASS_ENTITY.values()))


class ScrubConfig(BaseModel):
    """How free text and PII columns are scrubbed.

    ``mode``: ``"auto"`` uses a spaCy NER model when one is installed and the
    pattern recognizers otherwise; ``"ner"`` requires a model; ``"pattern"``
    never loads one. ``operators`` maps an entity to an operator name (see
    :data:`dpsyn.pii.operators.OPERATORS`); other entities get
    ``default_operator`` in free text.

    Structured (non-text) columns: ``column_operators`` maps a column name to
    an operator applied to the whole column; otherwise an entity listed in
    ``operators`` applies to columns of that entity; otherwise identifier
    columns and L1 PII columns are dropped and PII columns below L1 are kept
    (with a warning). Each structured column is also classified from its
    header and a sample of at most ``sample_size`` values; a column the schema
    declares ``pii: none`` whose sample looks like PII (more than
    ``detect_fraction`` of the values) fails the run with
    :class:`~dpsyn.errors.PIIResidualError` unless it is in ``allow_columns``.

    ``n_process``: worker processes for free text (0 = one per CPU, at most
    4); they are used only for at least ``parallel_min_texts`` texts, since
    each worker loads its own model (a few seconds).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    language: str = Field(default="en", min_length=2, max_length=8, pattern=r"^[a-z]{2,3}$")
    spacy_model: str | None = None
    mode: Mode = "auto"
    entities: list[str] | None = None
    operators: dict[str, str] = Field(default_factory=dict)
    default_operator: str = "replace"
    score_threshold: float = Field(default=0.4, ge=0.0, le=1.0)
    residual_check: bool = True
    batch_size: int = Field(default=256, ge=1, le=100_000)
    mrn_pattern: str = DEFAULT_MRN_PATTERN
    column_operators: dict[str, str] = Field(default_factory=dict)
    allow_columns: list[str] = Field(default_factory=list)
    sample_size: int = Field(default=200, ge=1, le=10_000)
    detect_fraction: float = Field(default=0.5, gt=0.0, le=1.0)
    n_process: int = Field(default=0, ge=0, le=64)
    parallel_min_texts: int = Field(default=20_000, ge=1)

    @field_validator("mrn_pattern")
    @classmethod
    def _check_mrn_pattern(cls, v: str) -> str:
        import re

        try:
            re.compile(v)
        except re.error as e:
            raise ValueError(f"mrn_pattern is not a valid regular expression ({e.msg})") from None
        return v

    def validate_names(self) -> None:
        """Fail closed on unknown entity or operator names (:class:`UnknownComponentError`)."""
        from dpsyn.pii.operators import OPERATORS

        valid_text = text_entities()
        bad = sorted({e for e in (self.entities or []) if e not in valid_text})
        if bad:
            raise UnknownComponentError(
                f"unknown PII entity name(s) {', '.join(bad)} in 'entities'; valid: {', '.join(valid_text)}"
            )
        if self.entities is not None and not self.entities:
            raise InputError(
                "'entities' is empty: give at least one entity name, or leave it unset for the default set"
            )
        valid_all = known_entities()
        bad = sorted({e for e in self.operators if e not in valid_all})
        if bad:
            raise UnknownComponentError(
                f"unknown PII entity name(s) {', '.join(bad)} in 'operators'; valid: {', '.join(valid_all)}"
            )
        names = sorted(OPERATORS)
        used = [*self.operators.values(), self.default_operator, *self.column_operators.values()]
        bad = sorted({o for o in used if o not in OPERATORS})
        if bad:
            raise UnknownComponentError(f"unknown PII operator(s) {', '.join(bad)}; valid: {', '.join(names)}")

    def text_entities(self) -> list[str]:
        """The entities to look for in free text (validated)."""
        return list(self.entities) if self.entities is not None else list(DEFAULT_TEXT_ENTITIES)

    def operator_for(self, entity: str) -> str:
        """The operator for a span of ``entity`` in free text."""
        return self.operators.get(entity, self.default_operator)

    def workers_for(self, n_texts: int) -> int:
        """How many processes to scrub ``n_texts`` texts with (1 = in this process)."""
        import os

        if n_texts < self.parallel_min_texts:
            return 1
        n = self.n_process or min(os.cpu_count() or 1, 4)
        return max(1, min(n, n_texts))
