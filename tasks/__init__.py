"""Thin Prefect tasks: each wraps one dpsyn call.

Tasks pass file references (paths in a private, run-scoped work folder),
never frames. Every task that touches rows disables caching and result
persistence, so no row reaches Prefect's storage (``NO_CACHE``,
``persist_result=False``).
"""
