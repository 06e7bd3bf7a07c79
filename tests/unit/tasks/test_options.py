"""A row-touching task's failure is stored value-free in Prefect (issue 24: Prefect stored the exception text)."""

from __future__ import annotations

import pytest

from dpsyn.errors import InputError
from tasks.options import private_task

PLANTED = "123-45-6789"


@private_task("leaky")
def _leaky():
    raise ValueError(f"could not convert string to float: '{PLANTED}'")  # as pandas would say it


@private_task("ours")
def _ours():
    raise InputError("column 'ssn': value(s) outside the declared domain")  # dpsyn's text: never a value


def test_a_library_error_becomes_one_value_free_line():
    with pytest.raises(RuntimeError) as info:
        _leaky.fn()
    assert PLANTED not in str(info.value) and "ValueError in task leaky" in str(info.value)
    assert info.value.__cause__ is None and info.value.__suppress_context__


def test_dpsyn_errors_pass_as_they_are():
    with pytest.raises(InputError, match="outside the declared domain"):
        _ours.fn()


@pytest.mark.slow  # a flow run against the test API
def test_prefect_stores_no_value(prefect_harness):
    from prefect import flow
    from prefect.client.orchestration import get_client

    @flow(name="value-free-check")
    def f():
        _leaky()

    state = f(return_state=True)
    assert state.is_failed()
    with get_client(sync_client=True) as client:
        runs = client.read_task_runs()
    messages = [r.state.message or "" for r in runs if r.name.startswith("leaky")]
    assert messages and all(PLANTED not in m for m in messages)
    assert PLANTED not in (state.message or "")
