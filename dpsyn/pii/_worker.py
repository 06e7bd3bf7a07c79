"""A worker process for scrubbing large batches of free text (``python -m dpsyn.pii._worker``).

The parent (:func:`dpsyn.pii.text.run_texts`) starts one such process per
CPU with :mod:`subprocess` rather than :mod:`multiprocessing`: nothing of the
caller's main module is re-imported (``spawn``) and no threaded parent is
forked (``fork``), so it is safe inside a Prefect task or a plain script.

Protocol: the parent writes one pickle ``(config_json, pseudonym_key, texts,
deny_terms, entities)`` to stdin; the worker writes one pickle ``("ok",
(texts, counts, residual_counts))`` or ``("error", exception type name)`` to
its original stdout. Anything libraries print goes to stderr. No text or value
is ever logged or returned in an error.
"""

from __future__ import annotations

import os
import pickle
import sys


def main() -> int:
    out = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    sys.stdout = sys.stderr  # keep stray prints out of the result channel
    try:
        config_json, key, texts, deny, entities = pickle.load(sys.stdin.buffer)
        if "trf" not in config_json:
            # Presidio and thinc import torch only to look for a GPU (about 3 s per worker);
            # spaCy's CNN pipelines do not need it. Transformer ("trf") pipelines do.
            sys.modules.setdefault("torch", None)
        from dpsyn.pii import operators
        from dpsyn.pii.config import ScrubConfig
        from dpsyn.pii.engine import build_engine
        from dpsyn.pii.text import bind_operators as _bind_operators
        from dpsyn.pii.text import scrub_checked as _scrub_checked

        if key is not None:
            operators._process_key = key  # pseudonyms must match the parent's
        config = ScrubConfig.model_validate_json(config_json)
        engine = build_engine(config)
        ops = _bind_operators(config, set(config.text_entities()))
        result = _scrub_checked(texts, deny, engine=engine, config=config, entities=entities, ops=ops)
        pickle.dump(("ok", result), out, protocol=pickle.HIGHEST_PROTOCOL)
        return 0
    except BaseException as e:  # report the kind only: the message could hold a value
        pickle.dump(("error", type(e).__name__), out, protocol=pickle.HIGHEST_PROTOCOL)
        return 1
    finally:
        out.flush()


if __name__ == "__main__":
    sys.exit(main())
