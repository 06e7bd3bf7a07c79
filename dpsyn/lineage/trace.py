"""Trace a synthetic file, a row or a code back through the lineage ledger.

Evidence, strongest first:

0. the file's SHA-256 equal to a recorded release's (``known_release``);
1. the per-record mark of the ``_wm`` column: its code re-verified with the key
   of its key id, and each row's tag re-computed from the row's own values, so a
   code pasted onto other rows is told apart (``copied``; a code that no release
   of ours carries is reported as not ours);
2. the same mark after the invisible U+2063 separator of text cells, when
   ``_wm`` was dropped;
3. the statistical watermark, when no code is left: it names the key that
   marked the data (and so the releases made with that key), with a p-value.

:attr:`FileTrace.verdict` says which held (``dpsyn.lineage.models.VERDICTS``).
"""

from __future__ import annotations

import logging
from pathlib import Path

import pandas as pd

from dpsyn.errors import InputError, SchemaError
from dpsyn.lineage.ledger import Ledger
from dpsyn.lineage.models import CodeTrace, FileTrace, Lineage, Release
from dpsyn.schema import ColumnKind, TableSchema
from dpsyn.watermark import (
    DEFAULT_ALPHA,
    DEFAULT_GRID,
    WM_COLUMN,
    WatermarkKey,
    detect_statistical,
    load_keys,
    record_code,
    split_mark,
    text_codes,
    verify_rows,
)

__all__ = ["read_any", "record_release", "trace_code", "trace_file", "verify_file"]

logger = logging.getLogger(__name__)

_PARQUET = (".parquet", ".pq")
MAX_CODES = 100  # distinct codes reported for one file


def record_release(release: Release, *, url: str | None = None) -> str:
    """Store ``release`` in the ledger at ``url`` (default ``$DPSYN_HOME/lineage.db``) in one transaction."""
    return Ledger(url).record(release)


def read_any(path: str | Path) -> pd.DataFrame:
    """A CSV or Parquet file as it is (CSV cells as strings; empty cells missing)."""
    p = Path(path)
    if not p.exists():
        raise InputError(f"file not found: {p}")
    if p.is_dir():
        raise InputError(f"path is a folder, not a file: {p}")
    if p.stat().st_size == 0:
        raise InputError(f"file is empty: {p}")
    if p.suffix.lower() in _PARQUET:
        try:
            return pd.read_parquet(p)
        except Exception as e:  # pyarrow raises many types; none carry cell values
            raise InputError(f"cannot read {p.name} as Parquet ({type(e).__name__})") from None
    try:
        return pd.read_csv(p, dtype=str, keep_default_na=False, na_values=[""], encoding="utf-8")
    except UnicodeDecodeError:
        raise InputError(f"file is not UTF-8 text: {p}") from None
    except (pd.errors.ParserError, pd.errors.EmptyDataError, ValueError) as e:
        raise InputError(f"cannot read {p.name} as CSV ({type(e).__name__})") from None


def _keys(keys: list[WatermarkKey] | None) -> list[WatermarkKey]:
    return load_keys() if keys is None else list(keys)


def trace_code(code: str, *, ledger: Ledger | None = None, keys: list[WatermarkKey] | None = None) -> CodeTrace:
    """What one per-record code traces to, re-verified with the key of its key id when that key is here."""
    code = str(code).strip()
    parts = split_mark(code)
    if parts is None:
        return CodeTrace(code=code[:64], status="malformed")
    code = parts[0]
    lin = (ledger or Ledger()).get(code)
    if lin is None:
        return CodeTrace(code=code, status="not_ours")
    r = lin.release
    key = next((k for k in _keys(keys) if k.key_id == r.key_id), None)
    if key is None:
        return CodeTrace(code=code, status="recorded", lineage=lin)
    ok = record_code(key, batch_id=r.batch.batch_id, run_id=r.model.run_id, timestamp=r.timestamp) == code
    return CodeTrace(code=code, status="verified" if ok else "mismatch", lineage=lin)


def _marks(frame: pd.DataFrame) -> tuple[str, pd.Series]:
    """Where marks were found ('_wm', 'text' or '') and each marked row's mark (index: the frame's rows)."""
    for where, series in ((WM_COLUMN, frame[WM_COLUMN] if WM_COLUMN in frame.columns else None),
                          ("text", text_codes(frame))):
        if series is None:
            continue
        s = series.astype("string").str.strip().dropna()
        s = s[s != ""]
        if len(s):
            return where, s
    return "", pd.Series([], dtype="string")


def _check_rows(trace: CodeTrace, frame: pd.DataFrame, tags: list[str | None], keys: list[WatermarkKey]) -> CodeTrace:
    """A verified code's rows checked against their content: ``content_mismatch`` when any row's tag is not the
    one its values give (a code pasted onto other rows, or edited rows)."""
    if trace.status != "verified":
        return trace
    key = next(k for k in keys if k.key_id == trace.lineage.release.key_id)
    ok = sum(verify_rows(key, trace.code, tags, frame))
    return trace.model_copy(update={"rows_verified": ok,
                                    "status": "verified" if ok == len(frame) else "content_mismatch"})


def _schema_candidates(schema: str | TableSchema | None, ledger: Ledger, columns) -> list[tuple[str, TableSchema]]:
    from dpsyn.schema import list_builtin_schemas, load_schema

    if isinstance(schema, TableSchema):
        named = [(schema.name, schema)]
    elif schema is not None:
        named = [(str(schema), load_schema(schema))]
    else:
        named = []
        for name in ledger.schemas() or list_builtin_schemas():
            try:
                named.append((name, load_schema(name)))
            except SchemaError:
                continue
    cols = set(map(str, columns))
    out = []
    for name, s in named:
        marked = [c for c in s.columns if c.name in cols and c.name != s.target
                  and c.kind in (ColumnKind.numeric, ColumnKind.categorical)]
        if marked or schema is not None:
            out.append((name, s))
    return out


def _statistical(df: pd.DataFrame, schema, ledger: Ledger, keys: list[WatermarkKey], alpha: float,
                 grid: int) -> tuple[dict | None, str | None]:
    """The best statistical test over candidate schemas and keys (p-value adjusted over both)."""
    candidates = _schema_candidates(schema, ledger, df.columns)
    if not candidates or not keys:
        return None, None
    results = [(name, detect_statistical(df, s, keys, alpha=alpha, grid=grid)) for name, s in candidates]
    name, best = min(results, key=lambda t: t[1].p_value)
    p = min(1.0, best.p_value * len(results))
    best = best.model_copy(update={"p_value": p, "detected": p < alpha, "key_id": best.best_key_id if p < alpha
                                   else None})
    return best.model_dump(), name


def trace_file(
    path: str | Path,
    row: int | None = None,
    *,
    ledger: Ledger | None = None,
    keys: list[WatermarkKey] | None = None,
    schema: str | TableSchema | None = None,
    alpha: float = DEFAULT_ALPHA,
    grid: int = DEFAULT_GRID,
    statistical: str = "fallback",
) -> FileTrace:
    """The lineage of a CSV/Parquet file, or of its row ``row`` (0-based, as in the file's data rows).

    Reads ``_wm`` or, if it was dropped, the code after U+2063 in text cells.
    ``statistical="fallback"`` runs the statistical test only when no code of
    ours is found; ``"always"`` runs it anyway (``verify``). The statistical
    test needs a schema: ``schema``, else those of recorded runs, else the
    shipped ones (its p-value is adjusted over the schemas and keys tried).
    """
    from dpsyn.io import file_sha256

    ledger = ledger or Ledger()
    keys = _keys(keys)
    df = read_any(path)
    if row is not None and not 0 <= row < len(df):
        raise InputError(f"--row {row} is out of range: the file has {len(df)} data row(s) (rows count from 0)")
    sha = file_sha256(path)
    exact = ledger.by_sha256(sha)
    frame = df.iloc[[row]] if row is not None else df
    where, marks = _marks(frame)
    parts = marks.map(split_mark)
    codes = pd.Series([p[0] if p else str(m)[:64] for p, m in zip(parts, marks, strict=True)], index=marks.index)
    traces = []
    for code, n in codes.value_counts().head(MAX_CODES).items():
        t = trace_code(code, ledger=ledger, keys=keys)
        idx = codes.index[codes == code]
        t = _check_rows(t, frame.loc[idx], [parts[i][1] if parts[i] else None for i in idx], keys)
        traces.append(t.model_copy(update={"rows": int(n), "where": "_wm" if where == WM_COLUMN else "text"}))
    ours = [t for t in traces if t.status in ("verified", "recorded")]
    stat, schema_used = None, None
    candidates: list[Lineage] = []
    if statistical == "always" or not ours:
        stat, schema_used = _statistical(df, schema, ledger, keys, alpha, grid)
        if stat and stat["detected"]:
            candidates = ledger.by_key(stat["key_id"], limit=20)
    method = ("record_code" if where == WM_COLUMN else "text_mark") if ours else (
        "statistical" if stat and stat["detected"] else "none")
    result = FileTrace(
        path=str(path), sha256=sha, rows=len(df), row=row, method=method,
        file_matches_release=exact[0].release.dataset.dataset_id if exact else None,
        codes=traces, statistical=stat, schema_used=schema_used, candidates=candidates,
    )
    result = result.model_copy(update={"verdict": result.decide()})
    return result.model_copy(update={"message": _message(result)})


def verify_file(path: str | Path, **kw) -> FileTrace:
    """Per-record codes checked against the ledger, and the statistical test run in any case."""
    return trace_file(path, statistical="always", **kw)


def _message(t: FileTrace) -> str:
    parts = []
    for c in t.codes[:5]:
        if c.status == "verified":
            parts.append(f"code {c.code} verified with key {c.lineage.release.key_id}, with the content of its "
                         f"{c.rows} row(s)")
        elif c.status == "content_mismatch":
            parts.append(f"code {c.code} is ours, but {c.rows - (c.rows_verified or 0)} of its {c.rows} row(s) do "
                         "not carry the content it was issued with: code present but content not verified (copied?)")
        elif c.status == "recorded":
            parts.append(f"code {c.code} is recorded (key {c.lineage.release.key_id} not available to re-verify it)")
        elif c.status == "mismatch":
            parts.append(f"code {c.code} is recorded but does not verify: the ledger entry was altered")
        elif c.status == "not_ours":
            parts.append(f"code {c.code} is not ours (no release carries it)")
        else:
            parts.append("a malformed code")
    if len(t.codes) > 5:
        parts.append(f"{len(t.codes) - 5} more code(s)")
    s = t.statistical
    if s is not None:
        lead = "" if t.codes else "no per-record code; "
        if s["detected"]:
            parts.append(f"{lead}statistical watermark matched key {s['key_id']}, p={s['p_value']:.3g}"
                         f" ({s['units']} units, {s['n_values']} values)")
        else:
            parts.append(f"{lead}no statistical watermark found (p={s['p_value']:.3g})")
    elif not t.codes:
        parts.append("no per-record code, and no schema or key to run the statistical test")
    return "; ".join(parts)
