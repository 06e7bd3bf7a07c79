"""Flow-run state hooks: how a flow that stopped closes its run (budget, MLflow, work folder).

Flows hold no try/except: a flow that fails, crashes or is cancelled runs :func:`abort_run`, which hands the
flow run's id to :func:`dpsyn.pipeline.lifecycle.abort` (it finds the run's state in its work folder).
"""

from __future__ import annotations

import logging

logger = logging.getLogger(__name__)


def abort_run(flow, flow_run, state) -> None:
    """Close the stopped run ``flow_run`` (see dpsyn.pipeline.lifecycle.abort); never raises."""
    from dpsyn.pipeline.lifecycle import abort
    from tasks.tracking import TRACKER

    try:
        abort(str(flow_run.id), TRACKER)
    except Exception as e:  # a hook must not mask the flow's own failure; the reservation stays charged
        logger.error("closing the stopped run failed (%s); its budget reservation stays charged in full",
                     type(e).__name__)
