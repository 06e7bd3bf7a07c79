"""The one contract every synthesizer follows.

``__init__`` only stores settings; ``fit(df, schema) -> self`` runs in
phases (check input, build the public encoder, ``_fit``); learned state lives
in attributes ending in ``_``; ``sample(n, *, random_state=None)`` returns a
frame that conforms to the schema. A fitted synthesizer holds no reference to
the training rows.

Privacy: ``fit`` charges a :class:`~dpsyn.privacy.PrivacyAccountant`. Pass
the run's accountant to compose with other mechanisms of the run (the
validation gate, for example); without one, the synthesizer creates its own
for ``privacy.epsilon`` and ``privacy.delta``. Every quantity that depends on
the number of rows (sample rates, step counts) is computed from a public row
count, ``public_rows_``: the run's released noisy count (``rows``), or, when
``fit`` is not given one, a noisy count the synthesizer releases itself on the
accountant. ``len(df)`` is never used for anything that shapes a release.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from pydantic import BaseModel

from dpsyn.encoding import DiscreteEncoder
from dpsyn.errors import ConfigError, NotFittedError
from dpsyn.privacy import (
    NoiseSource,
    NoisyCounts,
    PrivacyAccountant,
    PrivacyConfig,
    derive_seed,
    plan_counts,
    release_counts,
)
from dpsyn.privacy.unit import (
    assign_fresh_ids,
    bound_table,
    plan_unit_sizes,
    release_unit_sizes,
    unit_sizes,
)
from dpsyn.schema import ColumnKind, TableSchema

__all__ = ["Synthesizer"]

logger = logging.getLogger(__name__)


class Synthesizer(ABC):
    """Base class: subclasses set ``name`` and implement ``_fit`` and ``_sample_codes``."""

    name: ClassVar[str] = ""
    config_class: ClassVar[type[BaseModel]]

    def __init__(self, config: BaseModel | dict | None = None, *, privacy: PrivacyConfig | dict | None = None):
        if isinstance(config, dict) or config is None:
            try:
                config = self.config_class(**(config or {}))
            except Exception as e:
                raise ConfigError(f"invalid {self.name} config: {e}") from None
        self.config = config
        self.privacy = privacy if isinstance(privacy, PrivacyConfig) else PrivacyConfig(**(privacy or {}))

    # -- public API -----------------------------------------------------------------------
    def fit(self, df: pd.DataFrame, schema: TableSchema, *, accountant: PrivacyAccountant | None = None,
            rows: NoisyCounts | None = None):
        """Fit on the private rows ``df`` (already scrubbed and masked). Returns ``self``.

        ``rows``: the run's released noisy counts (its ``"train"`` group is ``df``'s rows); without it the
        synthesizer releases a noisy count of ``df`` on ``accountant`` first (label ``<name>.rows``).
        """
        if len(df) == 0:
            raise ConfigError("cannot fit on an empty table")
        schema.require_synthesizable()
        self.schema_ = schema
        if accountant is None:
            delta = self.privacy.resolved_delta(schema.population_size)
            accountant = PrivacyAccountant(epsilon=self.privacy.epsilon, delta=delta, accountant=self.privacy.accountant,
                                           **schema.unit_kwargs())
        self.noise_ = NoiseSource(secure=self.privacy.secure_rng, seed=derive_seed(self.privacy.noise_seed, self.name))
        persons = None
        if schema.privacy_unit is not None:
            df, persons = self._bounded(df, schema, accountant)
        self.encoder_ = DiscreteEncoder(schema)
        codes = self.encoder_.encode(df)
        if rows is None:
            label = f"{self.name}.rows"
            plan = plan_counts(accountant, self.privacy.count_share, lower_bounds=False, label=label)
            sizes_sigma = plan_unit_sizes(accountant, self.privacy.count_share) if persons is not None else None
            rows = release_counts({"train": len(df)}, plan, accountant=accountant, noise=self.noise_, label=label)
            if persons is not None:
                rows = rows.with_unit_sizes(release_unit_sizes(
                    unit_sizes(persons, schema.privacy_unit.max_rows_per_person), sizes_sigma,
                    accountant=accountant, noise=self.noise_))
        elif persons is not None and rows.unit_sizes is None:
            raise ConfigError("a person-level fit needs the rows-per-person release beside the counts "
                              "(NoisyCounts.with_unit_sizes), or no counts at all")
        self.unit_sizes_ = rows.unit_sizes  # DP: the synthetic persons' row counts follow it
        self.public_rows_ = rows.estimate("train")  # public (DP): every size-dependent setting comes from it
        self.public_rows_std_ = float(rows.noise_std)  # public: the noise std of that count
        if persons is not None:
            self.unit_scale_, self.row_weights_ = self._person_weights(persons, accountant.rows_per_unit)
        self.persons_ = persons
        try:
            self._fit(codes, accountant=accountant)
        finally:
            self.row_weights_ = None  # private (a function of who has how many rows): never part of the model
            self.persons_ = None  # private: who has which row
        self.noise_ = None  # a noise source is not part of the fitted model
        accountant.check()
        self.privacy_ = accountant.summary()
        return self

    def sample(self, n: int, *, random_state: int | np.random.Generator | None = None,
               within_bin: str = "shaped") -> pd.DataFrame:
        """``n`` synthetic rows with the schema's output columns (post-processing: no privacy cost).
        ``within_bin``: where a number lands inside its public bin (``DiscreteEncoder.decode``): ``"shaped"``
        (default) by the sampled codes' own bin counts, so a wide tail bin decays from its denser neighbour, or
        ``"uniform"``."""
        if not hasattr(self, "encoder_"):
            raise NotFittedError(f"{type(self).__name__} is not fitted; call fit(df, schema) first")
        if n < 0:
            raise ConfigError("n must be ≥ 0")
        rng = random_state if isinstance(random_state, np.random.Generator) else np.random.default_rng(random_state)
        codes = self._sample_codes(n, rng=rng)
        out = self.encoder_.decode(codes, rng=rng, within_bin=within_bin)
        return self._finish(out, rng=rng)

    def _bounded(self, df: pd.DataFrame, schema: TableSchema,
                 accountant: PrivacyAccountant) -> tuple[pd.DataFrame, np.ndarray]:
        """``df`` with at most the unit's bound of rows per person, and the kept rows' person codes."""
        unit = schema.privacy_unit
        coins = NoiseSource(secure=self.privacy.secure_rng, seed=derive_seed(self.privacy.noise_seed, "unit"))
        if accountant.rows_per_unit != unit.max_rows_per_person or accountant.unit != unit.column:
            raise ConfigError(f"the accountant's privacy unit ({accountant.neighbouring}) is not the schema's "
                              f"({unit.column}, at most {unit.max_rows_per_person} rows per person)")
        return bound_table(df, unit.column, unit.max_rows_per_person, coins,
                           table=f"the table of schema '{schema.name}'")

    def _person_weights(self, persons: np.ndarray, k: int) -> tuple[float, np.ndarray]:
        """(c, per-row weights c / n_i) for a synthesizer that measures person-weighted counts: each person's rows
        weigh c in all, so one person moves a weighted histogram by at most c in L1 and L2 whatever their rows
        (docs/privacy.md "The privacy unit"). c = n̂ rows / n̂ persons, clipped to [1, k], is public (both are
        releases); the weights are private and live only for the length of ``_fit``."""
        n_persons = max(1.0, float(np.clip(np.asarray(self.unit_sizes_), 0, None).sum()))
        c = float(np.clip(self.public_rows_ / n_persons, 1.0, k))
        per = np.bincount(persons)
        return c, c / per[persons]

    def dpsgd_units(self, batch_size: int, *, enabled: bool = True) -> tuple[np.ndarray | None, int, int]:
        """What a DP-SGD fit samples: (person codes or None, the public count it samples from, the expected batch
        in those units). With a privacy unit (and ``enabled``): persons, their noisy count (the rows-per-person
        release) and ``batch_size`` rows' worth of persons (÷ the public rows per person); else rows."""
        persons = getattr(self, "persons_", None)
        if persons is None or not enabled:
            return None, self.public_rows_, batch_size
        n_persons = max(1, int(round(float(np.clip(np.asarray(self.unit_sizes_), 0, None).sum()))))
        return persons, n_persons, max(1, int(round(batch_size / self.unit_scale_)))

    # -- hooks ----------------------------------------------------------------------------
    @abstractmethod
    def _fit(self, codes: np.ndarray, *, accountant: PrivacyAccountant) -> None: ...

    @abstractmethod
    def _sample_codes(self, n: int, *, rng: np.random.Generator) -> np.ndarray: ...

    # -- helpers --------------------------------------------------------------------------
    def _finish(self, df: pd.DataFrame, *, rng: np.random.Generator) -> pd.DataFrame:
        """Add templated text columns and order columns as the schema does."""
        schema = self.schema_
        for col in schema.columns:
            if col.kind == ColumnKind.text and col.template:
                df[col.name] = _render_template(col.template, df)
        return self.with_fresh_persons(df, rng)[schema.output_columns()]

    def with_fresh_persons(self, df: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
        """``df`` with the privacy unit's column set to fresh person ids whose rows per person follow the noisy
        rows-per-person release (post-processing; unchanged without a unit). A sample whose rows were redrawn
        (hard rules) calls it again: a redrawn row would otherwise share its source's person."""
        unit = self.schema_.privacy_unit
        if unit is not None:
            df[unit.column] = assign_fresh_ids(len(df), getattr(self, "unit_sizes_", None), rng).values
        return df

    def params(self) -> dict[str, Any]:
        """Settings to record (no data values)."""
        return {"synthesizer": self.name, **self.config.model_dump(), **self.privacy.model_dump(exclude={"noise_seed"})}


def _render_template(template: str, df: pd.DataFrame) -> pd.Series:
    """Fill a public text template from synthetic columns (post-processing only)."""
    cols = {c: df[c].astype("string").fillna("unknown").tolist() for c in df.columns if c.isidentifier()}

    def fmt(i: int) -> str:
        row = {}
        for c, v in cols.items():
            x = v[i]
            if x.endswith(".0"):
                x = x[:-2]
            row[c] = x
        try:
            return template.format(**row)
        except (KeyError, IndexError, ValueError):
            return template

    return pd.Series([fmt(i) for i in range(len(df))], index=df.index, dtype="string")
