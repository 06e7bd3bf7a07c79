"""Task options defined once, and the decorator every row-touching task uses."""

from __future__ import annotations

import functools

from prefect import task
from prefect.cache_policies import NO_CACHE

__all__ = ["PRIVATE", "private_task"]

#: Tasks that touch rows or spend budget: no cache, no persisted result, no retry.
PRIVATE = dict(cache_policy=NO_CACHE, persist_result=False, retries=0)


def private_task(name: str):
    """``@task(name=name, **PRIVATE)`` whose failure Prefect stores value-free: dpsyn's own errors pass as they are
    (their messages never quote a value), any other exception becomes one line naming its type and the task; the
    library's own text (which may quote a cell) is never stored in Prefect's API nor printed."""

    def decorate(fn):
        @functools.wraps(fn)
        def value_free(*args, **kwargs):
            from dpsyn.errors import DpsynError

            try:
                return fn(*args, **kwargs)
            except DpsynError:
                raise
            except Exception as e:
                raise RuntimeError(f"{type(e).__name__} in task {name} (its message is not kept: a library's text "
                                   "may quote the data)") from None

        return task(name=name, **PRIVATE)(value_free)

    return decorate
