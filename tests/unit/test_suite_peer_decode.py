"""benchmarks/suite.py decodes a peer's sampled codes with the decode the run asked for (--within-bin): the peer
writes codes, and the suite decodes them as it decodes every other method's."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import suite  # noqa: E402

from dpsyn.encoding import DiscreteEncoder  # noqa: E402
from dpsyn.schema import TableSchema  # noqa: E402


def _schema():
    return TableSchema.model_validate({
        "schema_version": 1, "name": "t", "target": "y",
        "columns": [{"name": "visits", "kind": "numeric", "bounds": [0, 365], "bins": [0, 1, 2, 40, 365],
                     "integer": True},
                    {"name": "y", "kind": "categorical", "domain": ["0", "1"]}]})


@pytest.mark.parametrize("within_bin", ["uniform", "shaped"])
def test_peer_codes_are_decoded_as_asked(tmp_path, monkeypatch, within_bin):
    schema = _schema()
    enc = DiscreteEncoder(schema)
    rng = np.random.default_rng(0)
    codes = np.column_stack([rng.choice(4, 2000, p=[0.5, 0.3, 0.15, 0.05]), rng.integers(0, 2, 2000)])
    train = enc.decode(codes, rng=np.random.default_rng(1), within_bin="uniform")
    monkeypatch.setattr(suite, "REPO", tmp_path)
    (tmp_path / "benchmarks/.envs/snsynth/bin").mkdir(parents=True)
    (tmp_path / "benchmarks/.envs/snsynth/bin/python").write_text("")

    class Done:
        returncode, stderr = 0, ""
        stdout = json.dumps({"fit_s": 1.0})

    def fake_run(cmd, **kw):  # the peer: echo the training codes back as its sample
        src, dst = cmd[cmd.index("--codes") + 1], cmd[cmd.index("--out") + 1]
        pd.read_csv(src).to_csv(dst, index=False)
        return Done()

    monkeypatch.setattr(suite.subprocess, "run", fake_run)
    syn, *_ = suite.run_peer("mst", schema, train, 1.0, 0, None, within_bin=within_bin)
    want = enc.decode(enc.encode(train), rng=np.random.default_rng(0), within_bin=within_bin)
    pd.testing.assert_frame_equal(syn.reset_index(drop=True), want.reset_index(drop=True))
