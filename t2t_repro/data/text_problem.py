"""TextPairProblem: the whole Problem flow for data that comes as (source text, target text) pairs.

A subclass says where the raw pairs come from (`raw_pairs`) and how its vocabulary is trained (class
attributes); this class generates, verifies and serves the data:

    generate_data: pass 1 streams the train pairs once and keeps a bounded, seeded reservoir sample of
                   pairs to train SentencePiece on: one vocabulary on both sides (shared, section 5.1), or
                   each side's own on its sentences (`shared_vocabulary = False`; `problem_vocabularies`);
                   pass 2 streams every split again in blocks, which worker processes encode and write
                   (`--workers`, default one per CPU core; `split_writer`), then deals the examples out to
                   TFRecord shards: the same bytes whatever the number of workers. Nothing holds the whole
                   corpus, so memory stays flat however large the corpus is. Both passes show a progress bar
                   with the rate and (pass 2) the time left.
    dataset:       {"inputs", "targets"} int32 ids ending in EOS_ID.
    text_pairs:    the dev/test (source, reference) texts, in order, for decoding and scoring.

Every sentence has its surrounding whitespace removed. Train pairs with an empty side, or with a side longer
than `max_tokens_per_side` ids, are dropped and counted; dev and test are kept whole, since they are what is
scored. A split left without any example is an error: training would report a meaningless dev loss.

The metadata records the `data_version` that made the data (a digest of the code that reads, encodes and
writes it, and the SentencePiece version); data of another version is regenerated, not reused. Generation is
deterministic, so regenerating after a change that does not affect the data gives the same bytes. It also
records the problem's settings (`Problem.data_settings`) and the --manual_dir the raw data came from: data made
with other settings or from another directory is refused, naming the difference, never reused or replaced; so is
data whose source files (`source_files`, fingerprinted by size, time and content) have changed since.

The vocabulary is sized for the data: where vocab_size is one of the problem's settings, a size SentencePiece
cannot reach on the corpus is an error giving the size it reaches (the paper's problems, whose sizes are
fixed, take what the corpus gives and say so); when more than a tenth of the pieces never occur in the encoded
train split, datagen says so (each unused piece still costs a row of the output projection and the softmax at
every target position); `problem_vocabularies` does both.
"""

import abc
import ctypes
import hashlib
import json
import os
import random
import sys
import time

import sentencepiece
import tqdm

from t2t_repro import safe_write
from t2t_repro.data import (
    encoding_blocks, example_proto, problem_vocabularies, ptb_tree, reading, records, source_fingerprint, split_writer,
)
from t2t_repro.data import vocabulary as vocabulary_module
from t2t_repro.data.encoding_blocks import BlockJob
from t2t_repro.data.problem import SPLITS, Problem
from t2t_repro.data.split_writer import EncodingPool
from t2t_repro.data.vocabulary import default_character_coverage
from t2t_repro.errors import UserError

_SAMPLE_SEED = 20170612  # the paper's arXiv date; any fixed seed keeps the vocabulary reproducible
# Modules whose code shapes the generated data besides the problem's own classes (see `data_version`).
_ENCODING_MODULES = (records, vocabulary_module, problem_vocabularies, ptb_tree, example_proto, encoding_blocks,
                     split_writer)


def source_digest(paths):
    """A short sha256 of the contents of the files `paths`, in order: a version of the code they hold."""
    digest = hashlib.sha256()
    for path in paths:
        with open(path, "rb") as source:
            digest.update(source.read())
    return digest.hexdigest()[:16]


def _return_freed_memory():
    """Hands the heap memory freed since (SentencePiece's training, the sample) back to the system, where the C
    library can (glibc's malloc_trim): glibc otherwise keeps gigabytes of it for reuse, on top of the encoding
    that follows."""
    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (AttributeError, OSError):  # not glibc
        pass


class TextPairProblem(Problem):
    """A Problem whose raw data is (source text, target text) pairs, both sides sharing one vocabulary (section
    5.1) unless `shared_vocabulary` is False."""

    vocab_size = 8000  # the shared vocabulary's size
    shared_vocabulary = True  # False: the source and the target side each get a vocabulary of their own
    source_vocab_size = None  # separate vocabularies: each side's size (None: vocab_size)
    target_vocab_size = None
    character_coverage = None  # SentencePiece's; None: by the languages' scripts (`vocabulary_coverage`)
    vocab_model_type = "bpe"  # a SentencePiece model type: bpe, unigram, char, word
    vocab_sample_sentences = 2_000_000  # sentences (source and target counted separately) to train it on
    vocab_from = None  # a run whose vocabulary encodes the data (read by the run layer, given to generate_data)
    max_tokens_per_side = 1024  # generous: far above any hparams max_length, it only drops broken pairs
    train_shards = 16
    encode_chunk_pairs = 8192  # pairs a datagen worker encodes and writes at a time (a block), bounding memory

    @abc.abstractmethod
    def raw_pairs(self, split, tmp_dir, manual_dir):
        """Yields the split's (source, target) strings in a fixed order."""

    def check_raw_data(self, tmp_dir, manual_dir):
        """Raises UserError if the raw data is clearly unusable, before any long work starts."""

    def source_files(self, tmp_dir, manual_dir):
        """The files of `manual_dir` the data is made from, fingerprinted in the metadata (`source_fingerprint`):
        by default every file under it; none without one (data downloaded or made by code)."""
        return source_fingerprint.files_under(manual_dir) if manual_dir else []

    def vocab_user_symbols(self):
        """Strings the vocabulary must keep as single pieces (parsing: tree brackets)."""
        return ()

    def vocabulary_languages(self, side):
        """The language codes of the text a vocabulary of `side` ("shared", "source" or "target") is trained on
        (none known by default)."""
        return ()

    def vocabulary_coverage(self, side):
        """SentencePiece's character_coverage for the vocabulary of `side`: the problem's setting, else what suits
        its languages' scripts."""
        return self.character_coverage or default_character_coverage(self.vocabulary_languages(side))

    def requested_vocab_size(self, side):
        """The size asked for the vocabulary of `side`: "shared", "source" or "target" (a side without a size of
        its own gets vocab_size)."""
        return getattr(self, self.vocab_size_setting(side))

    def vocab_size_setting(self, side):
        """The name of the attribute (the setting, for a problem with settings) that sizes the vocabulary of
        `side`: `<side>_vocab_size` when it is given, else vocab_size."""
        own = f"{side}_vocab_size"
        return own if side != "shared" and getattr(self, own) is not None else "vocab_size"

    def vocabulary_sides(self):
        return ("shared",) if self.shared_vocabulary else ("source", "target")

    def data_version(self):
        """What the generated data depends on besides the raw data: a digest of the code of this problem's
        classes and of the encoding modules, and the SentencePiece version. Subclasses whose raw data is made
        by code add that code's version (the toy problems)."""
        classes = [cls for cls in type(self).__mro__ if issubclass(cls, TextPairProblem)]
        paths = [sys.modules[cls.__module__].__file__ for cls in classes]
        paths += [module.__file__ for module in _ENCODING_MODULES]
        return {"encoding": source_digest(paths), "sentencepiece": sentencepiece.__version__}

    # Layout and reading.

    def problem_dir(self, data_dir):
        """`data_dir/<name>`: several problems share one data_dir."""
        return os.path.join(os.fspath(data_dir), self.name)

    def data_ready(self, data_dir):
        return records.is_complete(self.problem_dir(data_dir), data_version=self.data_version())

    def metadata(self, data_dir):
        """The metadata dict of the generated data (counts, vocab size, checksums)."""
        directory = self.problem_dir(data_dir)
        if not records.is_complete(directory):
            state = "incomplete or corrupt" if os.path.exists(directory) else "missing"
            raise UserError(
                f"data of problem {self.name} in {directory} is {state}; "
                f"run t2t-repro-datagen --problem={self.name} --data_dir={data_dir}"
            )
        metadata = records.read_metadata(directory)
        self._check_made_as_asked(directory, metadata)
        return metadata

    def check_existing_data(self, data_dir, manual_dir=None):
        """Raises UserError when data_dir holds this problem's data made with other settings, or (given
        `manual_dir`) from another --manual_dir: it would train or decode on data the user did not ask for."""
        directory = self.problem_dir(data_dir)
        metadata = records.read_metadata(directory)
        if metadata is not None:
            self._check_made_as_asked(directory, metadata, manual_dir)

    def _check_made_as_asked(self, directory, metadata, manual_dir=None):
        """`check_existing_data` for the metadata already read from `directory`."""
        remedy = f"use another --data_dir, or delete {directory} to generate it anew"
        differences = self.settings_differences(metadata.get("problem_settings", {}), self.data_settings(), "data")
        if differences:
            raise UserError(f"{directory} holds data of problem {self.name} made with other problem settings "
                            f"({differences}); {remedy}")
        made_from = metadata.get("manual_dir")
        if manual_dir and made_from and not safe_write.same_file(manual_dir, made_from):
            raise UserError(f"{directory} holds data of problem {self.name} made from --manual_dir={made_from}, not "
                            f"{os.path.abspath(manual_dir)}; {remedy}")
        change = manual_dir and made_from and source_fingerprint.first_change(metadata.get("source_files", {}),
                                                                             made_from)
        if change:
            raise UserError(f"{change} after the data of problem {self.name} in {directory} was made from it; "
                            f"{remedy}")

    def vocabulary_report(self, data_dir):
        return problem_vocabularies.vocabulary_report(self.metadata(data_dir))

    def vocabularies(self, data_dir):
        return problem_vocabularies.read_vocabularies(self.problem_dir(data_dir), self.metadata(data_dir))

    def check_max_length(self, data_dir, max_length):
        """Raises UserError when no train pair fits `max_length` tokens per side (EOS included): training would
        find no batch to read."""
        train = self.metadata(data_dir)["splits"]["train"]
        shortest = train.get("shortest_pair")
        if shortest is not None and shortest > max_length:
            raise UserError(
                f"max_length={max_length}: no train pair of problem {self.name} fits; the shortest has "
                f"{shortest} tokens on its longer side (EOS included): raise hparams max_length"
            )

    def dataset(self, split, data_dir, max_length=None, shard=None):
        _check_split(split)
        metadata = self.metadata(data_dir)
        return reading.read_split(self.problem_dir(data_dir), metadata["splits"][split]["shards"], max_length, shard)

    def text_pairs(self, split, data_dir):
        _check_split(split)
        if split == "train":
            raise UserError("only the dev and test splits keep their text; the train split is stored as ids")
        self.metadata(data_dir)
        path = os.path.join(self.problem_dir(data_dir), split_writer.text_file_name(split))
        with open(path, encoding="utf-8") as lines:
            return [tuple(json.loads(line)) for line in lines]

    # Generation.

    def generate_data(self, data_dir, tmp_dir=None, manual_dir=None, workers=None, vocabulary_sha256=None,
                      vocabulary_from=None):
        start = time.perf_counter()
        final_dir = self.problem_dir(data_dir)
        version = self.data_version()
        for side in self.vocabulary_sides():
            vocabulary_module.check_vocab_size(self.requested_vocab_size(side), len(self.vocab_user_symbols()),
                                               self.vocab_size_setting(side))
            vocabulary_module.check_character_coverage(self.vocabulary_coverage(side))
        self.check_existing_data(data_dir, manual_dir)
        if records.is_complete(final_dir, verify_checksums=True, data_version=version):
            return self._summary(records.read_metadata(final_dir), final_dir, True, time.perf_counter() - start)
        records.check_replaceable(final_dir, {"--manual_dir": manual_dir, "--tmp_dir": tmp_dir})
        self.check_raw_data(tmp_dir, manual_dir)
        try:
            work_dir = records.work_directory(final_dir)
        except OSError as error:
            raise UserError(f"cannot write to data_dir {data_dir}: {error.strerror}") from None
        try:
            metadata = self._generate(work_dir, version, tmp_dir, manual_dir, start, workers, vocabulary_sha256,
                                      vocabulary_from)
            records.publish(work_dir, final_dir, data_version=version)
        finally:
            safe_write.remove(work_dir)  # gone after a failure too; published, it is no longer there
        return self._summary(metadata, final_dir, False, metadata["seconds"])

    def _generate(self, work_dir, version, tmp_dir, manual_dir, start, workers, vocabulary_sha256=None,
                  vocabulary_from=None):
        """Writes the vocabularies, every split and the metadata into `work_dir`; returns the metadata."""
        if vocabulary_from is None:
            sample, train_pairs = self._vocabulary_sample(tmp_dir, manual_dir)
            vocabularies = problem_vocabularies.train_vocabularies(self, sample, work_dir)
            del sample
            _return_freed_memory()  # the peak so far, before the workers add theirs
        else:
            sizes = (f"{vocabulary_from.target.vocab_size:,}-piece vocabulary" if vocabulary_from.shared else
                     f"{vocabulary_from.source.vocab_size:,}-piece source and {vocabulary_from.target.vocab_size:,}"
                     "-piece target vocabularies")
            print(f"{self.name}: encoding with the {sizes} of {self.vocab_from}", file=sys.stderr, flush=True)
            vocabularies = problem_vocabularies.copy_vocabularies(vocabulary_from, work_dir)
            train_pairs = None
        trained_sha256 = vocabularies.sha256
        if vocabulary_sha256 and trained_sha256 != vocabulary_sha256:
            raise UserError(f"problem {self.name} now trains another vocabulary (sha256 {trained_sha256[:12]}...) "
                            f"than the run being restarted trained with ({vocabulary_sha256[:12]}...): its settings "
                            "or code changed; nothing was regenerated or published; undo the change, or train a "
                            "new run (--output_dir) on its own --data_dir")
        splits = {}
        with EncodingPool(workers) as pool:
            for split in SPLITS:
                total = train_pairs if split == "train" else None
                splits[split] = self._write_split(pool, work_dir, split, vocabularies, tmp_dir, manual_dir, total)
        vocabulary_fields = problem_vocabularies.metadata_fields(self, vocabularies, splits["train"])
        problem_vocabularies.report_unused_pieces(self, vocabulary_fields, splits["train"])
        seconds = time.perf_counter() - start
        return records.write_metadata(
            work_dir,
            {
                "problem": self.name,
                "problem_settings": self.data_settings(),
                "manual_dir": os.path.abspath(manual_dir) if manual_dir else None,
                "source_files": self._source_fingerprint(tmp_dir, manual_dir),
                "data_version": version,
                **vocabulary_fields,
                "vocab_from": os.path.abspath(self.vocab_from) if vocabulary_from is not None else None,
                "max_tokens_per_side": self.max_tokens_per_side,
                "splits": splits,
                "seconds": round(seconds, 3),
            },
        )

    def _source_fingerprint(self, tmp_dir, manual_dir):
        if not manual_dir:
            return {}
        return source_fingerprint.fingerprint(self.source_files(tmp_dir, manual_dir), os.path.abspath(manual_dir))

    def _stripped_pairs(self, split, tmp_dir, manual_dir):
        for source, target in self.raw_pairs(split, tmp_dir, manual_dir):
            yield source.strip(), target.strip()

    def _vocabulary_sample(self, tmp_dir, manual_dir):
        """Pass 1: a seeded reservoir sample of train pairs (both sides), and the number of train pairs."""
        capacity = max(1, self.vocab_sample_sentences // 2)
        rng = random.Random(_SAMPLE_SEED)
        reservoir = []
        seen = 0
        count = 0
        pairs = tqdm.tqdm(self._stripped_pairs("train", tmp_dir, manual_dir), desc="sampling train for the vocabulary",
                          unit=" pairs", mininterval=2.0, unit_scale=True)
        for count, (source, target) in enumerate(pairs, 1):
            if not source or not target:
                continue
            seen += 1
            if len(reservoir) < capacity:
                reservoir.append((source, target))
            else:
                slot = rng.randrange(seen)
                if slot < capacity:
                    reservoir[slot] = (source, target)
        if not reservoir:
            raise UserError(f"problem {self.name}: the train split holds no non-empty sentence pair")
        return reservoir, count

    def _write_split(self, pool, work_dir, split, vocabularies, tmp_dir, manual_dir, total):
        """Pass 2 for one split (`split_writer`): encodes, filters (train only), writes shards and (dev/test)
        the raw texts. Records the split's counts and its shortest pair (the longer side's ids, EOS included)."""
        keep_text = split != "train"
        job = BlockJob(vocabularies.target.model_path, os.path.join(work_dir, f".blocks-{split}"), split,
                       self.train_shards if split == "train" else 1, self.max_tokens_per_side, keep_text,
                       "" if vocabularies.shared else vocabularies.source.model_path)
        pairs = self._stripped_pairs(split, tmp_dir, manual_dir)
        names, counts = split_writer.write_split(pool, job, work_dir, pairs, self.encode_chunk_pairs, total=total,
                                                 shuffle=split == "train")
        if not counts["examples"]:
            dropped = counts["dropped_empty"] + counts["dropped_too_long"]
            limit = self.max_tokens_per_side
            detail = f" ({dropped} pairs dropped: a side empty or over {limit} tokens)" if dropped else ""
            raise UserError(f"problem {self.name}: the {split} split holds no example{detail}; every split needs "
                            "sentence pairs")
        return dict(counts, shards=names)

    def _summary(self, metadata, directory, reused, seconds):
        splits = {
            split: {key: metadata["splits"][split][key] for key in ("examples", "dropped_empty", "dropped_too_long")}
            for split in SPLITS
        }
        summary = {
            "problem": self.name,
            "directory": directory,
            "reused": reused,
            "vocab_size": metadata["vocab_size"],
            "source_vocab_size": metadata.get("vocabularies", {}).get("source", {}).get("size"),
            "splits": splits,
            "seconds": round(seconds, 3),
        }
        if not reused:
            pairs = sum(sum(counts.values()) for counts in splits.values())
            summary["pairs_per_s"] = round(pairs / max(seconds, 1e-9), 1)
        return summary


def _check_split(split):
    if split not in SPLITS:
        raise UserError(f"unknown split {split!r}: must be one of {', '.join(SPLITS)}")


def summary_line(summary):
    """One line: what was generated (or reused), the counts, the vocabulary size and the time."""
    parts = []
    for split, counts in summary["splits"].items():
        dropped = counts["dropped_empty"] + counts["dropped_too_long"]
        detail = f" ({counts['dropped_empty']} empty, {counts['dropped_too_long']} too long dropped)" if dropped else ""
        parts.append(f"{split} {counts['examples']:,}{detail}")
    action = "reused" if summary["reused"] else "generated"
    speed = f", {summary['pairs_per_s']:,.0f} pairs/s" if "pairs_per_s" in summary else ""
    vocab = f"{summary['vocab_size']:,}"
    if summary.get("source_vocab_size"):
        vocab = f"{summary['source_vocab_size']:,} source + {vocab} target"
    return (
        f"{summary['problem']}: {action} {', '.join(parts)} examples; vocab {vocab}; "
        f"{summary['seconds']:.1f} s{speed}; in {summary['directory']}"
    )
