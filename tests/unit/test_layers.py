"""The library's floor plan: no import cycle, no arrow up, no orchestration or tracking inside dpsyn.

Imports are read from the source (``ast``), module-level **and** function-level, between the top-level units of
``dpsyn`` (a subpackage or a module). Every unit has a floor; a unit may import only units on lower floors.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

DPSYN = Path(__file__).resolve().parents[2] / "dpsyn"
FORBIDDEN = {"prefect", "mlflow", "tasks", "flows", "dpsyn_cli"}

#: The floors, lowest first (docs/architecture.md draws them).
FLOORS = [
    {"errors", "progress"},
    {"home"},
    {"schema", "sqlite"},
    {"io", "encoding", "privacy", "schema_suggest"},
    {"pii", "masking", "watermark"},
    {"lineage"},
    {"load", "synth"},
    {"validation"},
    {"drift", "relational"},
    {"config"},
    {"audit", "demo"},
    {"pipeline"},
]
FLOOR = {unit: i for i, units in enumerate(FLOORS) for unit in units}


def _unit(path: Path) -> str:
    rel = path.relative_to(DPSYN)
    return rel.parts[0].removesuffix(".py") if len(rel.parts) > 1 or rel.name != "__init__.py" else "__init__"


def _imports(path: Path) -> set[str]:
    """Every module named by an import anywhere in the file (function bodies included)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            if node.module == "dpsyn":
                names |= {f"dpsyn.{a.name}" for a in node.names}
    return names


def _edges() -> set[tuple[str, str]]:
    edges = set()
    for path in DPSYN.rglob("*.py"):
        me = _unit(path)
        for mod in _imports(path):
            parts = mod.split(".")
            if parts[0] == "dpsyn" and len(parts) > 1 and parts[1] != me and me != "__init__":
                edges.add((me, parts[1]))
    return edges


@pytest.mark.parametrize("path", sorted(DPSYN.rglob("*.py")), ids=lambda p: str(p.relative_to(DPSYN)))
def test_dpsyn_module_imports_no_orchestration(path):
    bad = {m.split(".")[0] for m in _imports(path)} & FORBIDDEN
    assert not bad, f"{path} imports {bad}"


def test_every_unit_has_a_floor():
    units = {_unit(p) for p in DPSYN.rglob("*.py")} - {"__init__"}
    assert units == set(FLOOR), f"unplaced: {sorted(units - set(FLOOR))}; gone: {sorted(set(FLOOR) - units)}"


def test_no_arrow_runs_up_or_sideways():
    """A unit imports only units on lower floors, so there is no cycle either (function-level imports count)."""
    bad = sorted(f"{a} (floor {FLOOR[a]}) imports {b} (floor {FLOOR[b]})" for a, b in _edges() if FLOOR[b] >= FLOOR[a])
    assert not bad, "\n".join(bad)


def test_privacy_knows_no_synthesizer_gate_audit_or_pipeline():
    assert not {b for a, b in _edges() if a == "privacy"} & {"synth", "validation", "audit", "pipeline", "drift"}


def test_the_checks_see_function_level_imports(tmp_path):
    p = tmp_path / "m.py"
    p.write_text("def f():\n    from prefect import flow\n    import dpsyn.pipeline.run\n")
    assert {m.split(".")[0] for m in _imports(p)} & FORBIDDEN == {"prefect"}
    assert "dpsyn.pipeline.run" in _imports(p)
