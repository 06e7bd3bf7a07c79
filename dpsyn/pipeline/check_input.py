"""What can be checked before a run starts: the schema, the input file against it, the synthesizer, the output.

The CLI calls :func:`check_input` before it starts the flow, so a bad input fails in a second with one line (exit
2) and nothing is reserved. It reads the input file (one partition at a time) to check it against the schema:
an owner-side check whose answer goes to the operator's terminal only (docs/privacy.md, "The guarantee").
"""

from __future__ import annotations

from pathlib import Path

from dpsyn.config import SynthesizeConfig

__all__ = ["check_input"]


def check_input(config: SynthesizeConfig) -> None:
    """Raise an :class:`~dpsyn.errors.InputError` (exit 2) for a bad schema, input file, synthesizer name or
    output folder; return quietly otherwise."""
    from dpsyn.io import check_output_dir
    from dpsyn.pipeline.partition import plan_partitions, read_partition
    from dpsyn.pipeline.prepare import partition_rows
    from dpsyn.schema import load_schema
    from dpsyn.synth import get_class

    schema = load_schema(config.table_schema)
    for part in plan_partitions(config.data, schema, partition_rows(config)):  # one partition in memory at a time
        read_partition(config.data, schema, part)
    get_class(config.synthesizer)
    check_output_dir(Path(config.out).absolute(), overwrite=config.overwrite)
