"""scan_paths on each kind of file (pattern mode): locations, allow-list, caps, skips, fail closed."""

from __future__ import annotations

import json
import pickle

import pandas as pd
import pytest

from dpsyn.errors import InputError, UnknownComponentError
from dpsyn.pii.scan import ScanConfig, scan_paths

EMAIL = "kofi.mensah@example.org"
SSN = "234-56-7891"


def _scan(engine, *paths, **cfg):
    return scan_paths(list(paths), engine=engine, config=ScanConfig(**cfg))


def _locs(rep) -> set[tuple[str, str]]:
    return {(f.entity, f.location) for f in rep.findings}


def test_json_text_parquet_and_pickle_locations(engine, tmp_path):
    (tmp_path / "a.json").write_text(json.dumps({"run": {"owner": EMAIL, "tags": ["x", f"ssn {SSN}"]}, EMAIL: 1}))
    (tmp_path / "b.log").write_text(f"start\nssn {SSN} seen\n")
    (tmp_path / "c.jsonl").write_text(json.dumps({"msg": "ok"}) + "\n" + json.dumps({"msg": f"to {EMAIL}"}) + "\n")
    pd.DataFrame({"id": [1, 2], "contact": ["none", EMAIL], "full_name": ["Kofi Mensah", None]}).to_parquet(
        tmp_path / "d.parquet"
    )
    (tmp_path / "e.pkl").write_bytes(b"\x80\x04" + bytes(100) + pickle.dumps({"k": EMAIL}))
    rep = _scan(engine, tmp_path)
    got = {(f.file.rsplit("/", 1)[1], f.entity, f.location) for f in rep.findings}
    assert ("a.json", "EMAIL_ADDRESS", "$.run.owner") in got
    assert ("a.json", "US_SSN", "$.run.tags[1]") in got
    assert ("a.json", "EMAIL_ADDRESS", "$ (key)") in got
    assert ("b.log", "US_SSN", "line 2") in got
    assert ("c.jsonl", "EMAIL_ADDRESS", "line 2: $.msg") in got
    assert ("d.parquet", "EMAIL_ADDRESS", "row 2, column contact") in got
    assert ("d.parquet", "PERSON", "row 1, column full_name") in got  # name shape in a name column
    assert any(f == "e.pkl" and e == "EMAIL_ADDRESS" and loc.startswith("byte ") for f, e, loc in got)
    assert rep.total_findings == len(got) == 8
    dumped = json.dumps(rep.to_dict())
    assert EMAIL not in dumped and SSN not in dumped and "Mensah" not in dumped


ALLOW_CASES = [
    # (text, found with the default allow-list, found without it)
    ("run 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08 ok", 0, 0),
    ("started 2026-11-30T07:44:29.123456+00:00", 0, 0),
    ("metric 0.8734123456 and 0.2125550199", 0, 0),
    # a watermark mark (record code - row tag, both HMACs) whose tag came out all digits and Luhn-valid: the
    # demo's PII scan found such "credit cards" in the _wm column about one run in ten
    ("_wm a3f09c1d2e4b5a6c-4539578763621486", 0, 1),
    ("card 4539578763621486", 1, 1),
    (f"mail {EMAIL}", 1, 1),
    (f"SSN {SSN} on 2026-11-30T07:44:29Z", 1, 1),
]


@pytest.mark.parametrize(("text", "with_allow", "without"), ALLOW_CASES)
def test_allow_list(engine, tmp_path, text, with_allow, without):
    f = tmp_path / "t.txt"
    f.write_text(text)
    assert _scan(engine, f).total_findings == with_allow
    assert _scan(engine, f, allow_patterns=[]).total_findings == without


def test_allow_pattern_drops_only_contained_detections(engine, tmp_path):
    f = tmp_path / "t.txt"
    f.write_text(f"id ticket-{SSN}-x and ssn {SSN}")
    assert _scan(engine, f).total_findings == 2
    assert _scan(engine, f, allow_patterns=[r"ticket-\S+"]).total_findings == 1


def test_scrubber_tags_are_not_findings(engine, tmp_path):
    f = tmp_path / "notes.csv"
    f.write_text("note\n[PERSON] called from [PHONE_NUMBER]\n")
    assert _scan(engine, f).total_findings == 0


def test_caps_and_skips(engine, tmp_path):
    csv = tmp_path / "big.csv"
    csv.write_text("email\n" + "\n".join(f"u{i}@example.org" for i in range(30)))
    rep = _scan(engine, csv, max_rows=10, max_findings=4)
    assert rep.total_findings == 10 and len(rep.findings) == 4 and rep.counts == {"EMAIL_ADDRESS": 10}
    whats = [c["what"] for c in rep.capped]
    assert "only the first 10 rows searched" in whats and any("more than 4 findings" in w for w in whats)
    (tmp_path / "img.bin").write_bytes(b"\x00\x01" * 100)
    (tmp_path / "empty.txt").write_text("")
    rep = _scan(engine, tmp_path / "img.bin", tmp_path / "empty.txt")
    assert {s["reason"] for s in rep.skipped} == {"binary file", "empty"} and rep.files_scanned == []


def test_bad_input_fails_closed(engine, tmp_path):
    with pytest.raises(InputError, match="not found"):
        _scan(engine, tmp_path / "missing")
    with pytest.raises(UnknownComponentError, match="valid:"):
        _scan(engine, tmp_path, entities=["EMAIL", "PERSON"])
