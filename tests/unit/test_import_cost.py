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


def test_the_preflight_of_a_run_loads_nothing_heavy(tmp_path):
    """``dpsyn run``'s pre-flight (schema, the whole input read against it, synthesizer name, rules, output folder,
    can the gate judge this many rows) answers before any heavy import: it took 19 s on a 1,000-row table while
    scipy.stats priced each of ~80,000 normal CDFs of the gate forecast's σ searches, and loaded torch (1.5 s) to
    check a synthesizer's name."""
    from pathlib import Path

    sample = Path(__file__).resolve().parents[2] / "dpsyn" / "data" / "adult_sample.data"
    small = tmp_path / "adult1000.data"
    small.write_text("".join(sample.read_text().splitlines(keepends=True)[:1000]))
    script = tmp_path / "preflight.py"
    script.write_text(
        "from dpsyn.config import SynthesizeConfig\n"
        "from dpsyn.errors import InputError\n"
        "from dpsyn.pipeline.check_input import check_input\n"
        f"config = SynthesizeConfig(data={str(small)!r}, table_schema='adult', out={str(tmp_path / 'out')!r})\n"
        "try:\n"
        "    check_input(config)\n"
        "except InputError as e:\n"
        "    assert 'too small for the validation gate' in str(e), e\n"
        "else:\n"
        "    raise AssertionError('1,000 rows at eps 1 passed the pre-flight')\n")
    assert _loaded(f"import runpy; runpy.run_path({str(script)!r})") == []
