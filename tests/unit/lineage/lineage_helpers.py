"""Shared constants for the lineage tests: a key and a manifest shaped like the synthesize flow's."""

from __future__ import annotations

from dpsyn.watermark import WatermarkKey, record_code

KEY = WatermarkKey.from_secret(bytes(range(40, 72)))
BATCH = "ab" * 32
RUN = "0123456789abcdef0123456789abcdef"
TS = "2024-05-01T12:00:00+00:00"


def manifest(key: WatermarkKey = KEY, *, run_id: str = RUN, batch_id: str = BATCH, ts: str = TS) -> dict:
    code = record_code(key, batch_id=batch_id, run_id=run_id, timestamp=ts)
    return {
        "mlflow_run_id": run_id,
        "schema": "adult",
        "synthesizer": "dpgen",
        "training_batch": {"batch_id": batch_id, "rows_estimate": 4000, "source": "adult.data"},
        "watermark": {"code": code, "key_id": key.key_id, "timestamp": ts,
                      "statistical": {"strength": 0.005, "grid": 1000, "categorical": False}},
        "epsilon_spent": 0.9731,
        "delta": 1e-5,
        "accountant": "prv",
        "gate_passed": True,
    }


VALIDATION = {"checks": [{"name": "ks.age", "passed": True}, {"name": "tvd.sex", "passed": True}],
              "noise_std": 0.001, "n_real": 4000, "n_synthetic": 4000}
