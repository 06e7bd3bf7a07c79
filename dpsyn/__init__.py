"""dpsyn: privacy-safe synthetic data for sensitive tables.

The library: pure functions and small classes. It never imports prefect or
mlflow; ``tasks/`` wraps its calls and ``flows/`` composes them.
"""

__version__ = "0.1.0"
