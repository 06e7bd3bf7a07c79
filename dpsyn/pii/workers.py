"""Worker processes for large free-text inputs (``python -m dpsyn.pii._worker``).

Started with :mod:`subprocess` rather than :mod:`multiprocessing`: nothing of the caller's main
module is re-imported and no threaded parent is forked, so it is safe inside a Prefect task.
Results come back in order; a failed worker fails the run (its error type only is reported).
"""

from __future__ import annotations

import logging
import os
from collections import Counter

from dpsyn.pii.config import ScrubConfig
from dpsyn.pii.deny import Term

__all__ = ["run_workers"]

logger = logging.getLogger(__name__)


def run_workers(
    texts: list[str], deny: list[list[Term]], *, config: ScrubConfig, entities: list[str], n: int
) -> tuple[list[str], Counter, Counter]:
    """Split the texts over ``n`` worker processes (``python -m dpsyn.pii._worker``), in order."""
    import pickle
    import subprocess
    import sys
    from concurrent.futures import ThreadPoolExecutor

    from dpsyn.pii import operators

    size = -(-len(texts) // n)
    parts = [(texts[i : i + size], deny[i : i + size]) for i in range(0, len(texts), size)]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    key = operators._process_key
    config_json = config.model_dump_json()
    logger.info("PII scrub: %d texts in %d worker processes", len(texts), len(parts))

    def run(part: tuple[list[str], list[list[Term]]]):
        payload = pickle.dumps((config_json, key, part[0], part[1], entities), protocol=pickle.HIGHEST_PROTOCOL)
        proc = subprocess.run(
            [sys.executable, "-m", "dpsyn.pii._worker"],
            input=payload,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            check=False,
        )
        try:
            status, result = pickle.loads(proc.stdout)
        except Exception:
            status, result = "error", f"no result (exit code {proc.returncode})"
        if status != "ok":
            raise RuntimeError(f"a PII worker process failed ({result}); nothing was scrubbed")
        return result

    out: list[str] = []
    counts: Counter = Counter()
    left: Counter = Counter()
    with ThreadPoolExecutor(max_workers=len(parts)) as pool:
        for new, c, rest in pool.map(run, parts):
            out.extend(new)
            counts.update(c)
            left.update(rest)
    return out, counts, left

