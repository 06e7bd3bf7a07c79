"""tasks.artifacts.ProgressArtifacts: dpsyn's progress hook as Prefect progress artifacts, throttled; nothing
outside a Prefect run."""

from __future__ import annotations

import threading

from tasks.artifacts import ProgressArtifacts, progress_artifacts, progress_key


class _Fake:
    def __init__(self):
        self.t = 0.0
        self.calls: list[tuple] = []

    def clock(self):
        return self.t

    def create(self, *, progress, key, description):
        self.calls.append(("create", key, progress))
        return "artifact-id"

    def update(self, artifact_id, progress):
        self.calls.append(("update", artifact_id, progress))


def _reporter(fake, **kw):
    return ProgressArtifacts(lambda s: s.endswith("DP-SGD steps"), clock=fake.clock, create=fake.create,
                             update=fake.update, **kw)


def test_keys_are_prefect_artifact_keys():
    assert progress_key("dpgen.dpsgd: DP-SGD steps") == "progress-dpgen-dpsgd-dp-sgd-steps"
    assert progress_key("sample (chunks)") == "progress-sample-chunks"


def test_writes_at_most_once_a_second_and_once_a_percent_and_always_at_100():
    fake = _Fake()
    rep = _reporter(fake)
    steps = 10_000
    for done in range(1, steps + 1):  # 10,000 steps in 20 s of the fake clock
        fake.t = done * 0.002
        rep("dpgen.dpsgd: DP-SGD steps", done, steps)
    assert fake.calls[0] == ("create", "progress-dpgen-dpsgd-dp-sgd-steps", 0.0)
    updates = [c[2] for c in fake.calls[1:]]
    assert updates[-1] == 100.0 and len(updates) <= 21  # ~one a second (20 s), the last at 100 %
    assert updates == sorted(updates) and all(float(p).is_integer() for p in updates)  # whole percent, rising


def test_fast_progress_is_capped_by_percent():
    fake = _Fake()
    rep = _reporter(fake, min_interval=0.0)
    for done in range(1, 100_001):
        fake.t = done * 10.0  # every step "takes" 10 s: the percent bound is the one that holds
        rep("x: DP-SGD steps", done, 100_000)
    assert 99 <= len(fake.calls) <= 101 and fake.calls[-1][2] == 100.0


def test_other_stages_and_threads_only_reach_the_previous_reporter():
    fake, seen = _Fake(), []
    rep = _reporter(fake, previous=lambda *a: seen.append(a))
    rep("partitions: scrub", 1, 4)  # not matched
    t = threading.Thread(target=rep, args=("y: DP-SGD steps", 1, 2))  # another thread (a Dask worker, say)
    t.start()
    t.join()
    rep("y: DP-SGD steps", 0, 0)  # no total
    assert fake.calls == [] and len(seen) == 3


def test_a_failing_api_disables_the_artifact_and_never_raises():
    calls = []

    def broken(**kw):
        calls.append(kw)
        raise ConnectionError("down")

    rep = ProgressArtifacts(lambda s: True, create=broken, update=broken)
    rep("s", 1, 10)
    rep("s", 10, 10)
    assert len(calls) == 1


def test_outside_a_run_nothing_is_installed():
    from dpsyn.progress import report, set_reporter

    seen = []
    previous = set_reporter(lambda *a: seen.append(a))
    try:
        with progress_artifacts(lambda s: True) as rep:
            assert rep is None
            report("z: DP-SGD steps", 1, 1)
        assert seen == [("z: DP-SGD steps", 1, 1)]
    finally:
        set_reporter(previous)


def test_the_fit_and_sample_tasks_run_as_plain_functions_without_a_run(monkeypatch):
    """`.fn` outside a run: the wrappers call the stage and install nothing."""
    from types import SimpleNamespace

    import dpsyn.progress
    import tasks.stages as st

    before = dpsyn.progress._reporter
    monkeypatch.setattr(st.stages, "fit", lambda config, ctx: {"ok": 1})
    monkeypatch.setattr(st.stages, "sample", lambda config, ctx: 7)
    ctx = SimpleNamespace(population="p")
    assert st.fit.fn(None, ctx) == {"ok": 1} and st.sample.fn(None, ctx) == 7
    assert dpsyn.progress._reporter is before
