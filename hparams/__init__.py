"""Registered hparams sets. Importing this package registers every set (explicit list, nothing swallowed)."""

from t2t_repro.hparams import table3, transformer  # noqa: F401
