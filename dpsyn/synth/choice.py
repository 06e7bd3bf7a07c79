"""The default synthesizer, chosen by a rule on public facts only (issue 26).

``choose_synthesizer(schema, public_rows=n̂, epsilon=ε)`` reads the schema's columns and domain sizes, the released
noisy row count and the run's ε: nothing computed from the rows. The rule and the suite's evidence for it are in
docs/synthesis.md ("The default choice"): on Adult at ε = 1 ``pgm`` beats dpgen and dpdsyn on TSTR AUC and 2-way
TVD (benchmarks/results/utility.md against suite_eps1.md), dpgen and dpdsyn lost to noisy histograms on the
issue's clinical table, and on the suite's tables ``pgm`` matches or beats the trivial baselines and MST on most
rows (the rows where it does not are listed there), so the rule picks ``pgm``; ``pgm`` itself then decides by a
public rule whether a DP task model sets the labels (:func:`dpsyn.synth.pgm.use_task_model`). dpgen and dpdsyn
stay available by name.
"""

from __future__ import annotations

from dpsyn.schema import TableSchema

__all__ = ["AUTO", "choose_synthesizer"]

#: The name a config may give to ask for the rule's choice.
AUTO = "auto"


def choose_synthesizer(schema: TableSchema, *, public_rows: int, epsilon: float) -> str:
    """Name of the registered synthesizer the rule picks for this table (public facts only)."""
    if not schema.synthesizable_columns():
        raise ValueError(f"schema '{schema.name}' has no column to synthesize")
    del public_rows, epsilon  # the backbone's own rule (task model or not) reads them
    return "pgm"
