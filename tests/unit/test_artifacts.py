"""Prefect artifacts built by tasks/artifacts.py hold counts, never values."""

from __future__ import annotations


def test_scrub_report_rows_are_counts_only():
    from tasks.artifacts import publish_scrub_report, scrub_report_rows

    rep = {"mode": "ner", "model": "m", "rows": 10, "dropped_columns": ["ssn"],
           "counts": {"note": {"PERSON": 3, "EMAIL_ADDRESS": 1}},
           "columns": {"email": {"entity": "EMAIL_ADDRESS", "operator": "hash"}}}
    rows = scrub_report_rows(rep)
    assert {"column": "note", "entity": "EMAIL_ADDRESS", "count": 1, "action": "scrubbed in text"} in rows
    assert {"column": "email", "entity": "EMAIL_ADDRESS", "count": 10, "action": "hash"} in rows
    assert {"column": "ssn", "entity": "", "count": 10, "action": "dropped"} in rows
    assert publish_scrub_report(rep) is None  # outside a run: nothing to attach to
