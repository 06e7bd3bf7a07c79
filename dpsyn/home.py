"""Where dpsyn keeps its state: one home folder, configurable by environment.

``DPSYN_HOME`` (default ``~/.dpsyn``) holds the MLflow store (``mlflow.db``
and ``mlartifacts/``) unless ``MLFLOW_TRACKING_URI`` is set, Prefect's local
home (``prefect/``) unless ``PREFECT_HOME`` or ``PREFECT_API_URL`` is set,
and watermark keys (``keys/``).
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["dpsyn_home", "keys_dir", "mlflow_tracking_uri", "prefect_home", "sqlite_file"]


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
