"""What can be checked before a run starts: the schema, the input file against it, the synthesizer, the output.

The CLI calls :func:`check_input` before it starts the flow, so a bad input fails in a second with one line (exit
2) and nothing is reserved: that includes a table too small for the validation gate at the run's ε
(:mod:`dpsyn.validation.preflight`). It reads the input file (one partition at a time) to check it against the schema:
an owner-side check whose answer goes to the operator's terminal only (docs/privacy.md, "The guarantee").
"""

from __future__ import annotations

from pathlib import Path

from dpsyn.config import SynthesizeConfig

__all__ = ["check_input"]


def check_input(config: SynthesizeConfig) -> None:
    """Raise an :class:`~dpsyn.errors.InputError` (exit 2) for a bad schema, input file, synthesizer name or
    output folder; return quietly otherwise."""
    from dpsyn.io import check_not_inside, check_output_dir, probe_writable
    from dpsyn.pipeline.partition import plan_partitions, read_partition
    from dpsyn.pipeline.prepare import partition_rows
    from dpsyn.schema import load_schema
    from dpsyn.synth import require_registered
    from dpsyn.validation.preflight import require_informative

    schema = load_schema(config.table_schema)
    rows = 0
    for part in plan_partitions(config.data, schema, partition_rows(config)):  # one partition in memory at a time
        rows += len(read_partition(config.data, schema, part))
    require_registered(config.synthesizer)  # the name only: importing a synthesizer loads torch (1.5 s)
    from dpsyn.validation import gate_rules

    rules = gate_rules(config.validation, schema)  # a missing or malformed rules file: exit 2, nothing reserved
    if rules is not None:
        rules.check_against(schema)
    out = Path(config.out).absolute()
    check_output_dir(out, overwrite=config.overwrite)
    check_not_inside(Path(config.data).absolute(), out)
    probe_writable(out)
    # can the gate judge this many rows at this ε? (the exact count stays here: the answer is the operator's)
    require_informative(config.validation, epsilon=config.privacy.epsilon,
                        delta=config.privacy.resolved_delta(schema.population_size), rows=rows,
                        has_target=schema.target is not None, count_share=config.privacy.count_share)
