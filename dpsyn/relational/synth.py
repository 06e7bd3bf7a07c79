"""The relational synthesizer: persons first, then each person's child rows drawn given the person.

Fit (every read of the private tables is a Gaussian mechanism at the person level; docs/privacy.md
"Related tables"):

1. Persons get secret dense codes from the persons' table key; a child row whose foreign key names no person is
   dropped (it cannot be attributed); each person's rows of a child table are bounded to that table's public
   ``max_rows_per_person`` by a person-local random rule (:func:`dpsyn.privacy.unit.bound_contributions`).
2. Text columns declared ``select`` get a domain by DP partition selection (:mod:`dpsyn.privacy.selection`); other
   values become the public ``__other__`` token.
3. The persons' table, with one column per child table holding the person's (bounded) number of rows of it
   (``n_<table>``, public bins ``count_bins``), is fitted by the marginal backbone ``pgm``: one row per person, so
   its row-level releases are person-level.
4. Each child table, joined with the person columns it is drawn given (``condition_on``), is fitted by ``pgm``
   with the child's privacy unit (the foreign key, bound k): person-weighted counts, person-level sensitivity.

Budget: one Gaussian-equivalent budget for the whole run (σ_total: the single Gaussian mechanism that alone
spends the run's ε at its δ) is split by a public rule into shares w of 1/σ_total² (selection, persons, each
child). Every component runs against a sub-accountant whose target ε is that of the single Gaussian with σ_total/√w,
and every mechanism the components record is copied into the run's accountant (already at the person level), which
composes the whole history and checks it. All components are full-batch Gaussian mechanisms (the backbones' task
models are off), whose composition is exactly Gaussian with 1/σ² summed, so the shares add up to at most the
run's budget; :meth:`PrivacyAccountant.check` is the proof that counts.

Sample (post-processing): persons from the persons' model with fresh ids; for each person as many rows of each
child table as their synthetic ``n_<table>`` says, drawn from a pool of the child model's rows whose person
columns match the person's (falling back to fewer columns, then to the whole pool, when no pool row matches).
Foreign keys are the synthetic persons' ids, so referential integrity holds by construction.
"""

from __future__ import annotations

import logging
import math
from typing import Any

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, model_validator

from dpsyn.encoding import DiscreteEncoder
from dpsyn.errors import ConfigError, NotFittedError
from dpsyn.privacy import NoiseSource, PrivacyAccountant, PrivacyConfig, derive_seed, gaussian_epsilon
from dpsyn.privacy.selection import OTHER, select_values
from dpsyn.privacy.unit import bound_contributions, person_codes
from dpsyn.progress import report
from dpsyn.relational.schema import ChildTable, DatasetSchema, modelled
from dpsyn.schema import Column, ColumnKind, PrivacyUnit, TableSchema, Tier

__all__ = ["RelationalConfig", "RelationalSynthesizer", "budget_shares", "create_relational",
           "list_relational_synthesizers", "register_relational_synthesizer"]

logger = logging.getLogger(__name__)

TOTAL_LABEL = "relational.total"
#: Share of the run's δ set aside for the gate's count lower bounds (split over the tables).
GATE_TAIL = 0.1


class RelationalConfig(BaseModel):
    """Public settings of the relational synthesizer (never tuned on private data)."""

    model_config = ConfigDict(extra="forbid")
    selection_share: float = Field(default=0.1, gt=0, lt=0.5,
                                   description="share of the budget (of 1/σ²) for each selected text column")
    selection_tail: float = Field(default=0.25, gt=0, le=0.5,
                                  description="fraction of δ reserved for all selections' thresholds together")
    persons_share: float | None = Field(default=None, gt=0, lt=1,
                                        description="share of what selection leaves for the persons' table (the "
                                                    "rest in equal parts to the child tables); default: every "
                                                    "component in proportion to its modelled columns")
    pool_factor: int = Field(default=4, ge=1, le=100,
                             description="child rows drawn per needed row before matching rows to persons")
    backbone: dict[str, Any] = Field(default_factory=dict, description="pgm settings for every component")

    @model_validator(mode="after")
    def _check(self) -> RelationalConfig:
        if str(self.backbone.get("task", "off")) != "off":
            raise ValueError("backbone.task must be off: the budget split assumes full-batch Gaussian components")
        return self


def budget_shares(dataset: DatasetSchema, cfg: RelationalConfig, gate_share: float = 0.0) -> dict[str, float]:
    """The public split of the run's budget (shares of 1/σ_total², summing to 1): ``gate_share`` for the
    validation gate in equal parts per table (``gate.<table>``: :mod:`dpsyn.relational.gate`), a fixed share per
    selected column, then the rest split over the components (the persons' table, each child table) in proportion
    to the columns each models (:func:`component_columns`): each component's one-way release has L2 sensitivity
    √(its columns), so this gives the columns of all components about the same one-way noise (each pgm still splits
    its own share, and a child's person-level counts carry its own weight). A ``persons_share`` in
    the config replaces the rule (the persons' table gets that share, the child tables equal parts of the rest)."""
    if not 0 <= gate_share < 0.5:
        raise ConfigError(f"the gate's share of the budget must be in [0, 0.5), got {gate_share}")
    shares = {f"gate.{t}": gate_share / len(dataset.tables()) for t in dataset.tables()} if gate_share else {}
    shares |= {f"select.{c.name}.{col}": cfg.selection_share * (1 - gate_share)
               for c in dataset.children for col in c.ref.select}
    rest = 1.0 - sum(shares.values())
    if rest <= 0.2:
        raise ConfigError("selection shares leave too little budget: lower selection_share")
    if cfg.persons_share is not None:
        shares[dataset.root.name] = rest * cfg.persons_share
        for c in dataset.children:
            shares[c.name] = rest * (1 - cfg.persons_share) / len(dataset.children)
        return shares
    cols = component_columns(dataset)
    for name, d in cols.items():
        shares[name] = rest * d / sum(cols.values())
    return shares


def component_columns(dataset: DatasetSchema) -> dict[str, int]:
    """How many columns each component's model has (public: read from the schemas): the persons' table's modelled
    columns, one rows-per-person column per child, its person flags and the target's 'known' column; each child's
    modelled and selected columns and the person columns it is drawn given."""
    root = sum(modelled(c) for c in dataset.root_schema.columns) + len(dataset.children)
    root += sum(len(c.flag_columns()) for c in dataset.children) + (dataset.target_known_column is not None)
    out = {dataset.root.name: root}
    for c in dataset.children:
        own = sum(1 for x in c.schema_.columns
                  if x.name in c.ref.select or (modelled(x) and x.name != c.ref.foreign_key))
        out[c.name] = own + len(c.ref.condition_on)
    return out


def _count_column(child: ChildTable) -> Column:
    edges = child.count_edges()
    return Column(name=child.count_column, kind=ColumnKind.numeric, bounds=(0.0, float(child.k)), integer=True,
                  bins=edges if len(edges) >= 3 else None, tier=Tier.L2,  # k = 1: one bin per value
                  description=f"rows of {child.name} per person (bounded to {child.k})")


def _binary_column(name: str, description: str) -> Column:
    return Column(name=name, kind=ColumnKind.categorical, domain=["0", "1"], tier=Tier.L2, description=description)


def _selected_column(name: str, domain: list[str], nullable: bool) -> Column:
    return Column(name=name, kind=ColumnKind.categorical, domain=list(domain) + [OTHER], nullable=nullable,
                  tier=Tier.L2)


#: Where the component models' numbers land inside their public bins: uniform, as the relational benchmarks were
#: measured (the single-table default, "shaped", was measured on single tables only: docs/synthesis.md).
WITHIN_BIN = "uniform"


class RelationalSynthesizer:
    """Synthesizes a dataset of related tables (module docstring); ``fit(tables, dataset)``, ``sample(n)``."""

    name = "relational"

    def __init__(self, config: RelationalConfig | dict | None = None, *, privacy: PrivacyConfig | dict | None = None):
        try:
            self.config = config if isinstance(config, RelationalConfig) else RelationalConfig(**(config or {}))
        except Exception as e:
            raise ConfigError(f"invalid relational config: {e}") from None
        self.privacy = privacy if isinstance(privacy, PrivacyConfig) else PrivacyConfig(**(privacy or {}))

    # -- fit ---------------------------------------------------------------------------------
    def fit(self, tables: dict[str, pd.DataFrame], dataset: DatasetSchema, *,
            accountant: PrivacyAccountant | None = None, gate_share: float = 0.0) -> RelationalSynthesizer:
        """Fit on the private tables (name → frame, as :func:`dpsyn.relational.read_dataset` returns them;
        not modified). ``gate_share`` of the budget is left for :func:`dpsyn.relational.gate_dataset` (its count
        lower bounds' tail δ reserved here, before any mechanism). Returns ``self``."""
        from dpsyn.synth import create

        missing = [t for t in dataset.tables() if t not in tables]
        if missing:
            raise ConfigError(f"dataset '{dataset.name}' needs the tables {', '.join(missing)}")
        cfg, priv = self.config, self.privacy
        if accountant is None:
            delta = priv.resolved_delta(dataset.root_schema.population_size)
            accountant = PrivacyAccountant(epsilon=priv.epsilon, delta=delta, accountant=priv.accountant,
                                           unit=dataset.unit, relation=dataset.relation())
        noise = NoiseSource(secure=priv.secure_rng, seed=derive_seed(priv.noise_seed, "relational"))
        self.dataset_ = dataset
        shares = budget_shares(dataset, cfg, gate_share)
        n_select = sum(len(c.ref.select) for c in dataset.children)
        if n_select:
            accountant.reserve_tail(cfg.selection_tail * accountant.delta)
        self.gate_z_ = None
        if gate_share:  # the gate's count lower bounds: each fails with probability ≤ its part of the tail
            from scipy.stats import norm

            accountant.reserve_tail(GATE_TAIL * accountant.delta)
            self.gate_z_ = float(norm.isf(GATE_TAIL * accountant.delta / len(dataset.tables())))
        sigma_total = accountant.calibrate(sample_rate=1.0, steps=1, label=TOTAL_LABEL, person_level=True)
        self.shares_ = shares
        self.sigma_total_ = sigma_total

        # 1. persons and their codes; bounded children
        root_df, root_codes, children = bound_tables(tables, dataset, noise)

        # 2. DP selection of the declared text columns' domains
        self.domains_: dict[str, dict[str, list[str]]] = {}
        for c in dataset.children:
            df, pc = children[c.name]
            for col, spec in c.ref.select.items():
                label = f"select.{c.name}.{col}"
                sigma = sigma_total / math.sqrt(shares[label])
                dom = select_values(_text(df[col]), pc, max_per_person=spec.max_per_person, max_values=spec.max_values,
                                    sigma=sigma, tail_delta=cfg.selection_tail * accountant.delta / n_select,
                                    accountant=accountant, noise=noise, label=label)
                self.domains_.setdefault(c.name, {})[col] = dom

        # 3. the persons' table with rows-per-person columns
        root_schema = self._root_schema(dataset)
        frame = root_frame(dataset, root_df, root_codes, {c: pc for c, (_, pc) in children.items()})
        frame = person_summaries(dataset, frame, root_codes, children)
        self.root_schema_ = root_schema
        self.root_model_ = self._fit_component(create, frame, root_schema, dataset.root.name, sigma_total,
                                               accountant, unit=None)
        report("dataset: tables fitted", 1, 1 + len(dataset.children))

        # 4. each child joined with the person columns it is drawn given
        self.child_schemas_: dict[str, TableSchema] = {}
        self.child_models_: dict[str, Any] = {}
        for c in dataset.children:
            df, pc = children[c.name]
            schema = self._child_schema(dataset, c)
            joined = self.child_frame(c, df, pc, root_df, root_codes)
            self.child_schemas_[c.name] = schema
            self.child_models_[c.name] = self._fit_component(create, joined, schema, c.name, sigma_total,
                                                             accountant, unit=(c.ref.foreign_key, c.k))
            report("dataset: tables fitted", 1 + len(self.child_models_), 1 + len(dataset.children))
        accountant.check()
        self.privacy_ = accountant.summary()
        self.accountant_ = accountant
        return self

    def _fit_component(self, create, frame: pd.DataFrame, schema: TableSchema, name: str, sigma_total: float,
                       accountant: PrivacyAccountant, *, unit: tuple[str, int] | None):
        """Fit ``pgm`` on one component against its share, and charge its mechanisms to ``accountant``."""
        share = self.shares_[name]
        eps = gaussian_epsilon(sigma_total / math.sqrt(share), delta=accountant.mechanism_delta,
                               accountant=accountant.name)
        kw = {} if unit is None else {"unit": unit[0], "rows_per_unit": unit[1]}
        sub = PrivacyAccountant(epsilon=eps, delta=accountant.mechanism_delta, accountant=accountant.name, **kw)
        backbone = {**self.config.backbone, "task": "off"}
        privacy = self.privacy.model_copy(update={"epsilon": eps, "delta": accountant.mechanism_delta,
                                                  "noise_seed": derive_seed(self.privacy.noise_seed, name)})
        model = create("pgm", backbone, privacy=privacy)
        model.fit(frame, schema, accountant=sub)
        if sub.tail_delta:  # the split below composes Gaussians only: a component's tail would be unaccounted
            raise ConfigError(f"component {name} reserved a tail δ; the relational budget split cannot carry it")
        for m in sub.ledger:  # already at the person level (the sub-accountant converted row-level ones)
            accountant.record(f"{name}.{m.label}", noise_multiplier=m.noise_multiplier, sample_rate=m.sample_rate,
                              steps=m.steps, person_level=True)
        logger.info("relational: fitted %s (share %.3f of the budget)", name, share)
        return model

    def _root_schema(self, dataset: DatasetSchema) -> TableSchema:
        s = dataset.root_schema
        cols = [c for c in s.columns if modelled(c) or c.name == dataset.person.key]
        cols += [_count_column(c) for c in dataset.children]
        cols += [_binary_column(name, f"whether the person has a {c.name} row whose {c.ref.person_flags.column} "
                                      f"matches '{flag}'")
                 for c in dataset.children for name, flag in c.flag_columns().items()]
        known, target = dataset.target_known_column, dataset.target
        if known is not None:
            cols.append(_binary_column(known, f"whether the person's {dataset.target} is known"))
            target = known
        return s.model_copy(update={"name": f"{dataset.name}.{dataset.root.name}", "columns": cols,
                                    "privacy_unit": None, "target": target if target is not None else s.target})

    def _child_schema(self, dataset: DatasetSchema, c: ChildTable) -> TableSchema:
        s = c.schema_
        cols = []
        for col in s.columns:
            if col.name in c.ref.select:
                spec = c.ref.select[col.name]
                dom = self.domains_[c.name][col.name]
                cols.append(_selected_column(col.name, dom + [x for x in _labels(c, col.name) if x not in dom],
                                             spec.nullable))
            elif modelled(col) or col.name == c.ref.foreign_key:
                cols.append(col)
        cols += [dataset.root_schema.column(x) for x in c.ref.condition_on]
        return TableSchema(name=f"{dataset.name}.{c.name}", population=dataset.population, columns=cols,
                           privacy_unit=PrivacyUnit(column=c.ref.foreign_key, max_rows_per_person=c.k))

    def child_frame(self, c: ChildTable, df: pd.DataFrame, pc: np.ndarray, root_df: pd.DataFrame,
                    root_codes: np.ndarray) -> pd.DataFrame:
        """The child rows as the child model sees them: selected text columns mapped to the released domain (else
        ``__other__``), the person's code as the unit column, and the person columns ``condition_on``."""
        out = pd.DataFrame(index=pd.RangeIndex(len(df)))
        for col in c.schema_.columns:
            if col.name in c.ref.select:
                dom = set(self.domains_[c.name][col.name])
                s = _text(df[col.name])
                other = s.notna() & ~s.isin(dom)
                labels = _labels(c, col.name)
                if labels:  # a value outside the domain that falls in a flag's category: the category's label
                    hits = _flag_hits(s, c.ref.person_flags)
                    first = np.where(hits.any(axis=1), hits.argmax(axis=1), -1)
                    use = other.to_numpy() & (first >= 0)
                    s = s.copy()
                    s[use] = np.asarray(labels, dtype=object)[first[use]]
                    other = other & ~pd.Series(use, index=s.index)
                s = s.where(~other, OTHER)
                if not c.ref.select[col.name].nullable:
                    s = s.fillna(OTHER)
                out[col.name] = s
            elif modelled(col):
                out[col.name] = _naive(df[col.name]) if col.kind == ColumnKind.datetime else df[col.name]
        # a person's code, as text: the child's privacy unit column (raw ids never reach the model)
        out[c.ref.foreign_key] = pd.Series(pc, dtype="int64").astype("string")
        position = np.empty(int(root_codes.max()) + 1 if len(root_codes) else 0, dtype=np.int64)
        position[root_codes] = np.arange(len(root_codes))
        for x in c.ref.condition_on:
            v = root_df[x].iloc[position[pc]].reset_index(drop=True)
            out[x] = _naive(v) if pd.api.types.is_datetime64_any_dtype(v) else v
        return out

    # -- sample ------------------------------------------------------------------------------
    def sample(self, n_persons: int | None = None, *, random_state: int | np.random.Generator | None = None,
               rules: dict[str, Any] | None = None) -> dict[str, pd.DataFrame]:
        """Synthetic tables (name → frame): ``n_persons`` persons (default: the released noisy number of persons)
        and their child rows. ``rules``: per child table, a :class:`~dpsyn.validation.rules.RuleSet` whose hard
        rules its rows must hold joined with their person's columns (``condition_on``; a rule across the tables,
        e.g. a pregnancy condition only for a female patient): pool rows that break one are never drawn, and a
        row that breaks one with the person it went to (matched on fewer columns) is left out. Post-processing
        only: the model's rows and the public rules, no real row."""
        if not hasattr(self, "root_model_"):
            raise NotFittedError("RelationalSynthesizer is not fitted; call fit(tables, dataset) first")
        rng = random_state if isinstance(random_state, np.random.Generator) else np.random.default_rng(random_state)
        ds = self.dataset_
        n = int(self.root_model_.public_rows_ if n_persons is None else n_persons)
        if n < 0:
            raise ConfigError("n_persons must be ≥ 0")
        persons = self.root_model_.sample(n, random_state=rng, within_bin=WITHIN_BIN).reset_index(drop=True)
        if ds.target_known_column is not None:
            persons[ds.target] = _agree_with_known(persons[ds.target], persons[ds.target_known_column], rng)
        ids = pd.Series([f"p{x:012x}" for x in rng.choice(2**48, size=n, replace=False)], dtype="string")
        out: dict[str, pd.DataFrame] = {}
        for c in ds.children:
            counts = np.clip(np.rint(persons[c.count_column].to_numpy(dtype=np.float64)), 0, c.k).astype(np.int64)
            flags = c.flag_columns()
            if flags:
                wanted = persons[list(flags)].astype(str).eq("1").to_numpy()
                out[c.name] = self._sample_flagged_child(c, persons, ids, counts, wanted, rng, rules)
            else:
                out[c.name] = self._sample_child(c, persons, ids, counts, rng, rules)
        root_cols = [x.name for x in ds.root_schema.columns if modelled(x) or x.name == ds.person.key]
        persons[ds.person.key] = ids
        out[ds.root.name] = persons[root_cols]
        return {t: out[t] for t in ds.tables()}

    def _sample_child(self, c: ChildTable, persons: pd.DataFrame, ids: pd.Series, counts: np.ndarray,
                      rng: np.random.Generator, rules: dict[str, Any] | None = None) -> pd.DataFrame:
        model, schema = self.child_models_[c.name], self.child_schemas_[c.name]
        out_cols = [x.name for x in c.schema_.columns if x.name in schema.column_names and x.name != c.ref.foreign_key]
        total = int(counts.sum())
        if total == 0:
            empty = model.sample(0, random_state=rng, within_bin=WITHIN_BIN)
            frame = empty[out_cols].copy()
            frame.insert(0, c.ref.foreign_key, pd.Series([], dtype="string"))
            return frame[[x.name for x in c.schema_.columns if x.name in frame.columns]]
        pool, pool_level, person_level = self._pool(c, persons, total, rng, rules)
        need = np.repeat(np.arange(len(persons)), counts)
        chosen = np.full(len(need), -1, dtype=np.int64)
        for lv in range(pool_level.shape[1]):  # match on all person columns, then fewer, then none
            todo = np.flatnonzero(chosen < 0)
            if not len(todo):
                break
            groups = pd.Series(np.arange(len(pool))).groupby(pool_level[:, lv]).indices
            want = person_level[need[todo], lv]
            for key, idx in pd.Series(np.arange(len(todo))).groupby(want).indices.items():
                rows = groups.get(key)
                if rows is None:
                    continue
                chosen[todo[idx]] = rng.choice(rows, size=len(idx), replace=len(idx) > len(rows))
        need, chosen = self._complying(c, pool, persons, need, chosen, rules)
        frame = pool.iloc[chosen][out_cols].reset_index(drop=True)
        frame[c.ref.foreign_key] = ids.iloc[need].reset_index(drop=True)
        return frame[[x.name for x in c.schema_.columns if x.name in frame.columns]]

    def _breaks(self, c: ChildTable, frame: pd.DataFrame, rules: dict[str, Any] | None) -> np.ndarray | None:
        """Rows of ``frame`` (the child component's columns) that break one of ``c``'s hard rules; None without."""
        from dpsyn.validation.repair import broken_rows

        return broken_rows(frame, (rules or {}).get(c.name), self.child_schemas_[c.name])

    def _complying(self, c: ChildTable, pool: pd.DataFrame, persons: pd.DataFrame, need: np.ndarray,
                   chosen: np.ndarray, rules: dict[str, Any] | None) -> tuple[np.ndarray, np.ndarray]:
        """The drawn (person, pool row) pairs without those that break a hard rule once the row carries its
        person's ``condition_on`` values (a row matched on fewer person columns than all)."""
        cond = list(c.ref.condition_on)
        if not cond or not len(chosen):
            return need, chosen
        joined = pool.iloc[chosen].reset_index(drop=True)
        for col in cond:
            joined[col] = persons[col].iloc[need].to_numpy()
        bad = self._breaks(c, joined, rules)
        if bad is None or not bad.any():
            return need, chosen
        logger.info("relational: %d %s rows broke a hard rule with their person's columns and were left out",
                    int(bad.sum()), c.name)
        return need[~bad], chosen[~bad]

    def _pool(self, c: ChildTable, persons: pd.DataFrame, total: int, rng: np.random.Generator,
              rules: dict[str, Any] | None = None) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
        """A pool of the child model's rows for ``total`` needed rows, and the keys rows are matched to persons by:
        one column per level, all person columns ``condition_on`` first, then fewer, the last matching everything
        (pool rows × levels, persons × levels). Rows that break one of ``c``'s hard rules are left out of the pool
        (unless every row does)."""
        pool = self.child_models_[c.name].sample(max(self.config.pool_factor * total, 1000), random_state=rng,
                                                 within_bin=WITHIN_BIN).reset_index(drop=True)
        bad = self._breaks(c, pool, rules)
        if bad is not None and bad.any() and not bad.all():
            logger.info("relational: %d of %d pooled %s rows broke a hard rule and were left out", int(bad.sum()),
                        len(pool), c.name)
            pool = pool.loc[~bad].reset_index(drop=True)
        cond = list(c.ref.condition_on)
        enc = DiscreteEncoder(self.child_schemas_[c.name], columns=cond) if cond else None
        pool_keys = enc.encode(pool[cond]) if enc else np.zeros((len(pool), 0), dtype=np.int64)
        person_keys = enc.encode(_naive_frame(persons[cond])) if enc else np.zeros((len(persons), 0), dtype=np.int64)
        sizes = enc.sizes if enc else []
        levels = range(len(cond), -1, -1)
        return (pool, np.column_stack([_row_keys(pool_keys[:, :lv], sizes[:lv]) for lv in levels]),
                np.column_stack([_row_keys(person_keys[:, :lv], sizes[:lv]) for lv in levels]))

    def _sample_flagged_child(self, c: ChildTable, persons: pd.DataFrame, ids: pd.Series, counts: np.ndarray,
                              wanted: np.ndarray, rng: np.random.Generator,
                              rules: dict[str, Any] | None = None) -> pd.DataFrame:
        """A child table whose rows agree with the persons' flags (``wanted``: persons × declared flags): for each
        flag a person has, one row matching its pattern; then the person's other rows; no row matching a flag the
        person lacks. Rows come from a pool of the child model's rows, matched on the person columns
        ``condition_on`` (all, then fewer, then none) as :meth:`_sample_child` does. The person's number of rows is
        the sampled one (a person with fewer rows than flags meets a random subset of them); a flag no pool row
        matches is left unmet. Post-processing only."""
        total = int(counts.sum())
        if total == 0:
            return self._sample_child(c, persons, ids, counts, rng, rules)
        schema = self.child_schemas_[c.name]
        out_cols = [x.name for x in c.schema_.columns if x.name in schema.column_names and x.name != c.ref.foreign_key]
        pool, pool_level, person_level = self._pool(c, persons, total, rng, rules)
        hits = _flag_hits(pool[c.ref.person_flags.column], c.ref.person_flags)
        need_a, chosen_a = draw_flagged(hits, pool_level, person_level, counts, wanted, rng)
        need_a, chosen_a = self._complying(c, pool, persons, need_a, chosen_a, rules)
        frame = pool.iloc[chosen_a][out_cols].reset_index(drop=True)
        frame[c.ref.foreign_key] = ids.iloc[need_a].reset_index(drop=True)
        return frame[[x.name for x in c.schema_.columns if x.name in frame.columns]]

    def params(self) -> dict[str, Any]:
        """Settings to record (no data values)."""
        return {"synthesizer": self.name, **self.config.model_dump(), **self.privacy.model_dump(exclude={"noise_seed"})}

def bound_tables(tables: dict[str, pd.DataFrame], dataset: DatasetSchema, noise: NoiseSource
                 ) -> tuple[pd.DataFrame, np.ndarray, dict[str, tuple[pd.DataFrame, np.ndarray]]]:
    """The persons' rows with secret dense codes (a key that repeats is one person: one of its rows) and each
    child table's rows attributed to a person and bounded to its ``max_rows_per_person`` by a person-local random
    rule: (persons, their codes, {child: (rows, their persons' codes)}). A child row whose foreign key names no
    person is dropped (it cannot be attributed). Inside the trust boundary: nothing here is released."""
    root_df = tables[dataset.root.name]
    key = dataset.person.key
    codes = person_codes(root_df[key], noise)
    one = bound_contributions(codes, 1, noise)
    root_df, root_codes = root_df.loc[one].reset_index(drop=True), codes[one]
    keys = root_df[key].astype("string")
    known = keys.notna().to_numpy()  # a person without a key is a person of their own, with no child rows
    lookup = pd.Series(root_codes[known], index=keys[known].to_numpy())
    children: dict[str, tuple[pd.DataFrame, np.ndarray]] = {}
    for c in dataset.children:
        df = tables[c.name]
        pc = lookup.reindex(df[c.ref.foreign_key].astype("string").to_numpy()).to_numpy()
        known = ~pd.isna(pc)
        df, pc = df.loc[known].reset_index(drop=True), pc[known].astype(np.int64)
        keep = bound_contributions(pc, c.k, noise)
        children[c.name] = (df.loc[keep].reset_index(drop=True), pc[keep])
    return root_df, root_codes, children


def root_frame(dataset: DatasetSchema, root_df: pd.DataFrame, root_codes: np.ndarray,
               child_codes: dict[str, np.ndarray]) -> pd.DataFrame:
    """The persons' rows with one column per child table: how many (bounded) rows of it the person has."""
    frame = root_df.copy()
    for c in dataset.children:
        frame[c.count_column] = np.bincount(child_codes[c.name], minlength=len(root_df))[root_codes].astype(
            np.float64)
    return frame


def draw_flagged(hits: np.ndarray, pool_level: np.ndarray, person_level: np.ndarray, counts: np.ndarray,
                 wanted: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Pool rows for each person's child rows, agreeing with the person's flags: (person of each row, pool row).

    ``hits``: pool rows × flags (the row matches the flag's pattern); ``wanted``: persons × flags; ``counts``: rows
    per person (a person with fewer rows than wanted flags gets a random subset of them); ``pool_level`` /
    ``person_level``: one key per row and matching level, most specific first (the last level matches everything).
    For each wanted flag one row matching it, then the person's other rows; rows matching a flag the person lacks
    are never drawn unless no pool row avoids them; a wanted flag no row matches is left unmet. Each row is drawn at
    the most specific level with a candidate."""
    # the pool's rows by key at each level: a person's candidates are looked up in their own group, not the pool
    groups = [pd.Series(np.arange(len(hits))).groupby(pool_level[:, lv]).indices for lv in range(pool_level.shape[1])]

    def pick(ok, i: int, size: int) -> np.ndarray:
        """``size`` rows among those ``ok`` keeps, at the most specific level where there are any."""
        for lv, by_key in enumerate(groups):
            rows = by_key.get(person_level[i, lv])
            if rows is None:
                continue
            rows = rows[ok(rows)]
            if len(rows):
                return rng.choice(rows, size=size, replace=size > len(rows))
        return np.empty(0, dtype=np.int64)

    def everything(rows: np.ndarray) -> np.ndarray:
        return np.ones(len(rows), dtype=bool)

    need, chosen = [np.empty(0, dtype=np.int64)], [np.empty(0, dtype=np.int64)]
    for i in np.flatnonzero(counts):
        mine = wanted[i]
        lacks = ~mine

        def allowed(rows: np.ndarray, lacks=lacks) -> np.ndarray:  # no flag the person lacks
            return ~hits[rows][:, lacks].any(axis=1)

        got = []
        for j in rng.permutation(np.flatnonzero(mine))[:int(counts[i])]:
            row = pick(lambda r, j=j: allowed(r) & hits[r, j], i, 1)
            got.append(row if len(row) else pick(lambda r, j=j: hits[r, j], i, 1))
        got = np.concatenate(got) if got else np.empty(0, dtype=np.int64)
        rest = int(counts[i]) - len(got)
        if rest > 0:
            more = pick(allowed, i, rest)
            got = np.concatenate([got, more if len(more) else pick(everything, i, rest)])
        need.append(np.full(len(got), i, dtype=np.int64))
        chosen.append(got.astype(np.int64))
    return np.concatenate(need), np.concatenate(chosen)


def person_summaries(dataset: DatasetSchema, frame: pd.DataFrame, root_codes: np.ndarray,
                     children: dict[str, tuple[pd.DataFrame, np.ndarray]]) -> pd.DataFrame:
    """The persons' rows with the declared per-person flags of each child table (``"1"`` when any of the person's
    bounded rows matches the flag's pattern) and, for a nullable non-categorical target, whether it is known. Each
    is a function of one person's rows: the persons' table stays one row per person. Inside the trust boundary."""
    frame = frame.copy()
    size = max(len(frame), int(root_codes.max()) + 1 if len(root_codes) else 0)
    for c in dataset.children:
        if c.ref.person_flags is None:
            continue
        df, pc = children[c.name]
        hits = _flag_hits(df[c.ref.person_flags.column], c.ref.person_flags)
        for j, name in enumerate(c.flag_columns()):
            has = np.zeros(size, dtype=bool)
            has[pc[hits[:, j]]] = True
            frame[name] = np.where(has[root_codes], "1", "0")
    if dataset.target_known_column is not None:
        frame[dataset.target_known_column] = np.where(frame[dataset.target].notna(), "1", "0")
    return frame


def _labels(c: ChildTable, column: str) -> list[str]:
    """The public category labels a selected ``column`` of ``c`` takes beside its selected domain: one per person
    flag declared on that column (none otherwise)."""
    f = c.ref.person_flags
    return [f.label(k) for k in f.patterns] if f is not None and f.column == column else []


def _flag_hits(values: pd.Series, spec) -> np.ndarray:
    """rows × patterns: whether each row's value matches each of ``spec``'s patterns (missing matches none)."""
    text = _text(values)
    uniq = pd.unique(text.dropna())
    pats = list(spec.compiled().values())
    table = np.array([[bool(p.search(str(v))) for p in pats] for v in uniq], dtype=bool).reshape(len(uniq), len(pats))
    pos = pd.Index(uniq).get_indexer(text.fillna("\x00__missing__"))
    out = np.zeros((len(text), len(pats)), dtype=bool)
    found = pos >= 0
    out[found] = table[pos[found]]
    return out


def _agree_with_known(values: pd.Series, known: pd.Series, rng: np.random.Generator) -> pd.Series:
    """The target column made to agree with its sampled 'known' flag: missing where the flag is 0; where it is 1
    and the value came out missing, a value drawn from the synthetic persons whose value is known."""
    is_known = known.astype(str).eq("1").to_numpy()
    out = values.where(is_known)
    gap = np.flatnonzero(is_known & out.isna().to_numpy())
    donors = out.dropna().to_numpy()
    if len(gap) and len(donors):
        out.iloc[gap] = rng.choice(donors, size=len(gap))
    return out


def _text(s: pd.Series) -> pd.Series:
    """A text column's values, an empty field read as missing."""
    return s.astype("string").str.strip().replace("", pd.NA)


def _naive(s: pd.Series) -> pd.Series:
    """Datetimes without a time zone (Synthea writes UTC timestamps); the encoder bins naive datetimes."""
    s = pd.to_datetime(s, errors="coerce", utc=True)
    return s.dt.tz_convert(None)


def _naive_frame(df: pd.DataFrame) -> pd.DataFrame:
    return df.apply(lambda s: _naive(s) if pd.api.types.is_datetime64_any_dtype(s) else s)


def _row_keys(a: np.ndarray, sizes: list[int]) -> np.ndarray:
    """One integer per row of codes (the codes' mixed-radix index over the columns' public sizes)."""
    if a.shape[1] == 0:
        return np.zeros(len(a), dtype=np.int64)
    return np.ravel_multi_index(tuple(a.T), sizes)


#: Name-keyed registry of dataset synthesizers (``fit(tables, dataset)``, ``sample(n_persons)``): a contract of
#: their own, beside the single-table registry of dpsyn.synth.
_REGISTRY: dict[str, type] = {"relational": RelationalSynthesizer}


def register_relational_synthesizer(name: str, cls: type, *, force: bool = False) -> None:
    if name in _REGISTRY and not force:
        raise ValueError(f"dataset synthesizer '{name}' is already registered (pass force=True to replace it)")
    _REGISTRY[name] = cls


def list_relational_synthesizers() -> list[str]:
    return sorted(_REGISTRY)


def create_relational(name: str, config=None, **kwargs):
    """A new, unfitted dataset synthesizer ``name``."""
    from dpsyn.errors import UnknownComponentError

    if name not in _REGISTRY:
        raise UnknownComponentError(f"unknown dataset synthesizer '{name}'; choose one of: "
                                    f"{', '.join(list_relational_synthesizers())}")
    return _REGISTRY[name](config, **kwargs)
