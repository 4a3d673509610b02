"""Registered problems. Importing this package registers every problem (explicit list, nothing swallowed)."""

from t2t_repro.problems import wmt  # noqa: F401
from t2t_repro.problems import wsj_parsing  # noqa: F401
from t2t_repro.problems import toy  # noqa: F401
from t2t_repro.problems import files  # noqa: F401
from t2t_repro.problems import multi30k  # noqa: F401
from t2t_repro.problems import ptb_sample  # noqa: F401
