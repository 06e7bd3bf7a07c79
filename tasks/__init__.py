"""Thin Prefect tasks: each wraps one call into ``dpsyn.pipeline`` (or ``dpsyn``), beyond reading its config.

Tasks pass the run's context (ids and paths of its private work folder), never frames. Every task that touches
rows uses :data:`tasks.options.PRIVATE`: no cache, no persisted result, no retry, so no row reaches Prefect's
storage and no mechanism runs twice. This package's ``__init__`` imports nothing (a logged model's wrapper,
``tasks.pyfunc_model``, loads without Prefect).
"""
