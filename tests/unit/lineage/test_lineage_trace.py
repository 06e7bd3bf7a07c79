"""dpsyn.lineage.trace: from a file, a row or a code to the release, by code, text mark or statistics."""

from __future__ import annotations

import sqlite3

import pandas as pd
import pytest
from lineage_helpers import BATCH, KEY, RUN, TS

from dpsyn.errors import InputError
from dpsyn.watermark import INVISIBLE_SEP, WM_COLUMN, WatermarkKey, apply_watermark, record_code

FORGER = WatermarkKey.from_secret(b"forger's own key, 32 bytes long!")


def test_a_published_file_traces_by_its_code(published, ledger):
    from dpsyn.lineage import trace_file

    path, rel = published
    t = trace_file(path, ledger=ledger, keys=[KEY])
    assert t.traced and t.method == "record_code" and t.statistical is None
    assert t.file_matches_release == rel.dataset.dataset_id
    (c,) = t.codes
    assert (c.status, c.where, c.rows) == ("verified", "_wm", 4000)
    r = c.lineage.release
    assert (r.model.run_id, r.batch.batch_id, r.privacy.epsilon) == (RUN, BATCH, pytest.approx(0.9731))
    assert "verified" in t.message


def test_one_row(published, ledger):
    from dpsyn.lineage import trace_file

    path, rel = published
    t = trace_file(path, 17, ledger=ledger, keys=[KEY])
    assert t.row == 17 and t.codes[0].rows == 1 and t.codes[0].lineage.release.code == rel.code
    with pytest.raises(InputError, match="out of range"):
        trace_file(path, 4000, ledger=ledger, keys=[KEY])


def test_a_forged_code_is_not_ours(published, ledger, marked_adult, tmp_path, adult_sample):
    from dpsyn.lineage import trace_file, verify_file

    forged = record_code(FORGER, batch_id=BATCH, run_id=RUN, timestamp=TS)  # right inputs, wrong key
    p = tmp_path / "forged.csv"
    apply_watermark(adult_sample, forged, key=FORGER).to_csv(p, index=False)  # unmarked rows, forged code
    t = trace_file(p, ledger=ledger, keys=[KEY])
    assert [c.status for c in t.codes] == ["not_ours"] and not t.traced
    assert "not ours" in t.message
    # our rows under a forged code: the code is still not ours, the statistics say the data is
    p2 = tmp_path / "relabelled.csv"
    apply_watermark(marked_adult, forged, key=FORGER).to_csv(p2, index=False)
    v = verify_file(p2, ledger=ledger, keys=[KEY])
    assert v.codes[0].status == "not_ours" and v.statistical["detected"] and v.statistical["key_id"] == KEY.key_id


def test_without_wm_the_text_mark_traces(published, ledger, tmp_path):
    from dpsyn.lineage import trace_file

    path, rel = published
    df = pd.read_csv(path).drop(columns=[WM_COLUMN]).head(50)
    df["note"] = [f"visit {i}" for i in range(len(df))]
    marked = apply_watermark(df, rel.code, key=KEY, text_columns=["note"]).drop(columns=[WM_COLUMN])
    assert marked["note"].str.contains(INVISIBLE_SEP).all()
    p = tmp_path / "notes.parquet"
    marked.to_parquet(p, index=False)
    t = trace_file(p, ledger=ledger, keys=[KEY])
    assert t.method == "text_mark" and t.codes[0].where == "text" and t.codes[0].status == "verified"
    assert t.file_matches_release is None and t.verdict == "records_verified" and t.codes[0].rows_verified == 50
    # the same mark pasted onto other notes: the code is ours, the content is not
    pasted = marked.assign(note=[f"other {i}{INVISIBLE_SEP}{m.rsplit(INVISIBLE_SEP, 1)[1]}"
                                 for i, m in enumerate(marked["note"])])
    pasted.to_parquet(p, index=False)
    t = trace_file(p, ledger=ledger, keys=[KEY])
    assert t.verdict == "copied" and t.codes[0].status == "content_mismatch" and t.codes[0].rows_verified == 0


def test_without_any_code_the_statistics_find_the_key(published, ledger, tmp_path):
    from dpsyn.lineage import trace_file

    path, rel = published
    frag = pd.read_csv(path).drop(columns=[WM_COLUMN]).sample(250, random_state=4)
    frag = frag.drop(columns=["fnlwgt", "workclass"])
    p = tmp_path / "fragment.csv"
    frag.to_csv(p, index=False)
    t = trace_file(p, ledger=ledger, keys=[FORGER, KEY])
    assert t.method == "statistical" and t.traced and not t.codes
    assert t.statistical["key_id"] == KEY.key_id and t.statistical["p_value"] < 1e-6
    assert t.schema_used == "adult"  # found through the ledger's recorded runs
    assert [c.release.code for c in t.candidates] == [rel.code]
    assert t.message.startswith(f"no per-record code; statistical watermark matched key {KEY.key_id}, p=")


def test_unmarked_data_traces_to_nothing(ledger, tmp_path, adult_sample, published):
    from dpsyn.lineage import verify_file

    p = tmp_path / "real.csv"
    adult_sample.to_csv(p, index=False)
    t = verify_file(p, ledger=ledger, keys=[KEY])
    assert not t.traced and t.method == "none" and not t.statistical["detected"]


def test_an_altered_ledger_entry_does_not_verify(published, ledger):
    from dpsyn.lineage import trace_code

    _, rel = published
    with sqlite3.connect(ledger.path) as db:
        db.execute("UPDATE codes SET timestamp = '2030-01-01' WHERE code = ?", (rel.code,))
    assert trace_code(rel.code, ledger=ledger, keys=[KEY]).status == "mismatch"


def test_code_statuses(published, ledger):
    from dpsyn.lineage import trace_code

    _, rel = published
    assert trace_code(rel.code, ledger=ledger, keys=[]).status == "recorded"  # key not held here
    assert trace_code("not-a-code", ledger=ledger, keys=[KEY]).status == "malformed"
    assert trace_code("f" * 16, ledger=ledger, keys=[KEY]).status == "not_ours"


def _write(p, data: bytes):
    p.write_bytes(data)
    return p


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda d: d / "missing.csv", "not found"),
        (lambda d: d, "folder"),
        (lambda d: _write(d / "e.csv", b""), "empty"),
        (lambda d: _write(d / "l.csv", "a,b\nS\xe9cret,1\n".encode("latin-1")), "UTF-8"),
        (lambda d: _write(d / "x.parquet", b"not parquet"), "Parquet"),
    ],
    ids=["missing", "folder", "empty", "latin1", "bad-parquet"],
)
def test_bad_files_are_input_errors(tmp_path, ledger, make, match):
    from dpsyn.lineage import trace_file

    with pytest.raises(InputError, match=match) as info:
        trace_file(make(tmp_path), ledger=ledger, keys=[KEY])
    assert "cret" not in str(info.value)
