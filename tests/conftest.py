"""Shared fixtures. Every test runs with its own dpsyn home, never ~/.dpsyn."""

from __future__ import annotations

import os
import tempfile
import warnings
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"

# Set before anything imports prefect or mlflow.
_SESSION_HOME = Path(tempfile.mkdtemp(prefix="dpsyn-test-home-"))
os.environ["DPSYN_HOME"] = str(_SESSION_HOME)
os.environ["PREFECT_HOME"] = str(_SESSION_HOME / "prefect")
(_SESSION_HOME / "prefect").mkdir(parents=True, exist_ok=True)
os.environ.pop("MLFLOW_TRACKING_URI", None)
os.environ.pop("PREFECT_API_URL", None)
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("DO_NOT_TRACK", "1")
os.environ.setdefault("TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS", "")
os.environ.setdefault("GIT_PYTHON_REFRESH", "quiet")
# as the CLI and the deployments do: dpsyn's own log lines reach Prefect's API (and the release inventory test)
os.environ.setdefault("PREFECT_LOGGING_EXTRA_LOGGERS", "dpsyn")
os.environ["DPSYN_WATERMARK_KEY"] = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
warnings.filterwarnings("ignore", category=DeprecationWarning)


@pytest.fixture(scope="session")
def session_home() -> Path:
    return _SESSION_HOME


@pytest.fixture(scope="session")
def adult_schema():
    from dpsyn.schema import load_schema

    return load_schema("adult")


@pytest.fixture(scope="session")
def adult_sample(adult_schema):
    """The shipped 4,000-row Adult sample, read as its schema declares."""
    from importlib import resources

    from dpsyn.io import read_table

    with resources.as_file(resources.files("dpsyn") / "data" / "adult_sample.data") as p:
        return read_table(p, adult_schema)


@pytest.fixture(scope="session")
def adult_sample_path() -> Path:
    return REPO / "dpsyn" / "data" / "adult_sample.data"


@pytest.fixture(scope="session")
def prefect_harness():
    """One ephemeral Prefect API for every in-process flow test."""
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120):
        yield


@pytest.fixture(scope="module")
def small_adult(tmp_path_factory, adult_sample_path):
    """The first 2,000 rows of the shipped sample, in Adult's original format."""
    p = tmp_path_factory.mktemp("data") / "adult2000.data"
    lines = adult_sample_path.read_text().splitlines(keepends=True)[:2000]
    p.write_text("".join(lines))
    return p
