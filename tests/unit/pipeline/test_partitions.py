"""dpsyn.pipeline's partitions (of an input file) and merging what they produce, and the gate's exact counts.

The partitioned pipeline must produce exactly what the unpartitioned one does: the same rows, the same
training-batch hash, the same noiseless gate and drift statistics (hence, with the same noise, the same
release).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpsyn.config import ScaleConfig
from dpsyn.errors import InputError, PIIResidualError, SchemaError
from dpsyn.io import frame_sha256, read_table
from dpsyn.pipeline.merge import batch_id_of, merge_parquet, merge_scrub_reports, row_hashes
from dpsyn.pipeline.partition import partition_seed, plan_partitions, read_partition
from dpsyn.privacy import NoiseSource, PrivacyAccountant
from dpsyn.schema import parse_schema
from dpsyn.validation import (
    ValidationConfig,
    column_histograms,
    fidelity_statistics,
    pair_statistics,
    real_statistics_for,
    validate,
)
from dpsyn.validation.fidelity import _fidelity_from_counts, _histograms_from_counts, _pairs_from_counts
from dpsyn.validation.stats import RealStatistics

pytestmark = [
    pytest.mark.filterwarnings("ignore:Optimal order is the largest alpha"),
    pytest.mark.filterwarnings("ignore:divide by zero encountered in log:RuntimeWarning"),
    pytest.mark.filterwarnings("ignore::dpsyn.errors.InsecureRNGWarning"),
]

CSV_YAML = """
schema_version: 1
name: parts
read: {header: true, sep: ",", na_values: ["?"], comment: "#"}
columns:
  - {name: id, kind: identifier, tier: L1}
  - {name: age, kind: numeric, bounds: [0, 100], integer: true}
  - {name: grp, kind: categorical, domain: [a, b], nullable: true}
  - {name: note, kind: text, tier: L2}
"""


def _concat(frames):
    return pd.concat(frames, ignore_index=True)


@pytest.fixture()
def awkward_csv(tmp_path):
    """A CSV with comment and blank lines, quoted fields with commas, quotes and line breaks."""
    lines = ["# exported 2024", "id,age,grp,note"]
    for i in range(23):
        note = f'"line one {i}\nline two, with ""quotes"""' if i % 5 == 0 else f"plain {i}"
        lines.append(f"{i},{20 + i},{'ab'[i % 2] if i % 7 else '?'},{note}")
        if i % 6 == 3:
            lines += ["", "# a comment in the middle"]
    p = tmp_path / "awkward.csv"
    p.write_bytes(("\n".join(lines) + "\n\n").encode())
    return p


def test_csv_partitions_read_back_the_whole_file(awkward_csv):
    schema = parse_schema(CSV_YAML)
    whole = read_table(awkward_csv, schema)
    for rows in (1, 4, 5, 23, 100):
        parts = plan_partitions(awkward_csv, schema, rows)
        assert len(parts) == -(-23 // rows)
        assert [p.rows for p in parts[:-1]] == [rows] * (len(parts) - 1)
        pd.testing.assert_frame_equal(_concat(read_partition(awkward_csv, schema, p) for p in parts), whole)
    assert plan_partitions(awkward_csv, schema, 0)[0].format == "whole"


def test_csv_partition_errors_name_the_file_line(tmp_path):
    schema = parse_schema(CSV_YAML)
    rows = [f"{i},{i},a,x" for i in range(10)]
    rows[7] = "7,7,a,x,extra"  # data line 8 = file line 9 (after the header)
    p = tmp_path / "bad.csv"
    p.write_text("id,age,grp,note\n" + "\n".join(rows) + "\n")
    parts = plan_partitions(p, schema, 3)
    with pytest.raises(SchemaError, match="line 9 has 5 fields"):
        read_partition(p, schema, parts[2])
    with pytest.raises(SchemaError, match="line 9 has 5 fields"):
        read_table(p, schema)
    q = tmp_path / "domain.csv"
    q.write_text("id,age,grp,note\n1,5,a,x\n2,6,zz,y\n")
    part = plan_partitions(q, schema, 1)[1]
    with pytest.raises(SchemaError, match=r"partition 2 of 2.*value\(s\) outside") as e:
        read_partition(q, schema, part)
    assert "zz" not in str(e.value)


def test_csv_plan_refuses_what_read_table_refuses(tmp_path):
    schema = parse_schema(CSV_YAML)
    for text, kind in (("", InputError), ("id,age,grp,note\n", InputError), ("x,y\n1,2\n", SchemaError)):
        p = tmp_path / "f.csv"
        p.write_text(text)
        with pytest.raises(kind):
            plan_partitions(p, schema, 10)
    with pytest.raises(InputError, match="not found"):
        plan_partitions(tmp_path / "missing.csv", schema, 10)


def test_parquet_partitions_are_runs_of_row_groups(tmp_path, adult_sample, adult_schema):
    import pyarrow as pa
    import pyarrow.parquet as pq

    p = tmp_path / "adult.parquet"
    pq.write_table(pa.Table.from_pandas(adult_sample, preserve_index=False), p, row_group_size=500)
    parts = plan_partitions(p, adult_schema, 1200)
    assert [x.row_groups for x in parts] == [[0, 1], [2, 3], [4, 5], [6, 7]]
    assert sum(x.rows for x in parts) == len(adult_sample)
    whole = read_table(p, adult_schema)
    pd.testing.assert_frame_equal(_concat(read_partition(p, adult_schema, x) for x in parts), whole)
    assert len(plan_partitions(p, adult_schema, 100)) == 8  # a row group is never split


def test_adult_csv_partitions(adult_sample_path, adult_sample, adult_schema):
    parts = plan_partitions(adult_sample_path, adult_schema, 700)
    assert len(parts) == 6 and parts[0].first_line == 1
    pd.testing.assert_frame_equal(_concat(read_partition(adult_sample_path, adult_schema, x) for x in parts),
                                  adult_sample)


def test_batch_id_and_merged_parquet_equal_the_whole(tmp_path, adult_sample):
    pieces = [adult_sample.iloc[i:i + 900].reset_index(drop=True) for i in range(0, len(adult_sample), 900)]
    files = []
    for i, piece in enumerate(pieces):
        files.append(tmp_path / f"p{i}.parquet")
        piece.to_parquet(files[-1], index=False)
    assert batch_id_of(list(adult_sample.columns), [str(t) for t in adult_sample.dtypes],
                       [row_hashes(x) for x in pieces]) == frame_sha256(adult_sample)
    assert batch_id_of(list(adult_sample.columns), [str(t) for t in adult_sample.dtypes],
                       [row_hashes(x) for x in pieces[::-1]]) != frame_sha256(adult_sample)
    dest = tmp_path / "merged.parquet"
    assert merge_parquet(files, dest) == len(adult_sample)
    import pyarrow.parquet as pq

    assert pq.ParquetFile(dest).metadata.num_row_groups == len(pieces)
    pd.testing.assert_frame_equal(pd.read_parquet(dest), _concat(pd.read_parquet(f) for f in files))


def _split(df, size):
    return [df.iloc[i:i + size].reset_index(drop=True) for i in range(0, len(df), size)]


def test_merged_gate_counts_equal_the_whole_tables(adult_sample, adult_schema):
    cfg = ValidationConfig()
    whole = real_statistics_for(adult_sample, adult_schema, cfg)
    merged = RealStatistics.merge_all([real_statistics_for(x, adult_schema, cfg) for x in _split(adult_sample, 777)])
    assert merged.n == whole.n == len(adult_sample)
    for name, (v, c) in whole.values.items():
        np.testing.assert_array_equal(merged.values[name][0], v)
        np.testing.assert_array_equal(merged.values[name][1], c)
    for kind in ("counts", "hist", "pairs"):
        assert list(getattr(merged, kind)) == list(getattr(whole, kind))
        for k, arr in getattr(whole, kind).items():
            np.testing.assert_array_equal(getattr(merged, kind)[k], arr)


def test_gate_statistics_from_counts_are_the_unpartitioned_ones_bit_for_bit(adult_sample, adult_schema, tmp_path):
    rng = np.random.default_rng(0)
    synth = adult_sample.sample(frac=1.0, replace=True, random_state=1).reset_index(drop=True)
    synth["age"] = synth["age"] + rng.integers(-3, 4, len(synth))
    synth["workclass"] = synth["workclass"].where(rng.random(len(synth)) > 0.05)  # more missing than real
    cfg = ValidationConfig()
    merged = RealStatistics.merge_all([real_statistics_for(x, adult_schema, cfg) for x in _split(adult_sample, 501)])
    merged = RealStatistics.load(merged.save(tmp_path / "counts.npz"))  # through the work folder, as in a run
    assert _fidelity_from_counts(merged, synth, adult_schema) == fidelity_statistics(adult_sample, synth, adult_schema)
    cells = int(len(adult_sample) / cfg.pair_min_rows_per_cell)
    pairs = pair_statistics(adult_sample, synth, adult_schema, max_cells=cells)
    assert pairs and _pairs_from_counts(merged, synth, adult_schema, max_cells=cells) == pairs
    for (a, ra, sa), (b, rb, sb) in zip(column_histograms(adult_sample, synth, adult_schema),
                                        _histograms_from_counts(merged, synth, adult_schema), strict=True):
        assert a.name == b.name
        np.testing.assert_array_equal(ra, rb)
        np.testing.assert_array_equal(sa, sb)


def _gate(real, synth, schema, cfg, **kw):
    acct = PrivacyAccountant(epsilon=1.0, delta=1e-5)
    from dpsyn.privacy import NoisyCounts

    n = len(real) if real is not None else kw["real_stats"].n
    rep = validate(real, synth, schema, cfg, accountant=acct, noise=NoiseSource(secure=False, seed=5),
                   counts=NoisyCounts.public(train=n), **kw)
    return rep, acct.history()


RULES = """
version: 1
name: adult-test-rules
tolerance: 0.01
rules:
  - name: husband_is_male
    if: {column: relationship, in: [Husband]}
    then: {column: sex, in: [Male]}
  - name: hours_up_to_80
    range: {column: hours-per-week, min: 1, max: 80}
"""


def test_partitioned_gate_releases_what_the_whole_gate_releases(adult_sample, adult_schema, tmp_path):
    """Rules included: same checks, same noisy values, same accounting, from counts merged over 2 partitions."""
    rules = tmp_path / "rules.yaml"
    rules.write_text(RULES)
    synth = adult_sample.sample(frac=1.0, replace=True, random_state=3).reset_index(drop=True)
    cfg = ValidationConfig(rules=str(rules), utility=False)
    parts = RealStatistics.merge_all([real_statistics_for(x, adult_schema, cfg) for x in _split(adult_sample, 2000)])
    assert set(parts.rules) == {"rule:husband_is_male", "rule:hours_up_to_80"}
    whole, h1 = _gate(adult_sample, synth, adult_schema, cfg)
    merged, h2 = _gate(None, synth, adult_schema, cfg, real_stats=parts)
    assert merged.model_dump() == whole.model_dump() and h1 == h2
    assert sum(c.statistic.startswith("rule") for c in whole.checks) == 2
    with pytest.raises(ValueError, match="other rules"):  # counts made without the gate's rules
        _gate(None, synth, adult_schema, cfg, real_stats=real_statistics_for(adult_sample, adult_schema,
                                                                              ValidationConfig(rules=None)))


def test_partitioned_drift_check_releases_what_the_whole_check_releases(adult_sample, adult_schema):
    from dpsyn.drift import detect_drift, detect_drift_from_statistics, drift_statistics

    ref, cur = adult_sample.iloc[:2500].reset_index(drop=True), adult_sample.iloc[2500:].reset_index(drop=True)
    cur["age"] = cur["age"] + 4

    def run(fn, *a):
        acct = PrivacyAccountant(epsilon=1.0, delta=1e-5)
        return fn(*a, adult_schema, accountant=acct, noise=NoiseSource(secure=False, seed=9)).model_dump(), acct.history()

    merged = RealStatistics.merge_all([drift_statistics(x, adult_schema) for x in _split(ref, 600)])
    assert run(detect_drift, ref, cur) == run(detect_drift_from_statistics, merged, drift_statistics(cur, adult_schema))


def test_scrub_reports_merge_by_adding_counts_and_refuse_disagreement():
    base = {"mode": "pattern", "model": None, "rows": 10, "dropped_columns": ["name"], "transformed_columns": [],
            "scrubbed_columns": ["note"], "kept_pii_columns": [], "counts": {"note": {"EMAIL_ADDRESS": 2}},
            "columns": {"name": {"hint": "PERSON", "detected": None, "fraction": 0.1, "sampled": 10,
                                 "entity": "PERSON", "operator": "drop"}}}
    other = {**base, "rows": 5, "counts": {"note": {"EMAIL_ADDRESS": 1, "PHONE_NUMBER": 3}, "name": {"PERSON": 5}},
             "columns": {"name": {**base["columns"]["name"], "fraction": 0.4, "sampled": 5}}}
    m = merge_scrub_reports([base, other])
    assert m["rows"] == 15 and m["counts"] == {"note": {"EMAIL_ADDRESS": 3, "PHONE_NUMBER": 3}, "name": {"PERSON": 5}}
    assert m["columns"]["name"]["sampled"] == 15 and m["columns"]["name"]["fraction"] == 0.4
    from dpsyn.pii import ScrubReport

    ScrubReport.model_validate(m)  # still a scrub report
    with pytest.raises(PIIResidualError):
        merge_scrub_reports([base, {**other, "dropped_columns": []}])
    with pytest.raises(PIIResidualError, match="column 'name'"):
        merge_scrub_reports([base, {**other, "columns": {"name": {**other["columns"]["name"], "operator": "hash"}}}])


def test_partition_seeds_and_cluster_settings():
    assert partition_seed(None, 3) is None and partition_seed(7, 0) == 7
    seeds = {partition_seed(7, i) for i in range(1, 50)}
    assert len(seeds) == 49 and 7 not in seeds and partition_seed(7, 1) == partition_seed(7, 1)
    kw = ScaleConfig(n_workers=2, memory_limit="2GiB").cluster_kwargs()
    assert kw == {"n_workers": 2, "threads_per_worker": 1, "processes": False, "dashboard_address": "127.0.0.1:0",
                  "memory_limit": "2GiB"}


def test_masked_partitions_share_one_date_resolution():
    """pandas infers a date column's resolution from each partition's strings; the partitions must agree."""
    from dpsyn.pipeline.prepare import mask_frame

    schema = parse_schema("""
schema_version: 1
name: dates
columns:
  - {name: seen, kind: datetime, bounds: ["2000-01-01", "2030-12-31"], nullable: true}
  - {name: grp, kind: categorical, domain: [a, b]}
""")
    from dpsyn.io import coerce_to_schema

    parts = [coerce_to_schema(pd.DataFrame({"seen": v, "grp": ["a", "b"]}), schema)
             for v in ([None, None], ["2020-01-01", None], ["2020-01-01 10:00:00.123456789", None])]
    assert len({str(p["seen"].dtype) for p in parts}) > 1  # what pandas does on its own
    out = [mask_frame(p, schema)[0] for p in parts]
    assert len({tuple(map(str, o.dtypes)) for o in out}) == 1 and str(out[0].dtypes.iloc[0]) == "datetime64[us]"
    assert out[2]["seen"].iloc[0] == pd.Timestamp("2020-01-01 10:00:00.123456")
