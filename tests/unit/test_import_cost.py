"""Reading a run's config (what every CLI command and pre-flight does first) loads no torch and no scipy.stats:
a missing file or a bad option is answered in well under a second, not after 3 s of imports."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("torch", "opacus", "scipy.stats", "jax", "mbi", "prefect", "mlflow", "great_expectations", "presidio_analyzer")


def _loaded(statement: str) -> list[str]:
    code = f"import sys; {statement}; print([m for m in {HEAVY!r} if m in sys.modules])"
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return eval(res.stdout.strip())  # noqa: S307 - our own print of a list of names


def test_the_config_and_the_cli_entry_load_nothing_heavy():
    assert _loaded("import dpsyn.config, dpsyn_cli.main") == []


def test_the_probe_sees_a_heavy_import():
    assert _loaded("import dpsyn.privacy.noise as n; n.NoiseSource(secure=True).normal((2,), 1.0)") == ["torch"]
