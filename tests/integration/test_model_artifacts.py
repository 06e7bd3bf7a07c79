"""A registered model's files are checked before anything is unpickled (issue 24, finding 9: a replaced model.pkl
ran arbitrary code when mlflow.pyfunc.load_model loaded the registered version)."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::UserWarning"),
              pytest.mark.filterwarnings("ignore::DeprecationWarning"),
              pytest.mark.filterwarnings("ignore::FutureWarning")]


class _Touch:
    """A pickle that runs code when loaded: it creates a marker file."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (self.marker,))


@pytest.fixture
def registered(tmp_path, monkeypatch, adult_sample, adult_schema):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'mlflow.db'}")
    from dpsyn.synth import create
    from tasks import tracking

    synth = create("dpgen", {"epochs": 1, "batch_size": 128, "hidden": 16},
                   privacy={"epsilon": 1.0, "delta": 1e-5, "secure_rng": False, "noise_seed": 0})
    synth.fit(adult_sample.iloc[:600], adult_schema)
    model_path = tmp_path / "model.pkl"
    model_path.write_bytes(pickle.dumps(synth))
    run_id = tracking.start_run("artifact-check", {})
    uri = tracking.log_model(run_id, model_path)
    version = tracking.register_model(run_id, "dpsyn-artifact-check", {}, model_uri=uri)
    c = tracking.client()
    store = Path(c.get_logged_model(uri.removeprefix("models:/")).artifact_location.removeprefix("file://"))
    assert (store / "artifacts" / "model.pkl").is_file() and (store / "synthesizer_model.py").is_file()
    return f"models:/dpsyn-artifact-check/{version}", store


def test_a_genuine_version_loads_verified(registered):
    from tasks.pyfunc_model import load_verified

    uri, _ = registered
    model = load_verified(uri)
    assert len(model.predict(5)) == 5
    with pytest.raises(Exception, match="within_bin"):
        model.predict(5, params={"within_bin": "smooth"})


def test_the_served_model_decodes_as_asked(tmp_path):
    """The pyfunc's ``within_bin`` reaches ``Synthesizer.sample``; left out, the library's default (shaped)."""
    import pandas as pd

    from tasks.synthesizer_model import SynthesizerModel

    class Recorder:
        def sample(self, n, *, random_state=None, within_bin="shaped"):
            return pd.DataFrame({"n": [n], "random_state": [random_state], "within_bin": [within_bin]})

    model = SynthesizerModel()
    model.synthesizer = Recorder()
    assert model.predict(None, 4).iloc[0].to_dict() == {"n": 4, "random_state": None, "within_bin": "shaped"}
    got = model.predict(None, 4, params={"random_state": 2, "within_bin": "uniform"}).iloc[0].to_dict()
    assert got == {"n": 4, "random_state": 2, "within_bin": "uniform"}
    with pytest.raises(ValueError, match="within_bin"):
        model.predict(None, 4, params={"within_bin": "smooth"})


def test_a_replaced_synthesizer_pickle_is_refused_before_it_runs(registered, tmp_path):
    import mlflow

    from tasks.pyfunc_model import load_verified

    uri, store = registered
    marker = tmp_path / "ran"
    (store / "artifacts" / "model.pkl").write_bytes(pickle.dumps(_Touch(marker)))
    with pytest.raises(Exception, match="does not match the SHA-256"):
        mlflow.pyfunc.load_model(uri)  # plain MLflow: the wrapper checks the pickle before unpickling it
    with pytest.raises(ValueError, match="artifacts/model.pkl .*does not match"):
        load_verified(uri)
    assert not marker.exists()


def test_a_replaced_model_code_file_is_refused_by_the_verified_loader(registered, tmp_path):
    from tasks.pyfunc_model import load_verified

    uri, store = registered
    marker = tmp_path / "ran"
    (store / "synthesizer_model.py").write_text(f"from pathlib import Path\nPath({str(marker)!r}).touch()\n")
    with pytest.raises(ValueError, match="synthesizer_model.py .*does not match"):
        load_verified(uri)
    assert not marker.exists()  # (plain mlflow.pyfunc.load_model would run it: docs/operations.md)
