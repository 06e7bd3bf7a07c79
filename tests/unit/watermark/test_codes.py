"""dpsyn.watermark: keyed record codes, invisible text marks, key handling."""

from __future__ import annotations

import re
import stat

import pandas as pd
import pytest

from dpsyn.errors import ConfigError
from dpsyn.watermark import (
    INVISIBLE_SEP,
    KEY_ENV,
    WM_COLUMN,
    WatermarkKey,
    apply_watermark,
    encode_fields,
    is_code,
    load_key,
    record_code,
    text_codes,
    verify_code,
)

KEY_A = WatermarkKey.from_secret(bytes(range(32)))
KEY_B = WatermarkKey.from_secret(bytes(range(1, 33)))
IDS = {"batch_id": "batch-1", "run_id": "run-abc", "timestamp": "2024-05-01T12:00:00Z"}


# -- record codes ----------------------------------------------------------------------


def test_record_code_is_16_hex_and_deterministic():
    code = record_code(KEY_A, **IDS)
    assert re.fullmatch(r"[0-9a-f]{16}", code)
    assert record_code(KEY_A, **IDS) == code
    assert record_code(WatermarkKey.from_secret(bytes(range(32))), **IDS) == code


@pytest.mark.parametrize(
    ("key", "changes"),
    [
        (KEY_B, {}),
        (KEY_A, {"batch_id": "batch-2"}),
        (KEY_A, {"run_id": "run-abd"}),
        (KEY_A, {"timestamp": "2024-05-01T12:00:01Z"}),
        (KEY_A, {"batch_id": "batch-1run-abc", "run_id": ""}),  # fields are separated, not concatenated
    ],
    ids=["key", "batch", "run", "timestamp", "field-boundary"],
)
def test_record_code_changes_with_each_input(key, changes):
    assert record_code(key, **{**IDS, **changes}) != record_code(KEY_A, **IDS)


def test_verify_code():
    code = record_code(KEY_A, **IDS)
    assert verify_code(KEY_A, code, **IDS) is True
    assert verify_code(KEY_B, code, **IDS) is False
    assert verify_code(KEY_A, code, **{**IDS, "batch_id": "other"}) is False
    tampered = code[:-1] + ("0" if code[-1] != "0" else "1")
    assert verify_code(KEY_A, tampered, **IDS) is False
    assert verify_code(KEY_A, "", **IDS) is False


# -- apply_watermark ---------------------------------------------------------------------


def test_apply_watermark_marks_every_record_invisibly():
    df = pd.DataFrame(
        {
            "note": pd.Series(["Patient doing well.", "", None], dtype="string"),
            "summary": ["a", "b", "c"],
            "age": [30.0, 41.0, 57.0],
        }
    )
    before = df.copy(deep=True)
    code = record_code(KEY_A, **IDS)
    out = apply_watermark(df, code, key=KEY_A, text_columns=["note", "summary", "not_a_column"])

    pd.testing.assert_frame_equal(df, before)  # the input is not modified
    assert WM_COLUMN not in df.columns
    assert list(out.columns) == ["note", "summary", "age", WM_COLUMN]
    assert out[WM_COLUMN].str.fullmatch(code + "-[0-9a-f]{16}").all() and out[WM_COLUMN].nunique() == 3
    pd.testing.assert_series_equal(out["age"], df["age"])
    for col in ("note", "summary"):
        visible = [t.split(INVISIBLE_SEP)[0] for t in out[col]]
        assert visible == [("" if pd.isna(v) else v) for v in df[col]]
        assert all(t.endswith(INVISIBLE_SEP + m) for t, m in zip(out[col], out[WM_COLUMN], strict=True))
        assert all(t.count(INVISIBLE_SEP) == 1 for t in out[col])


def test_apply_watermark_without_text_columns_only_adds_wm():
    df = pd.DataFrame({"x": [1, 2]})
    out = apply_watermark(df, "0123456789abcdef", key=KEY_A)
    assert out["x"].tolist() == [1, 2]
    assert out[WM_COLUMN].str.startswith("0123456789abcdef-").all()


# -- keys ---------------------------------------------------------------------------------

ENV_HEX = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"


@pytest.mark.parametrize(
    ("raw", "secret"),
    [
        (ENV_HEX, bytes.fromhex(ENV_HEX)),
        ("correct horse battery staple", b"correct horse battery staple"),
    ],
    ids=["hex", "plain-text"],
)
def test_load_key_from_env(monkeypatch, tmp_path, raw, secret):
    monkeypatch.setenv(KEY_ENV, raw)
    key_file = tmp_path / "never.key"
    key = load_key(key_file=key_file)
    assert key.secret == secret
    assert key.key_id == WatermarkKey.from_secret(secret).key_id
    assert re.fullmatch(r"[0-9a-f]{8}", key.key_id)
    assert not key_file.exists()  # the env key wins; no file is created


@pytest.mark.parametrize("raw", ["too short", "0011223344556677"], ids=["text-9-bytes", "hex-8-bytes"])
def test_short_env_key_is_refused(monkeypatch, raw):
    monkeypatch.setenv(KEY_ENV, raw)
    with pytest.raises(ConfigError, match="at least 16 bytes") as info:
        load_key()
    assert raw not in str(info.value)


def test_key_file_is_created_once_with_mode_0600(monkeypatch, tmp_path):
    monkeypatch.delenv(KEY_ENV, raising=False)
    key_file = tmp_path / "keys" / "wm.key"
    k1 = load_key(key_file=key_file)
    assert key_file.is_file()
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert re.fullmatch(r"[0-9a-f]{64}", key_file.read_text().strip())
    assert k1.secret == bytes.fromhex(key_file.read_text().strip())
    k2 = load_key(key_file=key_file)
    assert k2.key_id == k1.key_id and k2.secret == k1.secret
    assert load_key(key_file=tmp_path / "other.key").key_id != k1.key_id  # a fresh random key


def test_default_key_file_lives_under_dpsyn_home(monkeypatch, tmp_path):
    monkeypatch.delenv(KEY_ENV, raising=False)
    monkeypatch.setenv("DPSYN_HOME", str(tmp_path))
    key = load_key()
    path = tmp_path / "keys" / "watermark.key"
    assert path.is_file()
    assert load_key().key_id == key.key_id


def test_missing_key_file_without_create(monkeypatch, tmp_path):
    monkeypatch.delenv(KEY_ENV, raising=False)
    key_file = tmp_path / "absent.key"
    with pytest.raises(ConfigError, match=KEY_ENV):
        load_key(key_file=key_file, create=False)
    assert not key_file.exists()


@pytest.mark.parametrize(
    ("content", "match"),
    [("zz-not-hex-SECRETISH", "not hex"), ("00112233", "at least 16 bytes"), ("", "at least 16 bytes")],
    ids=["not-hex", "short", "empty"],
)
def test_bad_key_file_raises_config_error(monkeypatch, tmp_path, content, match):
    monkeypatch.delenv(KEY_ENV, raising=False)
    key_file = tmp_path / "bad.key"
    key_file.write_text(content)
    with pytest.raises(ConfigError, match=match) as info:
        load_key(key_file=key_file)
    assert "SECRETISH" not in str(info.value)
    assert key_file.read_text() == content  # never overwritten


def test_repr_does_not_show_the_secret():
    secret = bytes.fromhex(ENV_HEX)
    key = WatermarkKey.from_secret(secret)
    for text in (repr(key), str(key), f"{key}", repr([key])):
        assert ENV_HEX not in text
        assert repr(secret) not in text
        assert key.key_id in text


@pytest.mark.parametrize("length", [0, 1, 15])
def test_short_secret_raises(length):
    with pytest.raises(ConfigError):
        WatermarkKey.from_secret(b"k" * length)


def test_sixteen_byte_secret_is_enough():
    assert WatermarkKey.from_secret(b"k" * 16).secret == b"k" * 16


# -- field encoding, code shape, text marks -------------------------------------------------


def test_record_code_fields_are_length_prefixed():
    """A separator inside a field cannot make two different triples share a code."""
    a = record_code(KEY_A, batch_id="x\x1fy", run_id="z", timestamp="t")
    b = record_code(KEY_A, batch_id="x", run_id="y\x1fz", timestamp="t")
    assert a != b
    assert encode_fields("x\x1fy", "z") != encode_fields("x", "y\x1fz")
    assert encode_fields("é") == (2).to_bytes(8, "big") + "é".encode()


@pytest.mark.parametrize(
    ("text", "ok"),
    [("0123456789abcdef", True), ("0123456789ABCDEF", False), ("0123456789abcde", False), (None, False), (7, False)],
)
def test_is_code(text, ok):
    assert is_code(text) is ok


def test_text_codes_reads_the_invisible_suffix():
    code = record_code(KEY_A, **IDS)
    df = apply_watermark(pd.DataFrame({"note": ["fine", None], "n": [1, 2]}), code, key=KEY_A, text_columns=["note"])
    marks = df[WM_COLUMN].tolist()
    df = df.drop(columns=[WM_COLUMN])
    df.loc[2] = ["no mark here", 3]
    assert text_codes(df).tolist()[:2] == marks
    assert pd.isna(text_codes(df).iloc[2])


def test_strip_text_codes_restores_the_visible_text():
    from dpsyn.watermark import strip_text_codes

    code = record_code(KEY_A, **IDS)
    raw = pd.DataFrame({"note": ["fine\u2063not-a-code", "ok"], "n": [1, 2]})
    full = apply_watermark(raw, code, key=KEY_A, text_columns=["note"])
    marked = full.drop(columns=[WM_COLUMN])
    out = strip_text_codes(marked)
    assert out["note"].tolist() == ["fine\u2063not-a-code", "ok"]  # only a trailing U+2063 + code goes
    assert out["n"].tolist() == [1, 2]
    assert text_codes(out).isna().all()
    assert text_codes(marked).tolist() == full[WM_COLUMN].tolist()  # the input is not modified
