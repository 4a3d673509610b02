"""The Penn Treebank sample as NLTK distributes it: `treebank.zip`, or its `combined/` folder unpacked, read by
file number.

NLTK's `treebank` corpus holds WSJ files wsj_0001 ... wsj_0199 in several forms; `combined/wsj_NNNN.mrg` are
the bracketed trees with function tags and traces, as in the full treebank. A user names the directory holding
either form (`--manual_dir`):

    DIR/treebank.zip                    the file as distributed (members treebank/combined/wsj_NNNN.mrg)
    DIR/treebank/combined/wsj_NNNN.mrg  as NLTK unpacks it under corpora/ (DIR is corpora)
    DIR/combined/wsj_NNNN.mrg           DIR is the unpacked treebank/ folder
    DIR/wsj_NNNN.mrg                    DIR is the combined/ folder itself

An unpacked folder is preferred to the zip when both are there. Splits are sets of file numbers written as
ranges, "1-159" or "1-99+120-159" (`parse_file_ranges`): "+", since a comma separates settings on the
command line.
"""

import os
import re
import zipfile

from t2t_repro.data import ptb_tree
from t2t_repro.data.parallel_files import not_utf8_error
from t2t_repro.errors import UserError

ZIP_NAME = "treebank.zip"
ZIP_MEMBER_DIR = "treebank/combined/"
_FILE_NAME = re.compile(r"wsj_(\d{4})\.mrg", re.IGNORECASE)
_RANGE = re.compile(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?")
LAYOUT = ("DIR/treebank.zip as NLTK distributes it, or its combined/ folder of wsj_NNNN.mrg files (DIR/combined/, "
          "DIR/treebank/combined/ or DIR itself)")


def file_name(number):
    return f"wsj_{number:04d}.mrg"


def parse_file_ranges(text, name):
    """The sorted file numbers of "A-B+C+D-E" (each at least 1); UserError naming the setting `name`."""
    numbers = set()
    for part in str(text).split("+"):
        match = _RANGE.fullmatch(part)
        first, last = (int(match.group(1)), int(match.group(2) or match.group(1))) if match else (0, -1)
        if not match or first < 1 or last < first:
            raise UserError(f"{name}={text!r}: expected file numbers as ranges, e.g. 1-159 or 1-99+120-159 "
                            "(first <= last, from 1)")
        numbers.update(range(first, last + 1))
    return sorted(numbers)


def check_disjoint(ranges):
    """UserError when two splits share a file: `ranges` is {setting name: (text, numbers)}."""
    names = list(ranges)
    for i, first in enumerate(names):
        for second in names[i + 1:]:
            shared = sorted(set(ranges[first][1]) & set(ranges[second][1]))
            if shared:
                raise UserError(f"{first}={ranges[first][0]} and {second}={ranges[second][0]} overlap (file "
                                f"{file_name(shared[0])}{' and more' if len(shared) > 1 else ''}): a file belongs to "
                                "one split")


class TreebankSample:
    """The .mrg files of one copy of the sample, by number (see the module docstring).

    Args:
        manual_dir: the directory the user named (or the zip file itself).
    """

    def __init__(self, manual_dir):
        if manual_dir is None:
            raise UserError(f"pass --manual_dir=DIR with {LAYOUT}")
        self.root = os.fspath(manual_dir)
        self.folder, self.zip_path = self._locate()
        self._zip = None
        self._names = self._members()
        self.numbers = sorted(self._names)

    def _locate(self):
        if os.path.isfile(self.root) and self.root.lower().endswith(".zip"):
            return None, self.root
        if not os.path.isdir(self.root):
            raise UserError(f"--manual_dir={self.root} is not a directory; expected {LAYOUT}")
        for folder in (os.path.join(self.root, "treebank", "combined"), os.path.join(self.root, "combined"), self.root):
            if os.path.isdir(folder) and any(_FILE_NAME.fullmatch(name) for name in os.listdir(folder)):
                return folder, None
        zip_path = os.path.join(self.root, ZIP_NAME)
        if os.path.isfile(zip_path):
            return None, zip_path
        raise UserError(f"--manual_dir={self.root} holds no Penn Treebank sample: expected {LAYOUT}")

    def _open_zip(self):
        if self._zip is None:
            try:
                self._zip = zipfile.ZipFile(self.zip_path)
            except (OSError, zipfile.BadZipFile) as error:
                raise UserError(f"cannot read {self.zip_path}: {getattr(error, 'strerror', None) or error}") from None
        return self._zip

    def _members(self):
        """{number: member or path name} of every wsj_NNNN.mrg file of the copy."""
        if self.folder is not None:
            names = os.listdir(self.folder)
        else:
            names = [member[len(ZIP_MEMBER_DIR):] for member in self._open_zip().namelist()
                     if member.startswith(ZIP_MEMBER_DIR)]
        found = {}
        for name in names:
            match = _FILE_NAME.fullmatch(name)
            if match:
                found[int(match.group(1))] = name
        return found

    def where(self, number=None):
        """The copy (or one file of it) in words, for messages."""
        base = self.folder if self.folder is not None else f"{self.zip_path}:{ZIP_MEMBER_DIR}"
        if number is None:
            return base
        name = self._names.get(number, file_name(number))
        return os.path.join(base, name) if self.folder is not None else base + name

    def check_present(self, numbers, setting):
        """UserError naming the first file of `numbers` (the setting `setting`'s) the copy lacks."""
        missing = [number for number in numbers if number not in self._names]
        if missing:
            more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
            raise UserError(f"{setting}: {file_name(missing[0])}{more} missing from {self.where()}")

    def source_files(self):
        """The files the data is made from: the zip, or the .mrg files used."""
        if self.folder is None:
            return [self.zip_path]
        return [os.path.join(self.folder, self._names[number]) for number in self.numbers]

    def lines(self, number):
        """The lines of file `number`; UserError naming it when it cannot be read or is not UTF-8."""
        if self.folder is not None:
            yield from ptb_tree.iter_lines(os.path.join(self.folder, self._names[number]))
            return
        member = ZIP_MEMBER_DIR + self._names[number]
        try:
            data = self._open_zip().read(member)
        except (OSError, zipfile.BadZipFile, KeyError) as error:
            raise UserError(f"cannot read {self.where(number)}: {error}") from None
        for line_number, raw in enumerate(data.split(b"\n"), start=1):
            try:
                yield raw.decode("utf-8")
            except UnicodeDecodeError as error:
                raise not_utf8_error(f"{self.where(number)}:{line_number}", raw, error) from None

    def trees(self, number):
        """The cleaned trees of file `number` (`ptb_tree.clean_tree`); a malformed tree is a UserError naming
        the file and line."""
        for tree in ptb_tree.iter_trees(self.lines(number), source=self.where(number)):
            tree = ptb_tree.clean_tree(tree)
            if tree is not None:
                yield tree
