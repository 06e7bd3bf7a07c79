"""Configuration of PII scrubbing, and the catalog of entity names it knows.

Nothing here imports Presidio or spaCy: building a :class:`ScrubConfig` and
validating its entity and operator names is cheap.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from dpsyn.errors import InputError, UnknownComponentError
from dpsyn.schema import PIIClass

__all__ = [
    "DEFAULT_LOCALES",
    "DEFAULT_MRN_PATTERN",
    "DEFAULT_TEXT_ENTITIES",
    "LOCALE_ENTITIES",
    "NER_ENTITIES",
    "PATTERN_ENTITIES",
    "PII_CLASS_ENTITY",
    "SAFE_HARBOR",
    "ScrubConfig",
    "known_entities",
    "text_entities",
]

# Entities found in free text by pattern recognizers (work without a spaCy model).
PATTERN_ENTITIES: tuple[str, ...] = (
    "ACCOUNT_NUMBER",  # dpsyn.pii.recognizers.ids: after "account", "acct", "a/c", ...
    "AGE_OVER_89",  # dpsyn.pii.recognizers.dates: "92-year-old", "aged 94"
    "CN_RESIDENT_ID",  # dpsyn.pii.recognizers.ids: 18 characters, ISO 7064 MOD 11-2 check digit
    "CREDIT_CARD",  # Presidio's, and 12-19 digit Luhn-valid numbers of any issuer
    "CRYPTO",
    "DATE_OF_BIRTH",  # a date next to "DOB", "born", "date of birth"
    "DATE_TIME",  # Presidio's and dpsyn.pii.recognizers.dates (many formats and languages); NER too
    "DEVICE_ID",  # serial numbers, IMEI, after "S/N", "serial", "device", ...
    "EMAIL_ADDRESS",
    "HEALTH_PLAN_ID",  # member, beneficiary, policy, Medicare/NHS numbers after their label
    "IBAN_CODE",
    "ID_NUMBER",  # any other unique identifying number (Safe Harbor R)
    "IP_ADDRESS",
    "LICENSE_NUMBER",  # licence and certificate numbers after their label (DEA, NPI, DL#, ...)
    "MAC_ADDRESS",
    "MEDICAL_LICENSE",
    "MEDICAL_RECORD_NUMBER",
    "ORGANIZATION",  # hospitals, clinics, companies by their type word; NER too
    "PERSON",  # names by the words around them (titles, "my name is", lists); NER too
    "PHONE_NUMBER",  # US, CN, international and national formats of every configured locale
    "STREET_ADDRESS",  # dpsyn.pii.recognizers.places
    "UK_NHS",
    "URL",
    "US_BANK_NUMBER",
    "US_DRIVER_LICENSE",
    "US_ITIN",
    "US_PASSPORT",
    "US_SSN",
    "UUID",
    "VEHICLE_ID",  # VINs (check digit), plates after their label
    "ZIP_CODE",  # postcodes by shape and position
)
# Entities of Presidio's national-ID recognizers, by locale (ScrubConfig.locales).
LOCALE_ENTITIES: dict[str, tuple[str, ...]] = {
    "US": ("US_MBI", "US_NPI"), "GB": ("UK_NINO",), "FI": ("FI_PERSONAL_IDENTITY_CODE",), "SE": ("SE_PERSONNUMMER",),
    "PL": ("PL_PESEL",), "IT": ("IT_FISCAL_CODE",), "ES": ("ES_NIF", "ES_NIE"), "IN": ("IN_AADHAAR", "IN_PAN"),
    "AU": ("AU_TFN", "AU_MEDICARE"), "SG": ("SG_NRIC_FIN",), "CA": ("CA_SIN",), "DE": ("DE_TAX_ID", "DE_ID_CARD"),
}  # fmt: skip
# Entities only a spaCy NER model finds (mode "ner"); PERSON and ORGANIZATION also have patterns.
NER_ENTITIES: tuple[str, ...] = ("DATE_TIME", "LOCATION", "NRP", "ORGANIZATION", "PERSON")
# Regions whose phone formats, postcodes and national IDs are recognized by default.
DEFAULT_LOCALES: tuple[str, ...] = (
    "US", "CA", "GB", "IE", "AU", "NZ", "IN", "DE", "AT", "CH", "FR", "BE", "NL", "LU", "IT", "ES", "PT", "BR", "MX",
    "AR", "CL", "CO", "FI", "SE", "NO", "DK", "IS", "PL", "CZ", "SK", "HU", "RO", "GR", "TR", "IL", "ZA", "SG", "HK",
    "JP", "KR", "CN", "PH", "NG",
)  # fmt: skip

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

# The 18 identifier classes of HIPAA Safe Harbor (45 CFR 164.514(b)(2)(i)) and the entities
# dpsyn finds them as in free text (docs/pii.md has the table with the operators).
SAFE_HARBOR: dict[str, tuple[str, ...]] = {
    "A names": ("PERSON",),
    "B geographic subdivisions smaller than a state": ("STREET_ADDRESS", "LOCATION", "ZIP_CODE"),
    "C dates (except year) and ages over 89": ("DATE_TIME", "DATE_OF_BIRTH", "AGE_OVER_89"),
    "D telephone numbers": ("PHONE_NUMBER",),
    "E fax numbers": ("PHONE_NUMBER",),
    "F e-mail addresses": ("EMAIL_ADDRESS",),
    "G social security numbers": ("US_SSN", "CN_RESIDENT_ID"),
    "H medical record numbers": ("MEDICAL_RECORD_NUMBER",),
    "I health plan beneficiary numbers": ("HEALTH_PLAN_ID", "UK_NHS"),
    "J account numbers": ("ACCOUNT_NUMBER", "CREDIT_CARD", "IBAN_CODE", "US_BANK_NUMBER"),
    "K certificate/license numbers": ("LICENSE_NUMBER", "US_DRIVER_LICENSE", "MEDICAL_LICENSE"),
    "L vehicle identifiers and serial numbers, including license plates": ("VEHICLE_ID",),
    "M device identifiers and serial numbers": ("DEVICE_ID", "MAC_ADDRESS", "UUID"),
    "N web URLs": ("URL",),
    "O IP addresses": ("IP_ADDRESS",),
    "P biometric identifiers": (),
    "Q full-face photographs and comparable images": (),
    "R any other unique identifying number, characteristic, or code": ("ID_NUMBER", "US_PASSPORT", "US_ITIN", "CRYPTO"),
}

# The default set of entities looked for in free text: every entity dpsyn knows. Dates are
# included (Safe Harbor class C); ``operators: {DATE_TIME: year}`` keeps their year, ``shift``
# moves them by a keyed offset (docs/pii.md). PERSON, LOCATION, ORGANIZATION, NRP and some
# DATE_TIME need NER (mode "ner"); in pattern mode names are caught only by the words around
# them and the same-row deny-list.
DEFAULT_TEXT_ENTITIES: tuple[str, ...] = tuple(
    sorted(set(PATTERN_ENTITIES) | set(NER_ENTITIES) | {e for v in LOCALE_ENTITIES.values() for e in v})
)

DEFAULT_MRN_PATTERN = r"\bMRN[:#\s]*\d{6,10}\b"

Mode = Literal["auto", "ner", "pattern"]


def text_entities() -> list[str]:
    """Every entity name that can be looked for in free text (a registry YAML can add more)."""
    return sorted(set(DEFAULT_TEXT_ENTITIES))


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
    locales: list[str] = Field(default_factory=lambda: list(DEFAULT_LOCALES))
    recognizer_registry: str | dict[str, Any] | None = None

    @field_validator("locales")
    @classmethod
    def _check_locales(cls, v: list[str]) -> list[str]:
        bad = [c for c in v if not (len(c) == 2 and c.isalpha() and c.isascii())]
        if bad:
            raise ValueError(f"locales are ISO 3166 two-letter country codes such as US, GB, DE (got {', '.join(bad)})")
        return [c.upper() for c in v]

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
        from dpsyn.pii.registry import registry_entities

        extra = registry_entities(self.recognizer_registry)
        valid_text = sorted(set(text_entities()) | extra)
        bad = sorted({e for e in (self.entities or []) if e not in valid_text})
        if bad:
            raise UnknownComponentError(
                f"unknown PII entity name(s) {', '.join(bad)} in 'entities'; valid: {', '.join(valid_text)}"
            )
        if self.entities is not None and not self.entities:
            raise InputError(
                "'entities' is empty: give at least one entity name, or leave it unset for the default set"
            )
        valid_all = sorted(set(known_entities()) | extra)
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
        """The entities to look for in free text: ``entities``, or every known one and the registry's."""
        if self.entities is not None:
            return list(self.entities)
        from dpsyn.pii.registry import registry_entities

        return sorted(set(DEFAULT_TEXT_ENTITIES) | registry_entities(self.recognizer_registry))

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
