"""Prefect artifacts built by tasks/artifacts.py hold DP statistics, never values or exact counts."""

from __future__ import annotations


def test_no_scrub_report_artifact():
    """Issue 19, finding 6: the scrub report (exact entity counts per column, rows read) was a Prefect artifact."""
    import tasks.artifacts as artifacts

    assert not hasattr(artifacts, "publish_scrub_report")


def test_validation_markdown_states_the_noisy_count():
    from dpsyn.validation import CheckResult, ValidationReport
    from tasks.artifacts import validation_markdown

    rep = ValidationReport(checks=[CheckResult(name="ks:age", column="age", statistic="ks", value=0.2, threshold=0.1,
                                               limit=0.15, passed=False)], n_real=1234, n_synthetic=1200)
    text = validation_markdown(rep)
    assert "FAILED" in text and "`ks:age`" in text and "noisy count" in text
