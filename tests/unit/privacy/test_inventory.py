"""The release inventory: its classification rules, and docs/privacy.md's copy of it."""

from __future__ import annotations

from pathlib import Path

from dpsyn.privacy.inventory import classify, flatten_keys, markdown_table, unclassified

DOC = Path(__file__).resolve().parents[3] / "docs" / "privacy.md"


def test_docs_carry_the_inventory_table():
    text = DOC.read_text()
    table = text.split("<!-- inventory:start -->\n", 1)[1].split("\n<!-- inventory:end -->", 1)[0]
    assert table == markdown_table()


def test_flatten_keys_marks_lists_and_nesting():
    doc = {"a": 1, "b": {"c": [1, 2], "d": [{"e": 1}, {"e": 2, "f": None}]}, "g": [], "h": {}}
    assert flatten_keys(doc) == ["a", "b.c[]", "b.d[].e", "b.d[].f", "g", "h"]


def test_classification_rules():
    assert classify("output.validation_report", "checks[].value").kind == "dp"
    assert classify("mlflow.param", "privacy.epsilon").kind == "public"
    assert classify("mlflow.param", "privacy.noise_seed").kind == "private"  # listed first: flagged if logged
    assert classify("mlflow.metric", "rows_real") is None  # the exact count had a metric once: now unclassified
    assert classify("lineage.batch_digests", "content_digest").kind == "private"
    bad = unclassified([("mlflow.param", "privacy.noise_seed"), ("mlflow.metric", "ks.age"),
                        ("mlflow.metric", "pii_entities_scrubbed"), ("lineage.batch_digests", "input_digest")])
    # a private key in a published place, and an unknown key, fail; a private key in an owner-side ledger does not
    assert bad == [("mlflow.metric", "pii_entities_scrubbed"), ("mlflow.param", "privacy.noise_seed")]
