"""Related tables: a dataset of persons and their child rows, synthesized with a per-person guarantee.

``load_dataset_schema`` reads a dataset schema (the persons' table, child tables keyed to it, public contribution
bounds); ``read_dataset`` reads its files; ``RelationalSynthesizer`` fits and samples all tables at once, every
mechanism charged at the person level to one accountant; ``run_dataset`` is one run (budget reserved first,
one folder published atomically, the budget settled).
"""

from dpsyn.relational.io import read_dataset, write_dataset
from dpsyn.relational.run import reports_dir, run_dataset
from dpsyn.relational.schema import DatasetSchema, load_dataset_schema, parse_dataset_schema
from dpsyn.relational.synth import (
    RelationalConfig,
    RelationalSynthesizer,
    budget_shares,
    create_relational,
    list_relational_synthesizers,
    register_relational_synthesizer,
)

__all__ = ["DatasetSchema", "RelationalConfig", "RelationalSynthesizer", "budget_shares", "create_relational",
           "list_relational_synthesizers", "load_dataset_schema", "parse_dataset_schema", "read_dataset",
           "register_relational_synthesizer", "reports_dir", "run_dataset", "write_dataset"]
