"""The library layer never imports orchestration or tracking code."""

import ast
from pathlib import Path

import pytest

DPSYN = Path(__file__).resolve().parents[2] / "dpsyn"
FORBIDDEN = {"prefect", "mlflow", "tasks", "flows", "dpsyn_cli"}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("path", sorted(DPSYN.rglob("*.py")), ids=lambda p: str(p.relative_to(DPSYN)))
def test_dpsyn_module_imports_no_orchestration(path):
    bad = _imports(path) & FORBIDDEN
    assert not bad, f"{path} imports {bad}"


def test_the_check_sees_a_forbidden_import(tmp_path):
    p = tmp_path / "m.py"
    p.write_text("def f():\n    from prefect import flow\n")
    assert _imports(p) & FORBIDDEN == {"prefect"}
