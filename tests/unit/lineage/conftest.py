"""Fixtures: a ledger, a marked stand-in for synthetic output, a published file recorded in the ledger."""

from __future__ import annotations

import pytest
from lineage_helpers import KEY, VALIDATION, manifest

from dpsyn.watermark import apply_watermark, embed_statistical


@pytest.fixture
def ledger(tmp_path):
    from dpsyn.lineage import Ledger

    return Ledger(f"sqlite:///{tmp_path / 'ledger' / 'lineage.db'}")


@pytest.fixture(scope="module")
def marked_adult(adult_sample, adult_schema):
    """The shipped sample standing in for synthetic output, carrying KEY's statistical mark."""
    return embed_statistical(adult_sample, adult_schema, KEY, random_state=0)


@pytest.fixture
def published(tmp_path, ledger, marked_adult):
    """A published synthetic.csv (with `_wm`), recorded in the ledger; returns (path, release)."""
    from dpsyn.io import file_sha256
    from dpsyn.lineage import Release

    m = manifest()
    path = tmp_path / "out" / "synthetic.csv"
    path.parent.mkdir()
    apply_watermark(marked_adult, m["watermark"]["code"], key=KEY).to_csv(path, index=False)
    rel = Release.from_manifest(m, dataset_sha256=file_sha256(path), path=path, rows=len(marked_adult),
                                validation=VALIDATION, validation_path=path.parent / "validation_report.json")
    ledger.record(rel)
    return path, rel
