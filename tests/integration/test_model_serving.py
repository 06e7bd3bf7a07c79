"""A registered dpsyn model deploys outside dpsyn's development environment (issue 23).

``mlflow models serve`` with its default environment manager (virtualenv) builds a fresh environment from the
logged model's own requirements (MLflow's client, the pinned runtime and the dpsyn wheel logged with the model) and
answers ``/invocations``; in that same environment, with no checkout on the path, ``mlflow.pyfunc.load_model`` of
the ``champion`` alias (through a tracking server) samples rows that match the model's output schema. Slow: the
environment is installed from the package index (about 1.5 min).
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::UserWarning")]

NAME = "dpsyn-serving-check"


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait(url: str, proc: subprocess.Popen, log: Path, timeout: float) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            pytest.fail(f"{url}: the process exited {proc.returncode}: {log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(2)
    pytest.fail(f"{url} did not answer in {timeout:.0f} s: {log.read_text()[-3000:]}")


def _start(args: list[str], env: dict, log: Path, cwd: Path) -> subprocess.Popen:
    return subprocess.Popen(args, env=env, cwd=cwd, stdout=log.open("w"), stderr=subprocess.STDOUT,
                            start_new_session=True)


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)


@pytest.fixture
def champion(tmp_path, monkeypatch, adult_sample, adult_schema):
    db = f"sqlite:///{tmp_path / 'mlflow.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", db)
    from dpsyn.synth import create
    from tasks import tracking

    synth = create("pgm", {}, privacy={"epsilon": 1.0, "delta": 1e-5, "secure_rng": False, "noise_seed": 0})
    synth.fit(adult_sample.iloc[:2000], adult_schema)
    path = tmp_path / "model.pkl"
    path.write_bytes(pickle.dumps(synth))
    run_id = tracking.start_run("serving-check", {})
    version = tracking.register_model(run_id, NAME, {}, model_uri=tracking.log_model(run_id, path))
    tracking.set_champion(NAME, version)
    return db


def test_the_champion_serves_and_loads_in_an_environment_of_its_own_requirements(champion, tmp_path):
    work = tmp_path / "elsewhere"  # not the repository: nothing of the checkout is importable from here
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(MLFLOW_TRACKING_URI=champion, MLFLOW_ENV_ROOT=str(tmp_path / "envs"))
    mlflow_cli = str(Path(sys.executable).with_name("mlflow"))
    serve_port, store_port = _port(), _port()
    serve = _start([mlflow_cli, "models", "serve", "-m", f"models:/{NAME}@champion", "-h", "127.0.0.1", "-p",
                    str(serve_port)], env, tmp_path / "serve.log", work)  # the default env manager: virtualenv
    store = _start([mlflow_cli, "server", "--backend-store-uri", champion, "--host", "127.0.0.1", "--port",
                    str(store_port), "--workers", "1"], env, tmp_path / "server.log", work)
    try:
        _wait(f"http://127.0.0.1:{serve_port}/ping", serve, tmp_path / "serve.log", timeout=900)
        req = urllib.request.Request(f"http://127.0.0.1:{serve_port}/invocations", method="POST",
                                     data=json.dumps({"inputs": [5], "params": {"random_state": 3}}).encode(),
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=120) as r:
            rows = json.loads(r.read())["predictions"]
        from dpsyn.schema import load_schema

        names = [c.name for c in load_schema("adult").synthesizable_columns()]
        assert len(rows) == 5 and all(list(row) == names for row in rows)

        (venv,) = (tmp_path / "envs").iterdir()  # the environment MLflow built from the model's requirements
        _wait(f"http://127.0.0.1:{store_port}/health", store, tmp_path / "server.log", timeout=120)
        code = (
            "import json, sys, mlflow\n"
            f"m = mlflow.pyfunc.load_model('models:/{NAME}@champion')\n"
            "df = m.predict(50, params={'random_state': 1})\n"
            "schema = m.metadata.get_output_schema()\n"
            "print(json.dumps({'rows': len(df), 'columns': list(df.columns), 'schema': schema.input_names(),\n"
            "  'types': {c.name: c.type.name for c in schema.inputs},\n"
            "  'kinds': {c: df[c].dtype.kind for c in df.columns}, 'dpsyn': sys.modules['dpsyn'].__file__,\n"
            "  'tasks': 'tasks' in sys.modules, 'prefect': 'prefect' in sys.modules}))\n"
        )
        clean = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "MLFLOW_TRACKING_URI": f"http://127.0.0.1:{store_port}"}
        res = subprocess.run([str(venv / "bin" / "python"), "-I", "-c", code], env=clean, cwd=work,
                             capture_output=True, text=True, timeout=300)
        assert res.returncode == 0, res.stderr[-3000:]
        got = json.loads(res.stdout.strip().splitlines()[-1])
        assert got["rows"] == 50 and got["columns"] == got["schema"] == names
        assert got["dpsyn"].startswith(str(venv)) and not got["tasks"] and not got["prefect"]
        for c, t in got["types"].items():  # rows conform to the logged output schema's types
            kind = got["kinds"][c]
            assert (kind in "iu") if t == "long" else (kind == "f") if t == "double" else (kind not in "iuf"), (c, t)
        assert set(got["types"].values()) == {"long", "string"}
    finally:
        _stop(serve)
        _stop(store)
        shutil.rmtree(tmp_path / "envs", ignore_errors=True)  # about 1 GB (torch)
