"""`dpsyn audit trace` names the run's flow run even when MLflow cannot be read: the lineage ledger records it."""

from __future__ import annotations

import pytest

import tasks.tracking
from dpsyn_cli import audit_cmds


def test_the_lineage_ledgers_run_id_stands_in_when_mlflow_cannot_be_read(monkeypatch):
    def down(run_id):
        raise ConnectionError("tracking server down")

    monkeypatch.setattr(tasks.tracking, "orchestration", down)
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    entry = audit_cmds._orchestration_of("mlflow-run-1", "0b8e7c2a-flow-run")
    assert entry["run_id"] == "0b8e7c2a-flow-run" and entry["orchestrator"] == "prefect"
    assert "run id from the lineage ledger" in entry["note"] and "ConnectionError" in entry["note"]
    # without a recorded id there is only the note
    assert audit_cmds._orchestration_of("mlflow-run-1") == {"note": "the MLflow run was not read (ConnectionError)"}


@pytest.mark.parametrize("recorded", [None, "0b8e7c2a-flow-run"])
def test_mlflow_wins_when_it_answers(monkeypatch, recorded):
    monkeypatch.setattr(tasks.tracking, "orchestration",
                        lambda run_id: {"orchestrator": "library", "run_id": "abc", "run_name": "synthesize-x"})
    entry = audit_cmds._orchestration_of("mlflow-run-1", recorded)
    assert entry == {"orchestrator": "library", "run_id": "abc", "name": "synthesize-x"}
