"""The synthesize and drift runs as plain functions over a work folder the library owns.

``dpsyn.pipeline.run(config)`` runs a whole ``synthesize`` run in this process, no Prefect needed; the Prefect
flows (``flows/``) compose the same stages, one task per stage. The parts:

* :mod:`~dpsyn.pipeline.workdir`: the work folder's file protocol; :mod:`~dpsyn.pipeline.context`: a run's ids and
  flags, saved there;
* :mod:`~dpsyn.pipeline.lifecycle`: begin (refuse, reserve, work folder), mark_read, settle, finish, abort;
* :mod:`~dpsyn.pipeline.prepare`: plan the input's partitions, scrub, mask and count each, merge
  (:mod:`~dpsyn.pipeline.partition`, :mod:`~dpsyn.pipeline.merge`);
* :mod:`~dpsyn.pipeline.stages`: noisy counts, fit, sample, watermark, the gate, publish;
* :mod:`~dpsyn.pipeline.manifest`: the manifest, the gate's verdict, output naming;
* :mod:`~dpsyn.pipeline.tracker`: the seam to an experiment store (MLflow in ``tasks/tracking.py``);
* :mod:`~dpsyn.pipeline.check_input`: what the CLI checks before a run; :mod:`~dpsyn.pipeline.drift`: the drift
  check's stages.
"""

from dpsyn.pipeline.context import RunContext
from dpsyn.pipeline.run import run
from dpsyn.pipeline.tracker import NullTracker, Tracker
from dpsyn.pipeline.workdir import WorkDir

__all__ = ["NullTracker", "RunContext", "Tracker", "WorkDir", "run"]
