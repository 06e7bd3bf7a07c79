"""Run the group privacy-fairness audit on a table: the task model or dpdsyn, DP-SGD or DP-SGD-S.

:func:`run_fairness_audit` is what ``dpsyn audit fairness`` and the
``audit-fairness`` flow call. It

1. reads and masks the table (L1 columns dropped), splits off a seeded
   holdout (or reads ``test``), and draws ``rows`` training rows;
2. runs :func:`~dpsyn.audit.fairness.group_privacy_audit` with a trainer
   that fits the chosen model at (ε, δ) on each round's members; the loss is
   the task model's cross-entropy of the row's label, or dpdsyn's negative
   log-likelihood of the row;
3. trains one more model on all training rows and scores it on the holdout:
   accuracy, ROC AUC, and the outcome-fairness metrics by group
   (demographic parity and equalized-odds differences; privacy fairness and
   outcome fairness can move apart).

With a privacy unit in the schema (e.g. diabetes130_patients) the audit is
per person, as a run's guarantee is: the table is bounded to the unit's k rows
per person first (the run's rule), the holdout, ``rows`` and ``audit_rows``
count persons, a person is in or out of a model with all their rows, their loss
is the sum over their rows, their group that of their first row
(:func:`~dpsyn.synth.group_clip.person_groups`), and each task model samples
and clips persons (per-person DP-SGD, or DP-SGD-S per person), accounted at
the person level.

Each model's own accountant must stay within (ε, δ): the audit raises if any
spends more. Groups are the public encoding's codes of ``group`` (numeric
columns: the schema's bins).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np
from pydantic import BaseModel

from dpsyn.audit.fairness import (
    GroupRiskReport,
    demographic_parity_difference,
    equalized_odds_difference,
    group_privacy_audit,
)
from dpsyn.config import FairnessAuditConfig
from dpsyn.errors import ConfigError

__all__ = ["FairnessAuditConfig", "FairnessAuditResult", "run_fairness_audit"]


class FairnessAuditResult(BaseModel):
    config: dict[str, Any]
    risk: GroupRiskReport
    utility: dict[str, float]  # accuracy, roc_auc, demographic_parity_difference, equalized_odds_difference
    epsilon_spent_max: float
    delta: float
    group_clip: dict[str, Any] | None = None  # final bounds of the utility model under dpsgd-s

    def to_markdown(self) -> str:
        u = self.utility
        head = (f"**{self.config['model']} / {self.config['method']}**, ε = {self.config['epsilon']:g}, "
                f"δ = {self.delta:.2g}: accuracy {u['accuracy']:.4f}, AUC {u['roc_auc']:.4f}, "
                f"demographic parity diff {u['demographic_parity_difference']:.3f}, "
                f"equalized odds diff {u['equalized_odds_difference']:.3f}")
        return head + "\n\n" + self.risk.to_markdown()


def _load(cfg: FairnessAuditConfig):
    """(schema, training rows, holdout rows, training persons' dense codes or None without a privacy unit)."""
    from dpsyn.io import read_table
    from dpsyn.masking import mask_table
    from dpsyn.privacy import NoiseSource
    from dpsyn.privacy.unit import bound_table
    from dpsyn.schema import load_schema

    schema = load_schema(cfg.table_schema)
    if schema.target is None:
        raise ConfigError(f"the fairness audit needs a target column; schema '{schema.name}' declares none")
    df = read_table(cfg.data, schema)
    unit = schema.privacy_unit
    rng = np.random.default_rng(cfg.seed)
    if unit is None:
        df, _ = mask_table(df, schema)
        if cfg.test is not None:
            test, _ = mask_table(read_table(cfg.test, schema), schema)
            train = df
        else:
            idx = rng.permutation(len(df))
            cut = int(round(len(df) * (1 - cfg.holdout_share)))
            train, test = df.iloc[idx[:cut]], df.iloc[idx[cut:]]
        if cfg.rows is not None and cfg.rows < len(train):
            train = train.iloc[np.sort(rng.choice(len(train), cfg.rows, replace=False))]
        return schema, train.reset_index(drop=True), test.reset_index(drop=True), None
    # the run's rule first: at most k rows per person (secret coins); from here on everything counts persons
    df, persons = bound_table(df, unit.column, unit.max_rows_per_person,
                              NoiseSource(secure=cfg.secure_rng, seed=cfg.seed),
                              table=f"the table of schema '{schema.name}'")
    df, _ = mask_table(df, schema)
    n_persons = int(persons.max()) + 1 if len(persons) else 0
    if cfg.test is not None:
        test, _ = mask_table(read_table(cfg.test, schema), schema)
        keep = np.arange(n_persons)
    else:
        idx = rng.permutation(n_persons)
        cut = int(round(n_persons * (1 - cfg.holdout_share)))
        keep = idx[:cut]
        test = df[np.isin(persons, idx[cut:])]
    if cfg.rows is not None and cfg.rows < len(keep):
        keep = rng.choice(keep, cfg.rows, replace=False)
    in_train = np.isin(persons, keep)
    train = df[in_train].reset_index(drop=True)
    units = np.unique(persons[in_train], return_inverse=True)[1].astype(np.int64)  # dense codes 0..P−1
    return schema, train, test.reset_index(drop=True), units


def _group_clip(cfg: FairnessAuditConfig):
    from dpsyn.synth.group_clip import GroupClipConfig

    return GroupClipConfig(column=cfg.group, **cfg.group_clip) if cfg.method == "dpsgd-s" else None


@lru_cache(maxsize=64)
def _calibrated(epsilon: float, delta: float, q: float, steps: int, accountant: str,
                size_share: float = 0.0, unit: tuple = ()) -> tuple[float | None, float, float]:
    """(σ_h of the group-size histogram or None, DP-SGD σ, ε spent) of one audit model within (ε, δ).

    ``unit``: the schema's ``unit_kwargs()`` as pairs; with one, both mechanisms count persons (person level).
    Cached: the audit trains many same-size models.
    """
    from dpsyn.privacy import PrivacyAccountant
    from dpsyn.synth.group_clip import SIZES_LABEL, GroupClipConfig, plan_group_sizes

    per_person = bool(unit)
    acct = PrivacyAccountant(epsilon=epsilon, delta=delta, accountant=accountant, **dict(unit))
    # the config only carries size_share here (a cached function takes hashable arguments)
    sigma_h = plan_group_sizes(GroupClipConfig(column="_", size_share=size_share), acct, person_level=per_person)
    sigma = acct.calibrate(sample_rate=q, steps=steps, label="fairness.task", person_level=per_person)
    if sigma_h is not None:
        acct.record(SIZES_LABEL, noise_multiplier=sigma_h, sample_rate=1.0, steps=1, person_level=per_person)
    acct.record("fairness.task", noise_multiplier=sigma, sample_rate=q, steps=steps, person_level=per_person)
    return sigma_h, sigma, acct.check()


class _TaskTrainer:
    """Fits the DP task model (logistic regression on the one-hot encoding) on rows of ``codes``."""

    def __init__(self, cfg: FairnessAuditConfig, codes: np.ndarray, sizes: list[int], group_j: int, delta: float,
                 labels: list[str], persons: np.ndarray | None = None, unit: tuple = ()):
        self.cfg, self.codes, self.sizes, self.gj, self.delta, self.labels = cfg, codes, sizes, group_j, delta, labels
        self.persons, self.unit = persons, unit  # with a privacy unit: each row's person, and the accountant's unit
        self.spent: list[float] = []
        self.last_clip: dict | None = None

    def fit(self, rows: np.ndarray, seed: int):
        import torch

        from dpsyn.privacy import NoiseSource, PrivacyAccountant
        from dpsyn.synth.classifier import train_classifier
        from dpsyn.synth.dpgen import group_clipper
        from dpsyn.synth.dpsgd import steps_and_rate
        from dpsyn.synth.group_clip import measure_group_sizes

        cfg, fs, k = self.cfg, self.sizes[:-1], self.sizes[-1]
        codes = self.codes[rows]
        # per person: the model samples and clips the training persons (dense codes), batch_size persons a step
        units = None if self.persons is None else np.unique(self.persons[rows], return_inverse=True)[1]
        public = len(rows) if units is None else int(units.max()) + 1
        acct = PrivacyAccountant(epsilon=cfg.epsilon, delta=self.delta, accountant=cfg.accountant, **dict(self.unit))
        q, steps = steps_and_rate(public, batch_size=cfg.batch_size, epochs=cfg.epochs)
        gc = _group_clip(cfg)
        sigma_h, sigma, spent = _calibrated(cfg.epsilon, self.delta, q, steps, cfg.accountant,
                                            0.0 if gc is None else gc.size_share, self.unit)
        noise = NoiseSource(secure=cfg.secure_rng, seed=seed)
        n_groups = self.sizes[self.gj]
        group_sizes = measure_group_sizes(codes[:, self.gj], n_groups, sigma_h, accountant=acct, noise=noise,
                                          units=units)
        clipper = group_clipper(gc, n_groups, cfg.max_grad_norm, sizes=group_sizes)
        torch.manual_seed(seed)
        net = train_classifier(
            codes, fs, k, accountant=acct, noise=noise, noise_multiplier=sigma,
            batch_size=cfg.batch_size, epochs=cfg.epochs, max_grad_norm=cfg.max_grad_norm, lr=cfg.lr,
            label="fairness.task", public_rows=public,  # an owner-side audit model: its size is the game's
            groups=None if clipper is None else codes[:, self.gj], group_clip=clipper, units=units,
        )
        expected = [(sigma, q, steps)] if sigma_h is None else [(sigma_h, 1.0, 1), (sigma, q, steps)]
        if acct.history() != expected:
            raise AssertionError("the audit's model ran other mechanisms than the calibrated DP-SGD")
        self.spent.append(spent)
        self.last_clip = None if clipper is None else clipper.summary(self.labels)
        return net

    def log_probs(self, net, codes: np.ndarray) -> np.ndarray:
        from dpsyn.synth.classifier import classifier_log_probs

        return classifier_log_probs(net, codes[:, :-1], self.sizes[:-1])

    def __call__(self, rows: np.ndarray, seed: int):
        net = self.fit(rows, seed)

        def loss(idx: np.ndarray) -> np.ndarray:
            lp = self.log_probs(net, self.codes[idx])
            return -lp[np.arange(len(idx)), self.codes[idx, -1]]

        return loss


class _DPDSynTrainer:
    """Fits dpdsyn on rows of ``df``; the loss is the row's negative log-likelihood under the fitted model."""

    def __init__(self, cfg: FairnessAuditConfig, df, schema, delta: float):
        self.cfg, self.df, self.schema, self.delta = cfg, df, schema, delta
        self.spent: list[float] = []
        self.last = None

    def fit(self, rows: np.ndarray, seed: int):
        from dpsyn.synth import create

        gc = _group_clip(self.cfg)
        conf = dict(self.cfg.synthesizer_config)
        if gc is not None:
            conf["group_clip"] = gc.model_dump()
        synth = create("dpdsyn", conf, privacy={"epsilon": self.cfg.epsilon, "delta": self.delta,
                                                 "accountant": self.cfg.accountant,
                                                 "secure_rng": self.cfg.secure_rng, "noise_seed": seed})
        synth.fit(self.df.iloc[rows].reset_index(drop=True), self.schema)
        self.spent.append(float(synth.privacy_["epsilon_spent"]))
        self.last = synth
        return synth

    def __call__(self, rows: np.ndarray, seed: int):
        synth = self.fit(rows, seed)
        return lambda idx: -synth.log_likelihood(self.df.iloc[idx].reset_index(drop=True))


class _PersonGame:
    """The audit game over persons: index p names person p with all their rows. A model trained on persons P is
    trained on their rows; a person's loss is the sum of their rows' losses (the whole person's membership
    signal, as a person-level guarantee bounds it)."""

    def __init__(self, trainer, persons: np.ndarray):
        self.trainer = trainer
        order = np.argsort(persons, kind="stable")
        self.rows_of = np.split(order, np.cumsum(np.bincount(persons))[:-1])

    def rows(self, who: np.ndarray) -> np.ndarray:
        return np.sort(np.concatenate([self.rows_of[p] for p in who])) if len(who) else np.array([], np.int64)

    def __call__(self, who: np.ndarray, seed: int):
        loss = self.trainer(self.rows(who), seed)

        def person_loss(ps: np.ndarray) -> np.ndarray:
            parts = [self.rows_of[p] for p in ps]
            starts = np.cumsum([0] + [len(r) for r in parts[:-1]])
            return np.add.reduceat(np.asarray(loss(np.concatenate(parts)), dtype=float), starts)

        return person_loss


def run_fairness_audit(cfg: FairnessAuditConfig) -> FairnessAuditResult:
    """Audit per-group privacy risk and measure utility and outcome fairness; see the module docstring."""
    import torch
    from sklearn.metrics import roc_auc_score

    from dpsyn.encoding import DiscreteEncoder
    from dpsyn.privacy.unit import PERSON_CODE
    from dpsyn.synth.group_clip import person_groups
    from dpsyn.validation.utility import positive_label

    torch.set_num_threads(cfg.threads)
    schema, train, test, persons = _load(cfg)
    enc = DiscreteEncoder(schema)
    names = [c.name for c in enc.columns]
    if cfg.group not in names:
        raise ConfigError(f"group column '{cfg.group}' is not an encoded column of schema '{schema.name}'; "
                          f"choose one of: {', '.join(names[:-1])}")
    gj = names.index(cfg.group)
    labels = [str(x) for x in enc.columns[gj].labels]
    codes, test_codes = enc.encode(train), enc.encode(test)
    n = len(codes)
    # the game's units: rows, or persons (each in the group of their first row, as DP-SGD-S per person counts them)
    n_units = n if persons is None else int(persons.max()) + 1
    unit_groups = codes[:, gj] if persons is None else person_groups(codes[:, gj], persons)
    delta = cfg.delta if cfg.delta is not None else 1.0 / (10 * n_units)
    rng = np.random.default_rng(cfg.seed + 1)
    order = rng.permutation(n_units)
    m = n_units if cfg.audit_rows is None else min(cfg.audit_rows, n_units)
    audit_rows, fixed_rows = np.sort(order[:m]), np.sort(order[m:])

    unit = tuple(schema.unit_kwargs().items())
    if cfg.model == "task":
        trainer = _TaskTrainer(cfg, codes, enc.sizes, gj, delta, labels, persons, unit)
    else:  # dpdsyn bounds and clips by the schema's unit itself, on the persons the frame carries
        trainer = _DPDSynTrainer(cfg, train if persons is None else train.assign(**{PERSON_CODE: persons}),
                                 schema, delta)
    game = trainer if persons is None else _PersonGame(trainer, persons)
    risk, _ = group_privacy_audit(game, fixed_rows=fixed_rows, audit_rows=audit_rows,
                                  groups=unit_groups[audit_rows], labels=labels, column=cfg.group,
                                  rounds=cfg.rounds, seed=cfg.seed, min_rows=cfg.min_group_rows,
                                  unit="row" if persons is None else f"person ({schema.privacy_unit.column})")

    # utility and outcome fairness of one model trained on all training rows
    target = enc.columns[-1]
    positive = [str(x) for x in target.labels].index(positive_label(schema, cfg.positive))
    y = (test_codes[:, -1] == positive).astype(int)
    torch.manual_seed(cfg.seed)
    if cfg.model == "task":
        net = trainer.fit(np.arange(n), cfg.seed)
        p = np.exp(trainer.log_probs(net, test_codes))[:, positive]
        clip = trainer.last_clip
    else:
        synth = trainer.fit(np.arange(n), cfg.seed)
        p = np.exp(synth._label_log_probs(test_codes[:, :-1]))[:, positive]
        clip = synth.training_.get("task", {}).get("group_clip")
    pred = (p >= 0.5).astype(int)
    groups_test = test_codes[:, gj]
    utility = {
        "accuracy": float((pred == y).mean()),
        "roc_auc": float(roc_auc_score(y, p)) if 0 < y.sum() < len(y) else float("nan"),
        "demographic_parity_difference": demographic_parity_difference(pred, groups_test),
        "equalized_odds_difference": equalized_odds_difference(y, pred, groups_test),
    }
    return FairnessAuditResult(config=cfg.model_dump(mode="json"), risk=risk, utility=utility,
                               epsilon_spent_max=float(max(trainer.spent)), delta=delta, group_clip=clip)

