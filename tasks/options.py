"""Task options defined once."""

from prefect.cache_policies import NO_CACHE

#: Tasks that touch rows or spend budget: no cache, no persisted result, no retry.
PRIVATE = dict(cache_policy=NO_CACHE, persist_result=False, retries=0)
