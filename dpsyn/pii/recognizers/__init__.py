"""Recognizers registered into dpsyn's Presidio engine.

Importing this package imports Presidio (slow); :mod:`dpsyn.pii` only imports it when an
engine is built. :func:`default_recognizers` returns, for a language and a set of locales:

1. **Presidio's own default recognizers** for the language (cards, SSN, ITIN, passport,
   licence, bank numbers, NHS, crypto wallets, dates, e-mail, IBAN, IP, medical licence, MAC,
   UUID, URL), so dpsyn never finds less than Presidio does, except two that are replaced by
   equivalents: the e-mail recognizer by :class:`OfflineEmailRecognizer` (its domain check
   never touches the network) and the phone recognizer by :class:`NationalPhoneRecognizer`
   (every region of the configured locales instead of eight, without phonenumbers' matcher);
2. dpsyn's recognizers: US, CN and international phones (:mod:`.phones`); medical record,
   health-plan, account, licence, vehicle, device and other unique numbers, cards of every
   length, the CN resident ID (:mod:`.ids`); dates and times in many formats and languages,
   dates of birth, ages over 89 (:mod:`.dates`); street addresses and postcodes
   (:mod:`.places`); names and organizations by the words around them (:mod:`.names`);
3. national ID recognizers of Presidio for the configured locales (:data:`LOCALE_RECOGNIZERS`).

Each pattern recognizer is wrapped by :func:`skip_when_no_match` (exact: same results).
"""

from __future__ import annotations

from presidio_analyzer import EntityRecognizer
from presidio_analyzer import predefined_recognizers as pre

from dpsyn.pii.config import DEFAULT_LOCALES, DEFAULT_MRN_PATTERN
from dpsyn.pii.recognizers.base import FastContextEnhancer, OfflineEmailRecognizer, skip_when_no_match
from dpsyn.pii.recognizers.dates import AgeOver89Recognizer, DateOfBirthRecognizer, DateTimeRecognizer
from dpsyn.pii.recognizers.ids import (
    CardNumberRecognizer,
    CnResidentIdRecognizer,
    GroupedIbanRecognizer,
    ImeiRecognizer,
    MedicalRecordNumberRecognizer,
    UniqueNumberRecognizer,
    VinRecognizer,
    WebAddressRecognizer,
    cn_resident_id_check_char,
    labelled_recognizers,
)
from dpsyn.pii.recognizers.names import OrganizationRecognizer, PersonCueRecognizer
from dpsyn.pii.recognizers.phones import (
    CnPhoneRecognizer,
    IntlPhoneRecognizer,
    NationalPhoneRecognizer,
    UsPhoneRecognizer,
)
from dpsyn.pii.recognizers.places import (
    PostcodeRecognizer,
    StreetAddressRecognizer,
    SubdivisionRecognizer,
    postcode_label_recognizer,
)

__all__ = [
    "CnPhoneRecognizer",
    "CnResidentIdRecognizer",
    "DateOfBirthRecognizer",
    "DateTimeRecognizer",
    "FastContextEnhancer",
    "IntlPhoneRecognizer",
    "LOCALE_RECOGNIZERS",
    "MedicalRecordNumberRecognizer",
    "NationalPhoneRecognizer",
    "OfflineEmailRecognizer",
    "PRESIDIO_DEFAULTS",
    "UsPhoneRecognizer",
    "cn_resident_id_check_char",
    "default_recognizers",
    "skip_when_no_match",
]

# Presidio's default recognizers for English (conf/default_recognizers.yaml, enabled ones), in its
# order; tests/unit/pii/test_recognizers.py checks this list against Presidio's own loader.
PRESIDIO_DEFAULTS: tuple[str, ...] = (
    "CreditCardRecognizer", "UsBankRecognizer", "UsLicenseRecognizer", "UsItinRecognizer", "UsPassportRecognizer",
    "UsSsnRecognizer", "NhsRecognizer", "CryptoRecognizer", "DateRecognizer", "EmailRecognizer", "IbanRecognizer",
    "IpRecognizer", "MedicalLicenseRecognizer", "MacAddressRecognizer", "UuidRecognizer", "PhoneRecognizer",
    "UrlRecognizer",
)  # fmt: skip
# replaced by an equivalent that finds at least as much: Presidio class -> what dpsyn uses instead
REPLACED = {"EmailRecognizer": "OfflineEmailRecognizer", "PhoneRecognizer": "NationalPhoneRecognizer"}
# national identifiers of Presidio, by ISO 3166 country code (see config.LOCALE_ENTITIES)
LOCALE_RECOGNIZERS: dict[str, tuple[str, ...]] = {
    "US": ("UsMbiRecognizer", "UsNpiRecognizer"), "GB": ("UkNinoRecognizer",), "FI": ("FiPersonalIdentityCodeRecognizer",),
    "SE": ("SePersonnummerRecognizer",), "PL": ("PlPeselRecognizer",), "IT": ("ItFiscalCodeRecognizer",),
    "ES": ("EsNifRecognizer", "EsNieRecognizer"), "IN": ("InAadhaarRecognizer", "InPanRecognizer"),
    "AU": ("AuTfnRecognizer", "AuMedicareRecognizer"), "SG": ("SgFinRecognizer",), "CA": ("CaSinRecognizer",),
    "DE": ("DeTaxIdRecognizer", "DeIdCardRecognizer"),
}  # fmt: skip


def default_recognizers(language: str = "en", *, mrn_pattern: str = DEFAULT_MRN_PATTERN,
                        locales: tuple[str, ...] | list[str] = DEFAULT_LOCALES) -> list[EntityRecognizer]:  # fmt: skip
    """The recognizers of a dpsyn engine (the NER recognizer is added separately), with the shortcut."""
    return [skip_when_no_match(r) for r in _default_recognizers(language, mrn_pattern, locales)]


def _default_recognizers(language: str, mrn_pattern: str, locales=DEFAULT_LOCALES) -> list[EntityRecognizer]:
    lang = language
    out: list[EntityRecognizer] = []
    for name in PRESIDIO_DEFAULTS:
        if name == "EmailRecognizer":
            out.append(OfflineEmailRecognizer(supported_language=lang))
        elif name == "PhoneRecognizer":
            out.append(NationalPhoneRecognizer(tuple(locales), supported_language=lang))
        else:
            out.append(getattr(pre, name)(supported_language=lang))
    out += [
        UsPhoneRecognizer(supported_language=lang),
        CnPhoneRecognizer(supported_language=lang),
        IntlPhoneRecognizer(supported_language=lang),
        CardNumberRecognizer(supported_language=lang),
        GroupedIbanRecognizer(supported_language=lang),
        MedicalRecordNumberRecognizer(pattern=mrn_pattern, supported_language=lang),
        *labelled_recognizers(lang),
        VinRecognizer(supported_language=lang),
        ImeiRecognizer(supported_language=lang),
        UniqueNumberRecognizer(supported_language=lang),
        DateTimeRecognizer(supported_language=lang),
        DateOfBirthRecognizer(supported_language=lang),
        AgeOver89Recognizer(supported_language=lang),
        StreetAddressRecognizer(supported_language=lang),
        PostcodeRecognizer(supported_language=lang),
        postcode_label_recognizer(lang),
        SubdivisionRecognizer(supported_language=lang),
        WebAddressRecognizer(supported_language=lang),
        PersonCueRecognizer(supported_language=lang),
        OrganizationRecognizer(supported_language=lang),
    ]
    codes = {c.upper() for c in locales}
    if "CN" in codes:
        out.append(CnResidentIdRecognizer(supported_language=lang))
    for code in sorted(codes & set(LOCALE_RECOGNIZERS)):
        out += [getattr(pre, name)(supported_language=lang) for name in LOCALE_RECOGNIZERS[code]]
    return out
