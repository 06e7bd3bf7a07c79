"""dpsyn.watermark.keys: rotation (several keys, each with its id), never a secret in sight."""

from __future__ import annotations

import stat

import pytest

from dpsyn.errors import ConfigError
from dpsyn.watermark import KEY_ENV, KEYS_DIR_ENV, WatermarkKey, load_key, load_keys, new_key_file

HEX = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"


@pytest.fixture
def home(monkeypatch, tmp_path):
    monkeypatch.setenv("DPSYN_HOME", str(tmp_path / "home"))
    monkeypatch.delenv(KEY_ENV, raising=False)
    monkeypatch.delenv(KEYS_DIR_ENV, raising=False)
    return tmp_path / "home"


def test_load_keys_collects_env_archive_and_home_keys(home, monkeypatch, tmp_path):
    current = load_key()  # creates $DPSYN_HOME/keys/watermark.key
    archive = tmp_path / "archive"
    old = new_key_file(archive / "2023.key")
    (archive / "notes.txt").write_text("not a key")
    monkeypatch.setenv(KEYS_DIR_ENV, str(archive))
    monkeypatch.setenv(KEY_ENV, HEX)
    keys = load_keys()
    ids = [k.key_id for k in keys]
    assert ids[0] == WatermarkKey.from_secret(bytes.fromhex(HEX)).key_id  # the env key first
    assert set(ids) == {ids[0], old.key_id, current.key_id}
    assert len(ids) == len(set(ids))


def test_load_keys_creates_nothing_and_dedupes(home, monkeypatch):
    assert load_keys() == []
    assert not home.exists()
    monkeypatch.setenv(KEY_ENV, HEX)
    extra = WatermarkKey.from_secret(bytes.fromhex(HEX))
    assert [k.key_id for k in load_keys(extra=[extra])] == [extra.key_id]


def test_new_key_file_is_private_and_never_overwritten(tmp_path):
    p = tmp_path / "k" / "a.key"
    k = new_key_file(p)
    assert stat.S_IMODE(p.stat().st_mode) == 0o600
    assert k.secret == bytes.fromhex(p.read_text())
    with pytest.raises(FileExistsError):
        new_key_file(p)


def test_a_bad_key_file_is_named_not_quoted(home, monkeypatch, tmp_path):
    d = tmp_path / "keys"
    d.mkdir()
    (d / "bad.key").write_text("SECRETISH-not-hex")
    monkeypatch.setenv(KEYS_DIR_ENV, str(d))
    with pytest.raises(ConfigError, match="bad.key") as info:
        load_keys()
    assert "SECRETISH" not in str(info.value)
