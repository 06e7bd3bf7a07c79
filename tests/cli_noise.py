"""What a CLI run must not print on stderr (issue 23), shared by the CLI tests.

A traceback, a warning (``X Warning: ...`` or the ``warnings.warn(`` source line under it), or a log record of a
library: MLflow's ``2026/01/02 03:04:05 INFO mlflow...``, Prefect's ``03:04:05.678 | ERROR | prefect.server...``
(such as the embedded server's ``task_run_recorder - Error flushing 1 events`` with its CancelledError at shutdown),
a record in the root handler that Opacus installs with ``logging.basicConfig`` (``12/07/2026 07:00:26:INFO:...``,
how Great Expectations' "Created temporary directory ... for ephemeral docs site" reached a run with ``--rules``), or
a tqdm progress bar (Great Expectations' ``Calculating Metrics: 25%|██▌ ...``).
"""

from __future__ import annotations

import re

NOISE = re.compile(r"Traceback|Warning\b|warnings\.warn|\bError\b|CancelledError"
                   r"|^\d{4}/\d\d/\d\d \d\d:\d\d:\d\d [A-Z]+ |^\d\d:\d\d:\d\d\.\d+ \| [A-Z]+ "
                   r"|^\d\d/\d\d/\d{4} \d\d:\d\d:\d\d:[A-Z]+:|\d+%\|", re.MULTILINE)


def noise_lines(stderr: str) -> list[str]:
    """The lines of ``stderr`` that a successful run must not print."""
    return [line for line in stderr.splitlines() if NOISE.search(line)]
