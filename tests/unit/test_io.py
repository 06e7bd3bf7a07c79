"""dpsyn.io: reading as the schema declares, clean errors without values, atomic writes."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import pytest

from dpsyn.errors import InputError, OutputExistsError, SchemaError
from dpsyn.io import frame_sha256, read_table, staged_dir, write_table
from dpsyn.schema import ColumnKind, parse_schema

SECRET = "ZZ_SECRET_VALUE"

# Three Adult rows as adult.data writes them (", " separated, no header).
ADULT_ROWS = [
    "20, Private, 266015, Some-college, 10, Never-married, Sales, Own-child, Black, Male, 0, 0, 44, United-States, <=50K",
    "22, State-gov, 311512, Some-college, 10, Married-civ-spouse, Other-service, Husband, Black, Male, 0, 0, 15, "
    "United-States, <=50K",
    "57, Federal-gov, 337895, Bachelors, 13, Married-civ-spouse, Prof-specialty, Husband, Black, Male, 0, 0, 40, "
    "United-States, >50K",
]

TINY_YAML = """
schema_version: 1
name: tiny
read: {header: true}
columns:
  - {name: age, kind: numeric, bounds: [0, 120]}
  - {name: color, kind: categorical, domain: [red, blue]}
  - {name: note, kind: text}
"""


@pytest.fixture(scope="module")
def tiny_schema():
    return parse_schema(TINY_YAML)


def _adult_with(col_index: int, value: str, *, row: int = 1) -> str:
    """ADULT_ROWS with one cell replaced (0-based column index), as file text."""
    rows = [r.split(", ") for r in ADULT_ROWS]
    rows[row][col_index] = value
    return "\n".join(", ".join(r) for r in rows) + "\n"


def _cell_values(content: bytes, *, header: bool) -> set[str]:
    """Distinctive cell values of a file (length >= 5), to check none leaks into a message."""
    lines = content.decode("utf-8", errors="replace").splitlines()[int(header) :]
    cells = {c.strip() for line in lines for c in line.split(",")}
    return {c for c in cells if len(c) >= 5}


# -- the shipped sample ------------------------------------------------------------------


def test_read_shipped_sample_shape_and_dtypes(adult_sample, adult_schema):
    df = adult_sample
    assert df.shape == (4000, 15)
    assert list(df.columns) == adult_schema.column_names
    for col in adult_schema.columns:
        dtype = df[col.name].dtype
        if col.kind == ColumnKind.numeric:
            assert dtype == "float64", col.name
        else:
            assert isinstance(dtype, pd.StringDtype), col.name
    # "?" is the Adult missing marker: it becomes NA, never the literal string.
    assert not (df["workclass"] == "?").any()
    assert df["workclass"].isna().any()
    assert set(df["income"].dropna()) <= {"<=50K", ">50K"}
    assert df["age"].between(17, 90).all()


def test_reading_does_not_touch_the_file(adult_sample_path, adult_schema):
    before = (adult_sample_path.read_bytes(), adult_sample_path.stat().st_mtime_ns)
    read_table(adult_sample_path, adult_schema)
    assert (adult_sample_path.read_bytes(), adult_sample_path.stat().st_mtime_ns) == before


def test_adult_test_style_comment_line_and_label_suffix(tmp_path, adult_schema):
    rows = [r.replace("<=50K", "<=50K.").replace(">50K", ">50K.") for r in ADULT_ROWS]
    rows[0] = rows[0].replace("Private", "?")
    p = tmp_path / "adult.test"
    p.write_text("|1x3 Cross validator\n" + "\n".join(rows) + "\n", encoding="utf-8")
    df = read_table(p, adult_schema)
    assert len(df) == 3
    assert df["income"].tolist() == ["<=50K", "<=50K", ">50K"]
    assert df["age"].tolist() == [20.0, 22.0, 57.0]
    assert pd.isna(df.loc[0, "workclass"])
    assert df.loc[1, "workclass"] == "State-gov"


def test_header_schema_reads_columns_by_name(tmp_path, tiny_schema):
    p = tmp_path / "ok.csv"
    p.write_text("note,color,age\nhello,red,41\n,blue,7\n", encoding="utf-8")
    df = read_table(p, tiny_schema)
    assert list(df.columns) == ["age", "color", "note"]
    assert df["age"].tolist() == [41.0, 7.0]
    assert df["color"].tolist() == ["red", "blue"]


# -- bad inputs: one clean line, no values, the file untouched --------------------------

BAD_CASES = [
    # id, schema, content (None: do not create; "DIR": a folder), error, substrings of the message
    ("missing-file", "adult", None, InputError, ["not found"]),
    ("folder", "adult", "DIR", InputError, ["folder"]),
    ("zero-bytes", "adult", b"", InputError, ["empty"]),
    ("whitespace-only", "adult", b"  \n\t\n   \n", InputError, ["empty"]),
    ("header-only", "tiny", b"age,color,note\n", InputError, ["no data rows"]),
    (
        "wrong-field-count",
        "adult",
        ("\n".join([ADULT_ROWS[0], ADULT_ROWS[1], ADULT_ROWS[2].rsplit(", ", 1)[0]]) + "\n").encode(),
        SchemaError,
        ["line 3", "14 fields", "15 columns"],
    ),
    ("header-missing-column", "tiny", b"age,color\n41,red\n", SchemaError, ["missing note"]),
    (
        "header-extra-column",
        "tiny",
        b"age,color,note,extra_col\n41,red,hello,x\n",
        SchemaError,
        ["unexpected extra_col"],
    ),
    # A header:true schema on a headerless file: the first data row must not be echoed as "column names".
    ("no-header-line", "tiny", f"41,{SECRET},hello\n42,red,x\n".encode(), SchemaError, ["none of the column"]),
    (
        "not-utf8",
        "adult",
        _adult_with(13, "Caf\u00e9-Land", row=1).encode("latin-1"),
        InputError,
        ["UTF-8", "line 2"],
    ),
    (
        "outside-domain",
        "adult",
        _adult_with(13, SECRET, row=0).replace("United-States, >50K", f"{SECRET}, >50K").encode(),
        SchemaError,
        ["native-country", "value(s) outside"],
    ),
    ("non-numeric", "adult", _adult_with(0, SECRET).encode(), SchemaError, ["'age'", "non-numeric"]),
    ("missing-numeric", "adult", _adult_with(0, "?").encode(), SchemaError, ["'age'", "missing", "not nullable"]),
    (
        "missing-categorical",
        "adult",
        _adult_with(3, "?").encode(),
        SchemaError,
        ["'education'", "missing", "not nullable"],
    ),
]


@pytest.mark.parametrize(
    ("schema_name", "content", "error", "expected"),
    [c[1:] for c in BAD_CASES],
    ids=[c[0] for c in BAD_CASES],
)
def test_bad_input_raises_clean_error(tmp_path, adult_schema, tiny_schema, schema_name, content, error, expected):
    schema = adult_schema if schema_name == "adult" else tiny_schema
    p = tmp_path / "input.data"
    if content == "DIR":
        p.mkdir()
    elif content is not None:
        p.write_bytes(content)
    before = (p.read_bytes(), p.stat().st_mtime_ns) if p.is_file() else None

    with pytest.raises(error) as info:
        read_table(p, schema)

    msg = str(info.value)
    assert isinstance(info.value, InputError)
    assert "\n" not in msg
    for part in expected:
        assert part in msg
    assert SECRET not in msg
    if isinstance(content, bytes):
        cells = _cell_values(content, header=content.startswith(b"age,color"))  # a real header line
        leaked = {v for v in cells if v in msg}
        assert not leaked
        assert "\u00e9" not in msg
    if before is not None:
        assert (p.read_bytes(), p.stat().st_mtime_ns) == before


def test_several_problems_are_reported_together(tmp_path, adult_schema):
    text = _adult_with(0, "x1", row=0)
    text = "\n".join(
        [text.splitlines()[0], ADULT_ROWS[1].replace("Black", SECRET), ADULT_ROWS[2].replace("Bachelors", "?")]
    )
    p = tmp_path / "multi.data"
    p.write_text(text + "\n", encoding="utf-8")
    with pytest.raises(SchemaError) as info:
        read_table(p, adult_schema)
    msg = str(info.value)
    assert "'age'" in msg and "'race'" in msg and "'education'" in msg
    assert SECRET not in msg and "x1" not in msg


# -- staged_dir: all or nothing ----------------------------------------------------------


def _siblings(parent: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir())


def test_staged_dir_publishes_on_success(tmp_path):
    dest = tmp_path / "out"
    with staged_dir(dest) as stage:
        (stage / "a.csv").write_text("x\n1\n")
        (stage / "sub").mkdir()
        (stage / "sub" / "b.txt").write_text("b")
        assert not dest.exists()  # nothing visible until the block ends
        assert stage.parent == dest.parent
    assert (dest / "a.csv").read_text() == "x\n1\n"
    assert (dest / "sub" / "b.txt").read_text() == "b"
    assert _siblings(tmp_path) == ["out"]


def test_staged_dir_leaves_nothing_on_exception(tmp_path):
    dest = tmp_path / "out"
    with pytest.raises(RuntimeError, match="boom"), staged_dir(dest) as stage:
        (stage / "partial.csv").write_text("half")
        raise RuntimeError("boom")
    assert not dest.exists()
    assert _siblings(tmp_path) == []


def test_staged_dir_exception_keeps_existing_dest(tmp_path):
    dest = tmp_path / "out"
    dest.mkdir()
    (dest / "old.csv").write_text("old")
    with pytest.raises(RuntimeError), staged_dir(dest, overwrite=True) as stage:
        (stage / "new.csv").write_text("new")
        raise RuntimeError("boom")
    assert _siblings(dest) == ["old.csv"]
    assert _siblings(tmp_path) == ["out"]


def test_staged_dir_refuses_non_empty_dest(tmp_path):
    dest = tmp_path / "out"
    dest.mkdir()
    (dest / "old.csv").write_text("old")
    with pytest.raises(OutputExistsError, match="not empty"):
        with staged_dir(dest):
            pytest.fail("the block must not run")  # pragma: no cover
    assert (dest / "old.csv").read_text() == "old"
    assert _siblings(tmp_path) == ["out"]


def test_staged_dir_refuses_a_file_as_dest(tmp_path):
    dest = tmp_path / "out"
    dest.write_text("a file")
    with pytest.raises(OutputExistsError), staged_dir(dest, overwrite=True):
        pytest.fail("the block must not run")  # pragma: no cover
    assert dest.read_text() == "a file"


def test_staged_dir_overwrite_replaces(tmp_path):
    dest = tmp_path / "out"
    dest.mkdir()
    (dest / "old.csv").write_text("old")
    with staged_dir(dest, overwrite=True) as stage:
        (stage / "new.csv").write_text("new")
        assert (dest / "old.csv").exists()  # the old output stays until the new one is complete
    assert _siblings(dest) == ["new.csv"]
    assert _siblings(tmp_path) == ["out"]


def test_staged_dir_accepts_empty_existing_dest(tmp_path):
    dest = tmp_path / "out"
    dest.mkdir()
    with staged_dir(dest) as stage:
        (stage / "f").write_text("1")
    assert _siblings(dest) == ["f"]


# -- write_table: temp file + rename -----------------------------------------------------


@pytest.fixture
def small_frame():
    return pd.DataFrame({"a": [1.0, 2.5, None], "b": pd.Series(["x", "y", None], dtype="string")})


@pytest.mark.parametrize("name", ["out.csv", "out.parquet"])
def test_write_table_uses_temp_and_rename(tmp_path, monkeypatch, small_frame, name):
    target = tmp_path / name
    target.write_text("previous content")
    calls = []
    real_replace = os.replace

    def spy(src, dst):
        src, dst = Path(src), Path(dst)
        calls.append((src, dst))
        assert target.read_text() == "previous content"  # untouched until the rename
        assert src.exists() and src.stat().st_size > 0
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", spy)
    assert write_table(small_frame, target) == target
    assert len(calls) == 1
    src, dst = calls[0]
    assert dst == target
    assert src.parent == target.parent and src.name.startswith(".") and src != target
    back = pd.read_parquet(target) if name.endswith(".parquet") else pd.read_csv(target)
    assert back["a"].tolist()[:2] == [1.0, 2.5] and pd.isna(back["a"].iloc[2])
    assert back["b"].tolist()[:2] == ["x", "y"]
    assert _siblings(tmp_path) == [name]


def test_write_table_failure_keeps_old_file_and_no_temp(tmp_path, monkeypatch, small_frame):
    target = tmp_path / "out.csv"
    target.write_text("previous content")

    def failing_replace(src, dst):
        raise OSError("disk gone")

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(OSError, match="disk gone"):
        write_table(small_frame, target)
    assert target.read_text() == "previous content"
    assert _siblings(tmp_path) == ["out.csv"]


# -- frame_sha256 --------------------------------------------------------------------------


def test_frame_sha256_is_deterministic(small_frame):
    h = frame_sha256(small_frame)
    assert len(h) == 64 and int(h, 16) >= 0
    assert frame_sha256(small_frame) == h
    assert frame_sha256(small_frame.copy(deep=True)) == h
    assert frame_sha256(small_frame.set_axis([10, 11, 12])) == h  # the index is not content


@pytest.mark.parametrize(
    "change",
    [
        lambda d: d.assign(a=[1.0, 2.5000001, None]),
        lambda d: d.assign(b=pd.Series(["x", "Y", None], dtype="string")),
        lambda d: d.assign(b=pd.Series(["x", "y", ""], dtype="string")),
        lambda d: d.rename(columns={"a": "A"}),
        lambda d: d.iloc[::-1].reset_index(drop=True),
        lambda d: d[["b", "a"]],
        lambda d: d.astype({"b": object}),
    ],
    ids=["numeric-cell", "string-cell", "na-to-empty", "column-name", "row-order", "column-order", "dtype"],
)
def test_frame_sha256_changes_with_content(small_frame, change):
    assert frame_sha256(change(small_frame.copy())) != frame_sha256(small_frame)


def test_frame_sha256_of_shipped_sample_changes_with_one_cell(adult_sample):
    df = adult_sample.copy()
    h = frame_sha256(df)
    df.loc[1234, "age"] = df.loc[1234, "age"] + 1
    assert frame_sha256(df) != h


def test_write_parquet_stream_is_atomic(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from dpsyn.io import write_parquet_stream

    t = pa.table({"a": [1, 2, 3]})
    dest = tmp_path / "out.parquet"
    assert write_parquet_stream([t, t.slice(0, 0), t], dest, row_group_rows=2) == 6
    assert pq.read_table(dest).column("a").to_pylist() == [1, 2, 3, 1, 2, 3]

    def failing():
        yield t
        raise RuntimeError("boom")

    broken = tmp_path / "broken.parquet"
    with pytest.raises(RuntimeError):
        write_parquet_stream(failing(), broken)
    assert list(tmp_path.iterdir()) == [dest]  # no partial file, no temporary left behind
    with pytest.raises(ValueError):
        write_parquet_stream([], broken)
