"""Where dpsyn keeps its state: one home folder, configurable by environment.

``DPSYN_HOME`` (default ``~/.dpsyn``) holds the MLflow store (``mlflow.db``
and ``mlartifacts/``) unless ``MLFLOW_TRACKING_URI`` is set, Prefect's local
home (``prefect/``) unless ``PREFECT_HOME`` or ``PREFECT_API_URL`` is set,
watermark keys (``keys/``), and ``work/`` (mode 0700): the private folders of running runs and other scratch
files holding private values, each naming its owner process (``owner.json``) so that a later sweep removes what
a killed process left (dpsyn.pipeline.lifecycle.sweep).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

__all__ = ["OWNER_FILE", "dpsyn_home", "keys_dir", "make_work_root", "mlflow_tracking_uri", "owner_gone",
           "prefect_home", "scratch_dir", "sqlite_file", "work_root", "write_owner"]

OWNER_FILE = "owner.json"


def dpsyn_home() -> Path:
    return Path(os.environ.get("DPSYN_HOME") or Path.home() / ".dpsyn").expanduser().absolute()


def keys_dir() -> Path:
    return dpsyn_home() / "keys"


def prefect_home() -> Path:
    return Path(os.environ.get("PREFECT_HOME") or dpsyn_home() / "prefect").expanduser().absolute()


def mlflow_tracking_uri() -> str:
    uri = os.environ.get("MLFLOW_TRACKING_URI")
    if uri:
        return uri
    return f"sqlite:///{dpsyn_home() / 'mlflow.db'}"


def mlflow_artifact_root() -> str:
    return (dpsyn_home() / "mlartifacts").as_uri()


def sqlite_file(url: str | Path | None, *, env: str, default_name: str, what: str) -> Path:
    """The SQLite file of a ledger URL (``sqlite:///path``, ``sqlite:////abs/path``, a plain path or a Path).

    ``None`` means ``$<env>`` if set, else ``$DPSYN_HOME/<default_name>``; ``what`` names the ledger in errors.
    """
    from dpsyn.errors import ConfigError

    if isinstance(url, Path):
        return url.expanduser().absolute()
    url = url or os.environ.get(env) or None
    if url is None:
        return dpsyn_home() / default_name
    if "://" in url:
        scheme, rest = url.split("://", 1)
        if scheme != "sqlite" or not rest.startswith("/") or rest == "/":
            raise ConfigError(f"{what} URL must be sqlite:///PATH (got scheme '{scheme}')")
        return Path(rest[1:]).expanduser().absolute()
    return Path(url).expanduser().absolute()


def work_root() -> Path:
    return dpsyn_home() / "work"


def make_work_root() -> Path:
    root = work_root()
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(root, 0o700)
    return root


def write_owner(folder: Path) -> None:
    """Name this process (pid, host) as the owner of ``folder``."""
    owner = {"pid": os.getpid(), "host": socket.gethostname(), "started": datetime.now(UTC).isoformat()}
    (folder / OWNER_FILE).write_text(json.dumps(owner))


def owner_gone(folder: Path) -> bool:
    """Whether the process that owns ``folder`` (its owner file) is gone: on this host and its pid not alive.
    A folder of another host, or without an owner file yet, is never judged gone."""
    try:
        owner = json.loads((folder / OWNER_FILE).read_text())
    except (OSError, ValueError):
        return False
    if owner.get("host") != socket.gethostname():
        return False
    try:
        os.kill(int(owner["pid"]), 0)
    except ProcessLookupError:
        return True
    except (PermissionError, KeyError, ValueError, TypeError, OverflowError):
        return False
    return False


@contextlib.contextmanager
def scratch_dir(prefix: str) -> Iterator[Path]:
    """A private folder under the work root (0700, with an owner file) for files holding raw private values, removed
    on exit; if the process is killed, the next sweep removes it."""
    folder = make_work_root() / f"{prefix}-{uuid.uuid4().hex[:12]}"
    folder.mkdir(mode=0o700)
    try:
        write_owner(folder)
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)
