"""All dpsyn exceptions and warnings, in one place.

Every error inherits :class:`DpsynError` and a builtin, so callers can catch
either. Messages name the problem and what to do about it, and never contain
a data value from a private table (only column names, file names, counts).

``exit_code`` is what the CLI returns for an uncaught error of that class:
2 for bad input or usage, 1 for a check that failed.
"""

from __future__ import annotations


class DpsynError(Exception):
    """Base class of every dpsyn error."""

    exit_code = 2


class InputError(DpsynError, ValueError):
    """A data file, schema or option is missing, malformed or does not match."""

    exit_code = 2


class SchemaError(InputError):
    """A table schema is malformed, or a table does not conform to it."""


class ConfigError(InputError):
    """A run configuration is invalid."""


class UnknownComponentError(InputError, KeyError):
    """A registry was asked for a name it does not hold."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else ""


class OutputExistsError(InputError):
    """The output location exists and overwriting was not requested."""


class NotFittedError(DpsynError, ValueError, AttributeError):
    """A model was used before ``fit``."""


class PrivacyBudgetExceededError(DpsynError, RuntimeError):
    """A mechanism would spend, or has spent, more privacy budget than allowed."""

    exit_code = 1


class PIIResidualError(DpsynError, RuntimeError):
    """A re-scan after scrubbing still found identifiers (the run fails closed)."""

    exit_code = 1


class GateFailedError(DpsynError, RuntimeError):
    """The validation gate failed: nothing is published."""

    exit_code = 1

    def __init__(self, message: str, *, failures: list[str] | None = None, details: dict | None = None):
        super().__init__(message)
        self.failures = list(failures or [])
        #: what the stopped run spent and where it is recorded (ε, δ, tracker run id, model version): DP outputs
        #: and ids only, shown with the error (the CLI's --json object)
        self.details = dict(details or {})


class LedgerConflictError(InputError):
    """A release contradicts what the lineage ledger already holds (same id, different content)."""


class OrchestratorError(DpsynError, RuntimeError):
    """The orchestrator (Prefect) could not be started or reached: nothing ran."""

    exit_code = 1


class AuditFailedError(DpsynError, RuntimeError):
    """An audit found a file that carries no watermark of ours."""

    exit_code = 1


class DpsynWarning(UserWarning):
    """Base class of dpsyn warnings."""


class InsecureRNGWarning(DpsynWarning):
    """DP noise is drawn from a non-cryptographic RNG (fine for tests only)."""
