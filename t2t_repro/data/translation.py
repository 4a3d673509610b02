"""TranslationProblem: a TextPairProblem read from local parallel text files or from a TFDS builder.

Raw text comes from, in order:

1. `raw_text_dir(tmp_dir, manual_dir)` (by default `--manual_dir`), a directory of line-aligned plain files
   `{train,dev,test}.{source_language}` and `{train,dev,test}.{target_language}`, one sentence per line, where
   dev and test may instead be WMT's SGML files as distributed (`t2t_repro.data.parallel_files`);
2. otherwise the TFDS builder `tfds_name`, downloaded and prepared in `tmp_dir` (TFDS's default directory when
   unset): train = "train", dev = "validation" (newstest2013), test = "test" (newstest2014), the splits of
   section 5.1 and Table 2.
"""

import os

import tensorflow_datasets as tfds

from t2t_repro.data.parallel_files import (
    SGML_SUFFIX, check_aligned, check_line_ends, is_empty, read_pairs, split_files,
)
from t2t_repro.data.problem import SPLITS
from t2t_repro.data.text_problem import TextPairProblem
from t2t_repro.decode_settings import TRANSLATION_DECODE_SETTINGS
from t2t_repro.errors import UserError, first_line

TFDS_SPLITS = {"train": "train", "dev": "validation", "test": "test"}


class TranslationProblem(TextPairProblem):
    """Translation from `source_language` to `target_language`, one shared vocabulary unless
    `shared_vocabulary` is False; the registered problem hands in its scorer (BLEU into the target language)."""

    decode_settings = TRANSLATION_DECODE_SETTINGS
    postprocess_note = "none: outputs are final"
    source_language: str
    target_language: str
    tfds_name: str = ""  # e.g. "wmt14_translate/de-en"; empty: local text files only
    sgml_sets: dict = {}  # split -> the WMT test set whose official SGML files may stand for it

    def vocabulary_languages(self, side):
        return {"source": (self.source_language,), "target": (self.target_language,)}.get(
            side, (self.source_language, self.target_language))

    def raw_text_dir(self, tmp_dir, manual_dir):
        """The directory of plain parallel text files to read, or None to use TFDS."""
        return manual_dir

    def split_files(self, text_dir, split):
        """(source path, target path) of a split in a text directory (plain text, or SGML for dev and test)."""
        return split_files(text_dir, split, self.source_language, self.target_language, self.sgml_sets.get(split))

    def expected_files(self, text_dir):
        """Paths of the six parallel files a text directory must hold."""
        return [path for split in SPLITS for path in self.split_files(text_dir, split)]

    def expected_files_note(self):
        """What a text directory must hold, for messages: "line-aligned files train.en, ... (...)"."""
        languages = (self.source_language, self.target_language)
        expected = ", ".join(f"{split}.{language}" for split in SPLITS for language in languages)
        official = "".join(f", {name}-src.{languages[0]}.sgm" for name in self.sgml_sets.values())
        return (f"line-aligned files {expected} (one sentence per line; dev and test may be SGML files: "
                f"{{dev,test}}.<language>.sgm{official} and their -ref files)")

    def source_files(self, tmp_dir, manual_dir):
        """The parallel files read from --manual_dir (none when the text comes from TFDS or is made by code)."""
        text_dir = self.raw_text_dir(tmp_dir, manual_dir)
        if not manual_dir or text_dir != manual_dir:
            return []
        return [path for path in self.expected_files(text_dir) if os.path.isfile(path)]

    def check_raw_data(self, tmp_dir, manual_dir):
        text_dir = self.raw_text_dir(tmp_dir, manual_dir)
        if text_dir is not None:
            self._check_text_dir(text_dir)
            for split in SPLITS:  # before any long work: reading would find a misalignment only at its end
                source_path, target_path = self.split_files(text_dir, split)
                if not source_path.endswith(SGML_SUFFIX):
                    check_aligned(source_path, target_path)
        elif not self.tfds_name:
            raise UserError(f"problem {self.name} reads local files only: pass --manual_dir=DIR with "
                            f"{self.expected_files_note()}")
        else:
            self._tfds_builder(tmp_dir)  # download now, so a failure shows before any long work

    def _check_text_dir(self, text_dir):
        if not os.path.isdir(text_dir):
            raise UserError(f"{text_dir} is not a directory; problem {self.name} expects "
                            f"{self.expected_files_note()} there")
        files = self.expected_files(text_dir)
        directories = [path for path in files if os.path.isdir(path)]
        if directories:
            raise UserError(f"{directories[0]} is a directory, not a text file; problem {self.name} expects "
                            f"{self.expected_files_note()} in {text_dir}")
        dangling = [path for path in files if os.path.islink(path) and not os.path.exists(path)]
        if dangling:
            raise UserError(f"{dangling[0]} is a symbolic link to {os.readlink(dangling[0])}, which does not exist; "
                            f"problem {self.name} expects {self.expected_files_note()} in {text_dir}")
        missing = [path for path in files if not os.path.isfile(path)]
        if missing:
            raise UserError(f"{text_dir} lacks {', '.join(os.path.basename(path) for path in missing)}; problem "
                            f"{self.name} expects {self.expected_files_note()} there")
        empty = [path for path in files if is_empty(path)]
        if empty:
            raise UserError(
                f"{', '.join(empty)} {'is' if len(empty) == 1 else 'are'} empty; problem {self.name} needs "
                "sentences in every split (train, dev, test)"
            )
        for path in files:
            if not path.endswith(SGML_SUFFIX):
                check_line_ends(path)

    def raw_pairs(self, split, tmp_dir, manual_dir):
        text_dir = self.raw_text_dir(tmp_dir, manual_dir)
        if text_dir is not None:
            return self._file_pairs(split, text_dir)
        return self._tfds_pairs(split, tmp_dir)

    def _file_pairs(self, split, text_dir):
        self._check_text_dir(text_dir)
        return read_pairs(*self.split_files(text_dir, split))

    def _tfds_builder(self, tmp_dir):
        """The prepared TFDS builder; a failed download is a UserError saying how to use local files."""
        try:
            builder = tfds.builder(self.tfds_name, data_dir=tmp_dir)
            builder.download_and_prepare()
        except Exception as error:  # network, disk, checksum: whatever failed, the remedy is the same
            reason = first_line(error)
            languages = (self.source_language, self.target_language)
            files = ", ".join(f"{{train,dev,test}}.{language}" for language in languages)
            raise UserError(
                f"TFDS could not download or prepare {self.tfds_name} ({type(error).__name__}: {reason}); "
                f"to use local files instead pass --manual_dir=DIR with line-aligned {files}"
            ) from None
        return builder

    def _tfds_pairs(self, split, tmp_dir):
        builder = self._tfds_builder(tmp_dir)
        dataset = builder.as_dataset(split=TFDS_SPLITS[split], shuffle_files=False)
        for example in tfds.as_numpy(dataset):
            yield example[self.source_language].decode("utf-8"), example[self.target_language].decode("utf-8")

    def postprocess(self, decoded_text, source_text):
        return decoded_text
