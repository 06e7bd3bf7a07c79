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
    from dpsyn.io import read_table
    from dpsyn.masking import mask_table
    from dpsyn.schema import list_builtin_schemas, load_schema

    schema = load_schema(cfg.table_schema)
    if schema.target is None:
        raise ConfigError(f"the fairness audit needs a target column; schema '{schema.name}' declares none")
    if schema.privacy_unit is not None:
        shipped = cfg.table_schema in list_builtin_schemas()  # a name, not a file
        way = (f"a schema file of three lines, 'extends: {cfg.table_schema}', 'name: <a name of its own>' and "
               "'privacy_unit: null'" if shipped else "a copy of the schema file without privacy_unit")
        raise ConfigError(f"schema '{schema.name}' declares a person-level privacy unit; the fairness audit's models "
                          f"are accounted per row only: audit with {way}, on a table with one row per person")
    df, _ = mask_table(read_table(cfg.data, schema), schema)
    rng = np.random.default_rng(cfg.seed)
    if cfg.test is not None:
        test, _ = mask_table(read_table(cfg.test, schema), schema)
        train = df
    else:
        idx = rng.permutation(len(df))
        cut = int(round(len(df) * (1 - cfg.holdout_share)))
        train, test = df.iloc[idx[:cut]], df.iloc[idx[cut:]]
    if cfg.rows is not None and cfg.rows < len(train):
        train = train.iloc[np.sort(rng.choice(len(train), cfg.rows, replace=False))]
    return schema, train.reset_index(drop=True), test.reset_index(drop=True)


def _group_clip(cfg: FairnessAuditConfig):
    from dpsyn.synth.group_clip import GroupClipConfig

    return GroupClipConfig(column=cfg.group, **cfg.group_clip) if cfg.method == "dpsgd-s" else None


@lru_cache(maxsize=64)
def _calibrated(epsilon: float, delta: float, q: float, steps: int, accountant: str,
                size_share: float = 0.0) -> tuple[float | None, float, float]:
    """(σ_h of the group-size histogram or None, DP-SGD σ, ε spent) of one audit model within (ε, δ).

    Cached: the audit trains many same-size models.
    """
    from dpsyn.privacy import PrivacyAccountant
    from dpsyn.synth.group_clip import SIZES_LABEL, GroupClipConfig, plan_group_sizes

    acct = PrivacyAccountant(epsilon=epsilon, delta=delta, accountant=accountant)
    # the config only carries size_share here (a cached function takes hashable arguments)
    sigma_h = plan_group_sizes(GroupClipConfig(column="_", size_share=size_share), acct)
    sigma = acct.calibrate(sample_rate=q, steps=steps, label="fairness.task")
    if sigma_h is not None:
        acct.record(SIZES_LABEL, noise_multiplier=sigma_h, sample_rate=1.0, steps=1)
    acct.record("fairness.task", noise_multiplier=sigma, sample_rate=q, steps=steps)
    return sigma_h, sigma, acct.check()


class _TaskTrainer:
    """Fits the DP task model (logistic regression on the one-hot encoding) on rows of ``codes``."""

    def __init__(self, cfg: FairnessAuditConfig, codes: np.ndarray, sizes: list[int], group_j: int, delta: float,
                 labels: list[str]):
        self.cfg, self.codes, self.sizes, self.gj, self.delta, self.labels = cfg, codes, sizes, group_j, delta, labels
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
        acct = PrivacyAccountant(epsilon=cfg.epsilon, delta=self.delta, accountant=cfg.accountant)
        q, steps = steps_and_rate(len(rows), batch_size=cfg.batch_size, epochs=cfg.epochs)
        gc = _group_clip(cfg)
        sigma_h, sigma, spent = _calibrated(cfg.epsilon, self.delta, q, steps, cfg.accountant,
                                            0.0 if gc is None else gc.size_share)
        noise = NoiseSource(secure=cfg.secure_rng, seed=seed)
        n_groups = self.sizes[self.gj]
        group_sizes = measure_group_sizes(codes[:, self.gj], n_groups, sigma_h, accountant=acct, noise=noise)
        clipper = group_clipper(gc, n_groups, cfg.max_grad_norm, sizes=group_sizes)
        torch.manual_seed(seed)
        net = train_classifier(
            codes, fs, k, accountant=acct, noise=noise, noise_multiplier=sigma,
            batch_size=cfg.batch_size, epochs=cfg.epochs, max_grad_norm=cfg.max_grad_norm, lr=cfg.lr,
            label="fairness.task", public_rows=len(rows),  # an owner-side audit model: its size is the game's
            groups=None if clipper is None else codes[:, self.gj], group_clip=clipper,
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


def run_fairness_audit(cfg: FairnessAuditConfig) -> FairnessAuditResult:
    """Audit per-group privacy risk and measure utility and outcome fairness; see the module docstring."""
    import torch
    from sklearn.metrics import roc_auc_score

    from dpsyn.encoding import DiscreteEncoder
    from dpsyn.validation.utility import positive_label

    torch.set_num_threads(cfg.threads)
    schema, train, test = _load(cfg)
    enc = DiscreteEncoder(schema)
    names = [c.name for c in enc.columns]
    if cfg.group not in names:
        raise ConfigError(f"group column '{cfg.group}' is not an encoded column of schema '{schema.name}'; "
                          f"choose one of: {', '.join(names[:-1])}")
    gj = names.index(cfg.group)
    labels = [str(x) for x in enc.columns[gj].labels]
    codes, test_codes = enc.encode(train), enc.encode(test)
    n = len(codes)
    delta = cfg.delta if cfg.delta is not None else 1.0 / (10 * n)
    rng = np.random.default_rng(cfg.seed + 1)
    order = rng.permutation(n)
    m = n if cfg.audit_rows is None else min(cfg.audit_rows, n)
    audit_rows, fixed_rows = np.sort(order[:m]), np.sort(order[m:])

    if cfg.model == "task":
        trainer = _TaskTrainer(cfg, codes, enc.sizes, gj, delta, labels)
    else:
        trainer = _DPDSynTrainer(cfg, train, schema, delta)
    risk, _ = group_privacy_audit(trainer, fixed_rows=fixed_rows, audit_rows=audit_rows,
                                  groups=codes[audit_rows, gj], labels=labels, column=cfg.group,
                                  rounds=cfg.rounds, seed=cfg.seed, min_rows=cfg.min_group_rows)

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

