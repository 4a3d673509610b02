"""The parallel files of a `--manual_dir`: line-aligned text, or for dev and test the official WMT SGML files.

    M/train.en  M/train.de     UTF-8 text, one sentence per line, the two files line-aligned
    M/dev.en    M/dev.de       or dev.en.sgm and dev.de.sgm, or as WMT distributes them: newstest2013-src.en.sgm
    M/test.en   M/test.de      and newstest2013-ref.de.sgm; newstest2014-deen-src.en.sgm and -ref.de.sgm

Plain files come first: a split's SGML files are looked for only when its two plain files are both absent.
A plain file whose name ends in `.gz` is read through gzip (a problem that names such files: Multi30K).
The official names are `<set>-src.<source language>.sgm` and `<set>-ref.<target language>.sgm`, optionally
with the language pair between (`newstest2014-deen-src.en.sgm`); the problem names the set of each split
(`TranslationProblem.sgml_sets`). A UTF-8 byte order mark at the start of a file is not part of its text.
"""

import contextlib
import gzip
import itertools
import os
import re
import zlib

from t2t_repro.data import sgml
from t2t_repro.errors import UserError

SGML_SUFFIX = ".sgm"
GZIP_SUFFIX = ".gz"
_BOM = b"\xef\xbb\xbf"


@contextlib.contextmanager
def _binary(path):
    """The file's bytes: decompressed when its name ends in `.gz`, where a file that is not gzip data, or is
    cut short, is a UserError naming it (on opening or on any read inside the block)."""
    path = os.fspath(path)
    if not path.endswith(GZIP_SUFFIX):
        with open(path, "rb") as source:
            yield source
        return
    try:
        with gzip.open(path, "rb") as source:
            yield source
    except (gzip.BadGzipFile, EOFError, zlib.error) as error:
        raise UserError(f"{path}: not a readable gzip file ({error or 'cut short'}); a .gz file must be gzipped "
                        "UTF-8 text, one sentence per line") from None


def is_empty(path):
    """True when the file holds no text (a .gz file: no bytes once decompressed)."""
    if not os.fspath(path).endswith(GZIP_SUFFIX):
        return os.path.getsize(path) == 0
    with _binary(path) as source:
        return not source.read(1)


def check_line_ends(path, sample_bytes=1 << 16):
    """UserError when the file's first `sample_bytes` hold carriage returns and no newline: old-Mac line ends
    ("\\r" alone), which `text_lines` would read as one long line (it ends lines at "\\n" only, so that a stray
    "\\r" inside a sentence never splits it)."""
    with _binary(path) as source:
        start = source.read(sample_bytes)
    if b"\r" in start and b"\n" not in start:
        raise UserError(f"{path}: lines end in a carriage return alone (old Mac line ends), which would read as one "
                        "line; convert them to \\n (e.g. `tr '\\r' '\\n'`)")


def text_lines(path):
    """The lines of a UTF-8 file without their line ends and without a leading byte order mark; only "\\n" (or
    "\\r\\n") ends a line; a `.gz` file is decompressed. Bytes that are not UTF-8 (binary data, another
    encoding) are a UserError naming the file and line."""
    with _binary(path) as source:
        for number, line in enumerate(source, 1):
            if number == 1 and line.startswith(_BOM):
                line = line[len(_BOM):]
            yield line_text(line, f"{path}:{number}")


def line_text(line, where):
    """The text of one line read as bytes, its line end ("\n" or "\r\n") removed. Bytes that are not UTF-8 are a
    UserError naming `where` ("<file>:<line>"): every tool refuses text it would otherwise have to guess at."""
    line = line[:-1] if line.endswith(b"\n") else line
    line = line[:-1] if line.endswith(b"\r") else line
    try:
        return line.decode("utf-8")
    except UnicodeDecodeError as error:
        raise not_utf8_error(where, line, error) from None


def not_utf8_error(where, line, error):
    """The UserError for the bytes `line` read at `where` ("<file>:<line>"), which are not UTF-8 (`error`)."""
    return UserError(f"{where}: not UTF-8 text (byte 0x{line[error.start]:02x} at byte {error.start + 1} of the "
                     "line); text must be UTF-8")


def _official_sgml(text_dir, set_name, role, language, pair_languages):
    """The one file `<set>[-<pair>]-<role>.<language>.sgm` in text_dir, None if there is none."""
    pattern = re.compile(rf"{re.escape(set_name)}(-([a-z]{{4}}))?-{role}\.{re.escape(language)}\.sgm")
    pairs = {"".join(pair_languages), "".join(reversed(pair_languages))}
    found = []
    for name in sorted(os.listdir(text_dir)):
        match = pattern.fullmatch(name)
        if match and (match.group(2) is None or match.group(2) in pairs):
            found.append(name)
    if len(found) > 1:
        raise UserError(f"{text_dir} holds several {set_name} {role} files for {language} ({', '.join(found)}); "
                        "keep one")
    return os.path.join(text_dir, found[0]) if found else None


def split_files(text_dir, split, source, target, sgml_set=None):
    """(source path, target path) of a split in text_dir: plain files, else (dev/test) `<split>.<lang>.sgm`, else
    the official SGML files of `sgml_set`; the paths of the plain files when none of these are all there."""
    plain = [os.path.join(text_dir, f"{split}.{language}") for language in (source, target)]
    if split == "train" or any(os.path.exists(path) for path in plain):
        return tuple(plain)
    generic = [path + SGML_SUFFIX for path in plain]
    if all(os.path.isfile(path) for path in generic):
        return tuple(generic)
    if sgml_set:
        official = (_official_sgml(text_dir, sgml_set, "src", source, (target, source)),
                    _official_sgml(text_dir, sgml_set, "ref", target, (target, source)))
        if all(official):
            return official
    return tuple(plain)


def count_lines(path):
    """The number of lines of a file as `text_lines` reads it (a last line without a line end counts), read in
    blocks: about a second per gigabyte."""
    count = 0
    last = b"\n"
    with _binary(path) as source:
        for block in iter(lambda: source.read(1 << 24), b""):
            count += block.count(b"\n")
            last = block[-1:]
    return count + (last != b"\n")


def check_aligned(source_path, target_path):
    """UserError naming both files and both line counts when two parallel text files differ in length."""
    counts = count_lines(source_path), count_lines(target_path)
    if counts[0] != counts[1]:
        raise UserError(f"{source_path} has {counts[0]:,} lines but {target_path} has {counts[1]:,}: parallel files "
                        "must be line-aligned, one sentence per line")


def read_pairs(source_path, target_path):
    """The (source, target) sentences of two aligned files, in order: SGML segments or lines."""
    if source_path.endswith(SGML_SUFFIX):
        source_segments = sgml.read_segments(text_lines(source_path), source_path)
        target_segments = sgml.read_segments(text_lines(target_path), target_path)
        yield from sgml.aligned_texts(source_segments, target_segments, source_path, target_path)
        return
    end = object()
    pairs = itertools.zip_longest(text_lines(source_path), text_lines(target_path), fillvalue=end)
    for number, (source, target) in enumerate(pairs, 1):
        if source is end or target is end:
            check_aligned(source_path, target_path)
        yield source, target
