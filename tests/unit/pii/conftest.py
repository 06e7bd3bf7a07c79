"""Shared fixtures for dpsyn.pii tests: one pattern-mode engine per session."""

from __future__ import annotations

import pandas as pd
import pytest

from dpsyn.schema import parse_schema

PATIENTS_SCHEMA = """
schema_version: 1
name: pii_test
columns:
  - {name: patient_id, kind: identifier, tier: L1}
  - {name: full_name, kind: identifier, pii: person, tier: L1}
  - {name: email, kind: identifier, pii: email, tier: L1}
  - {name: ssn, kind: identifier, pii: ssn, tier: L1}
  - {name: phone, kind: identifier, pii: phone, tier: L1}
  - {name: city, kind: categorical, pii: location, tier: L1, domain: [Springfield, Shelbyville]}
  - {name: age, kind: numeric, bounds: [0, 110], integer: true, tier: L3}
  - {name: sex, kind: categorical, domain: [F, M], tier: L3}
  - {name: note, kind: text, pii: free_text, tier: L2}
"""

# SSNs avoid the sample numbers Presidio rejects (078-05-1120, 123-45-6789).
ROWS = [
    {
        "patient_id": "P-100234",
        "full_name": "Marisol Quintero",
        "email": "marisol.q@example.org",
        "ssn": "234-56-7891",
        "phone": "415-555-0132",
        "city": "Springfield",
        "age": 54,
        "sex": "F",
        "note": "Marisol Quintero seen for follow-up. Quintero asks to be reached at marisol.q@example.org "
        "or 415-555-0132. SSN on file 234-56-7891.",
    },
    {
        "patient_id": "P-100235",
        "full_name": "Oskar Lindqvist",
        "email": "oskar.lindqvist@example.net",
        "ssn": "345-67-8912",
        "phone": "(212) 555-0199",
        "city": "Shelbyville",
        "age": 71,
        "sex": "M",
        "note": "Pt Oskar reports dizziness; daughter called from 212.555.0199. Lindqvist's BP 150/90.",
    },
    {
        "patient_id": "P-100236",
        "full_name": "Ana Ruiz",
        "email": "ana.ruiz@example.com",
        "ssn": "456-78-9123",
        "phone": "646-555-0147",
        "city": "Springfield",
        "age": 33,
        "sex": "F",
        "note": "Labs reviewed, HbA1c 7.2. Refill metformin 500 mg twice daily.",
    },
    {
        "patient_id": "P-100237",
        "full_name": "Tomasz Wojcik",
        "email": "t.wojcik@example.org",
        "ssn": "567-89-1234",
        "phone": "718-555-0163",
        "city": "Shelbyville",
        "age": 47,
        "sex": "M",
        "note": None,
    },
]


@pytest.fixture(scope="session")
def engine():
    from dpsyn.pii import ScrubConfig, build_engine

    return build_engine(ScrubConfig(mode="pattern"))


@pytest.fixture(scope="session")
def schema():
    return parse_schema(PATIENTS_SCHEMA)


@pytest.fixture()
def frame() -> pd.DataFrame:
    return pd.DataFrame(ROWS)


@pytest.fixture()
def sensitive_values() -> list[str]:
    """Every identifying value of the frame, including name parts."""
    out = []
    for r in ROWS:
        out += [r["patient_id"], r["full_name"], r["email"], r["ssn"], r["phone"], *r["full_name"].split()]
    return out
