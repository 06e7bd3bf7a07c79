"""scrub_table: identifiers dropped, free text scrubbed, report holds counts only, fail closed."""

from __future__ import annotations

import json
import logging
import socket
from types import SimpleNamespace

import pandas as pd
import pytest

from dpsyn.errors import PIIResidualError, SchemaError
from dpsyn.pii import ScrubConfig, ScrubReport, build_engine, scrub_table
from dpsyn.schema import parse_schema

PATTERN = ScrubConfig(mode="pattern")


def test_identifiers_never_reach_the_output(engine, schema, frame, sensitive_values):
    out, report = scrub_table(frame, schema, PATTERN, engine=engine)
    csv = out.to_csv()
    leaked = [v for v in sensitive_values if v.lower() in csv.lower()]
    assert leaked == []
    # phone written differently in the note (dots) is caught too
    assert "555.0199" not in csv and "5550199" not in csv
    assert list(out.columns) == ["age", "sex", "note"]
    assert report.dropped_columns == ["patient_id", "full_name", "email", "ssn", "phone", "city"]
    assert report.scrubbed_columns == ["note"]
    assert report.mode == "pattern" and report.model is None and report.rows == 4


def test_text_is_tagged_and_clean_rows_untouched(engine, schema, frame):
    out, _ = scrub_table(frame, schema, PATTERN, engine=engine)
    first = out.loc[0, "note"]
    assert first.startswith("[PERSON] seen for follow-up. [PERSON] asks to be reached at [EMAIL_ADDRESS]")
    assert "[PHONE_NUMBER]" in first and "[US_SSN]" in first
    assert out.loc[1, "note"].startswith("Pt [PERSON] reports dizziness")
    assert out.loc[2, "note"] == frame.loc[2, "note"]  # no PII: unchanged
    assert pd.isna(out.loc[3, "note"])  # missing stays missing
    pd.testing.assert_series_equal(out["age"], frame["age"])
    pd.testing.assert_series_equal(out["sex"], frame["sex"])


def test_report_counts_and_no_values(engine, schema, frame, sensitive_values):
    _, report = scrub_table(frame, schema, PATTERN, engine=engine)
    note = report.counts["note"]
    assert note["PERSON"] == 4  # full name + surname in row 0, first name + surname in row 1
    assert note["EMAIL_ADDRESS"] == 1 and note["US_SSN"] == 1 and note["PHONE_NUMBER"] == 2
    assert report.counts["full_name"] == {"PERSON": 4}
    assert report.counts["patient_id"] == {"IDENTIFIER": 4}
    assert report.counts["city"] == {"LOCATION": 4}
    dumped = json.dumps(report.to_dict())
    assert not [v for v in sensitive_values if v.lower() in dumped.lower()]
    assert ScrubReport.model_validate(report.to_dict()) == report


def test_input_frame_is_not_modified(engine, schema, frame):
    before = frame.copy(deep=True)
    out, _ = scrub_table(frame, schema, PATTERN, engine=engine)
    assert out is not frame
    pd.testing.assert_frame_equal(frame, before)


def test_no_text_columns(engine):
    schema = parse_schema(
        """
name: no_text
columns:
  - {name: id, kind: identifier}
  - {name: grade, kind: categorical, domain: [a, b]}
"""
    )
    df = pd.DataFrame({"id": ["x1", "x2"], "grade": ["a", "b"]})
    out, report = scrub_table(df, schema, PATTERN, engine=engine)
    assert list(out.columns) == ["grade"] and report.scrubbed_columns == []


def test_non_l1_pii_column_is_kept_with_warning(engine, caplog):
    schema = parse_schema(
        """
name: kept
columns:
  - {name: doctor, kind: categorical, pii: person, tier: L2, domain: [Dr Alvarez, Dr Chen]}
  - {name: region, kind: categorical, pii: location, tier: L3, domain: [north, south]}
  - {name: note, kind: text}
"""
    )
    df = pd.DataFrame(
        {"doctor": ["Dr Alvarez", "Dr Chen"], "region": ["north", "south"], "note": ["Alvarez ok", "fine"]}
    )
    with caplog.at_level(logging.WARNING, logger="dpsyn.pii"):
        out, report = scrub_table(df, schema, PATTERN, engine=engine)
    assert report.kept_pii_columns == ["doctor", "region"]
    assert list(out["doctor"]) == ["Dr Alvarez", "Dr Chen"]
    assert out.loc[0, "note"] == "[PERSON] ok"  # the deny-list still covers the row's text
    assert any("doctor" in r.getMessage() for r in caplog.records)


def test_undeclared_column_fails_closed(engine, schema, frame):
    with pytest.raises(SchemaError, match="extra_col"):
        scrub_table(frame.assign(extra_col=1), schema, PATTERN, engine=engine)


def test_residual_check_fails_closed(engine, schema, frame, sensitive_values, monkeypatch):
    def do_nothing(text, analyzer_results, operators=None, **kw):
        return SimpleNamespace(text=text, items=[])

    monkeypatch.setattr(engine.anonymizer, "anonymize", do_nothing)
    with pytest.raises(PIIResidualError) as err:
        scrub_table(frame, schema, PATTERN, engine=engine)
    msg = str(err.value)
    assert "note" in msg and "EMAIL_ADDRESS" in msg and "PERSON (deny-list)" in msg
    assert not [v for v in sensitive_values if v.lower() in msg.lower()]
    # with the check off, the broken anonymizer goes unnoticed (which is why it is on by default)
    out, _ = scrub_table(frame, schema, PATTERN.model_copy(update={"residual_check": False}), engine=engine)
    assert "marisol.q@example.org" in out.loc[0, "note"]


def test_logs_hold_no_values(engine, schema, frame, sensitive_values, caplog):
    with caplog.at_level(logging.DEBUG):
        scrub_table(frame, schema, PATTERN, engine=engine)
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert not [v for v in sensitive_values if v.lower() in text.lower()]


def test_pseudonym_is_consistent_across_rows(engine, schema, frame, monkeypatch):
    monkeypatch.delenv("DPSYN_PII_HMAC_KEY", raising=False)
    frame.loc[2, "note"] = "Ana Ruiz called; Ana Ruiz will return."
    cfg = PATTERN.model_copy(update={"operators": {"PERSON": "pseudonym"}})
    out, _ = scrub_table(frame, schema, cfg, engine=engine)
    note = out.loc[2, "note"]
    tokens = [w.strip(";.") for w in note.split() if w.startswith("PERSON_")]
    assert len(tokens) == 2 and tokens[0] == tokens[1]
    assert "Ana" not in note and "Ruiz" not in note


def test_hash_operator_in_table(engine, schema, frame, monkeypatch):
    monkeypatch.setenv("DPSYN_PII_HMAC_KEY", "k" * 32)
    cfg = PATTERN.model_copy(update={"operators": {"EMAIL_ADDRESS": "hash"}})
    out, _ = scrub_table(frame, schema, cfg, engine=engine)
    assert "marisol.q@example.org" not in out.loc[0, "note"]
    assert any(len(w.strip(".,")) == 64 for w in out.loc[0, "note"].split())


def test_engine_builds_and_runs_without_network(monkeypatch):
    def refuse(*a, **k):
        raise OSError("network disabled in this test")

    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)
    # a distinct MRN pattern gives a fresh (uncached) engine
    cfg = ScrubConfig(mode="pattern", mrn_pattern=r"\bMRN-\d{7}\b", residual_check=True)
    eng = build_engine(cfg)
    from dpsyn.pii import scrub_texts

    out, counts = scrub_texts(["write to someone@example.co.uk, MRN-1234567"], engine=eng, config=cfg)
    assert out == ["write to [EMAIL_ADDRESS], [MEDICAL_RECORD_NUMBER]"]
    assert counts == {"EMAIL_ADDRESS": 1, "MEDICAL_RECORD_NUMBER": 1}
