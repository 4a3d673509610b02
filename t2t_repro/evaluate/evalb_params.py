"""EVALB's parameters: COLLINS.prm, the file the parsing literature (and the paper's Table 4) scores with, and
the reading of any other EVALB parameter file (`evalb -p FILE`).

COLLINS.prm (EVALB 20061121, Sekine and Collins) sets:

    MAX_ERROR 10          LABELED 1         CUTOFF_LEN 40
    DELETE_LABEL TOP      DELETE_LABEL -NONE-
    DELETE_LABEL ,        DELETE_LABEL :    DELETE_LABEL ``    DELETE_LABEL ''    DELETE_LABEL .
    DELETE_LABEL_FOR_LENGTH -NONE-
    EQ_LABEL ADVP PRT

A parameter file is read as evalb.c's `read_parameter_file` reads it: one `KEYWORD value` a line, lines
starting with '#' or shorter than 3 characters ignored, the value being the rest of the line after the
keyword (trailing white space removed); an unknown keyword is reported and skipped. QUOTE_LABEL (the quote
repair of evalb.c's 2006 bug fix, not used by COLLINS.prm) is refused rather than silently ignored.
"""

import dataclasses
import functools
import logging
import os

from t2t_repro.errors import UserError

logger = logging.getLogger(__name__)

_C_SPACE = " \t\n\v\f\r"  # C's isspace() in the "C" locale, which is what evalb.c splits on


@dataclasses.dataclass(frozen=True)
class EvalbParameters:
    """What an EVALB parameter file sets. Defaults: COLLINS.prm, except `max_error` (None: never stop; evalb.c
    stops at its (MAX_ERROR + 2)-th error, see `t2t_repro.evaluate.evalb`)."""

    delete_labels: frozenset = frozenset({"TOP", "-NONE-", ",", ":", "``", "''", "."})
    delete_labels_for_length: frozenset = frozenset({"-NONE-"})
    equivalent_labels: tuple = (("ADVP", "PRT"),)  # unordered pairs
    equivalent_words: tuple = ()
    labeled: bool = True
    cutoff_length: int = 40
    max_error: object = None  # int or None

    def replace(self, **changes):
        """A copy with `changes` (field: value) applied."""
        return dataclasses.replace(self, **changes)

    def labels_equal(self, a, b):
        """evalb.c's label_comp: equal strings, or an EQ_LABEL pair either way round."""
        return b in self.label_partners(a)

    def words_equal(self, a, b):
        """evalb.c's word_comp: equal strings, or an EQ_WORD pair either way round."""
        return a == b or (a, b) in self._word_pairs

    def label_partners(self, label):
        """The labels `labels_equal` accepts for `label`, itself first."""
        return self._partners.get(label, (label,))

    def is_deleted_label(self, label):
        """A bracket label (already cut at '-' or '=') is deleted when it equals a DELETE_LABEL, EQ_LABEL
        pairs counting as equal (evalb.c's massage_data uses label_comp)."""
        return any(partner in self.delete_labels for partner in self.label_partners(label))

    @functools.cached_property
    def _partners(self):
        partners = {}
        for a, b in _both_ways(self.equivalent_labels):
            partners.setdefault(a, [a])
            if b not in partners[a]:
                partners[a].append(b)
        return {label: tuple(others) for label, others in partners.items()}

    @functools.cached_property
    def _word_pairs(self):
        return _both_ways(self.equivalent_words)


COLLINS = EvalbParameters()


def _both_ways(pairs):
    return frozenset(pairs) | frozenset((b, a) for a, b in pairs)


def _integer(value, keyword, where):
    try:
        return int(value.split()[0])
    except (ValueError, IndexError):
        raise UserError(f"{where}: {keyword} needs an integer, got {value!r}") from None


def parse_parameters(text, source="<string>"):
    """EvalbParameters from the text of an EVALB parameter file (unset values: evalb.c's defaults, i.e.
    nothing deleted, no equivalences, labelled, cutoff 40, MAX_ERROR 10)."""
    values = {"delete_labels": set(), "delete_labels_for_length": set(), "equivalent_labels": [],
              "equivalent_words": [], "labeled": True, "cutoff_length": 40, "max_error": 10}
    for number, line in enumerate(text.split("\n"), start=1):
        line = line.rstrip(_C_SPACE)
        if line.startswith("#") or len(line) < 3:
            continue
        where = f"{source}:{number}"
        keyword = line.split(maxsplit=1)[0]
        value = line[len(keyword):].lstrip(_C_SPACE)
        if keyword in ("DELETE_LABEL", "DELETE_LABEL_FOR_LENGTH"):
            values["delete_labels" if keyword == "DELETE_LABEL" else "delete_labels_for_length"].add(value)
        elif keyword in ("EQ_LABEL", "EQ_WORD"):
            pair = value.split()
            if len(pair) != 2:
                raise UserError(f"{where}: {keyword} needs two values, got {value!r}")
            values["equivalent_labels" if keyword == "EQ_LABEL" else "equivalent_words"].append(tuple(pair))
        elif keyword == "MAX_ERROR":
            values["max_error"] = _integer(value, keyword, where)
        elif keyword == "CUTOFF_LEN":
            values["cutoff_length"] = _integer(value, keyword, where)
        elif keyword == "LABELED":
            values["labeled"] = _integer(value, keyword, where) != 0
        elif keyword == "QUOTE_LABEL":
            raise UserError(f"{where}: QUOTE_LABEL (evalb.c's quote repair) is not supported")
        elif keyword != "DEBUG":
            logger.warning("%s: unknown keyword %r in the parameter file, ignored (as evalb.c does)", where, keyword)
    return EvalbParameters(
        delete_labels=frozenset(values["delete_labels"]),
        delete_labels_for_length=frozenset(values["delete_labels_for_length"]),
        equivalent_labels=tuple(values["equivalent_labels"]),
        equivalent_words=tuple(values["equivalent_words"]),
        labeled=values["labeled"], cutoff_length=values["cutoff_length"], max_error=values["max_error"],
    )


def read_parameter_file(path):
    """EvalbParameters from an EVALB parameter file such as COLLINS.prm; an unreadable file is a UserError."""
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as f:
            text = f.read()
    except OSError as error:
        raise UserError(f"cannot read parameter file {os.fspath(path)}: {error.strerror}") from error
    return parse_parameters(text, source=os.fspath(path))
