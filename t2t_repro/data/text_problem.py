"""TextPairProblem: the whole Problem flow for data that comes as (source text, target text) pairs.

A subclass says where the raw pairs come from (`raw_pairs`) and how its vocabulary is trained (class
attributes); this class generates, verifies and serves the data:

    generate_data: pass 1 streams the train pairs once and keeps a bounded, seeded reservoir sample of
                   sentences (both sides: the vocabulary is shared, section 5.1) to train SentencePiece on;
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
fixed, take what the corpus gives and say so); when more than `UNUSED_WARNING_SHARE` of the pieces never occur
in the encoded train split, datagen says so (each unused piece still costs a row of the output projection and
the softmax at every target position).
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
    encoding_blocks, example_proto, ptb_tree, reading, records, source_fingerprint, split_writer,
)
from t2t_repro.data import vocabulary as vocabulary_module
from t2t_repro.data.encoding_blocks import BlockJob
from t2t_repro.data.problem import SPLITS, Problem
from t2t_repro.data.split_writer import EncodingPool
from t2t_repro.data.vocabulary import MODEL_SUFFIX, Vocabulary, train_vocabulary
from t2t_repro.errors import UserError
from t2t_repro.settings import dict_differences

VOCAB_PREFIX = "vocab"
UNUSED_WARNING_SHARE = 0.10
_SAMPLE_SEED = 20170612  # the paper's arXiv date; any fixed seed keeps the vocabulary reproducible
# Modules whose code shapes the generated data besides the problem's own classes (see `data_version`).
_ENCODING_MODULES = (records, vocabulary_module, ptb_tree, example_proto, encoding_blocks, split_writer)


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
    """A Problem whose raw data is (source text, target text) pairs, both sides sharing one vocabulary."""

    vocab_size = 8000
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
        differences = dict_differences(metadata.get("problem_settings", {}), self.data_settings(), "data")
        if differences:
            raise UserError(f"{directory} holds data of problem {self.name} made with other problem settings "
                            f"({differences}); {remedy}")
        made_from = metadata.get("manual_dir")
        if manual_dir and made_from and os.path.abspath(manual_dir) != made_from:
            raise UserError(f"{directory} holds data of problem {self.name} made from --manual_dir={made_from}, not "
                            f"{os.path.abspath(manual_dir)}; {remedy}")
        change = manual_dir and made_from and source_fingerprint.first_change(metadata.get("source_files", {}),
                                                                             made_from)
        if change:
            raise UserError(f"{change} after the data of problem {self.name} in {directory} was made from it; "
                            f"{remedy}")

    def vocabulary_report(self, data_dir):
        """The vocabulary's figures for report.json: its size (requested and trained) and the ordinary pieces
        (neither reserved nor byte fallback) that never occur in the encoded train split."""
        metadata = self.metadata(data_dir)
        unused = metadata["splits"]["train"].get("unused_ids")
        ordinary = metadata.get("vocab_ordinary_pieces")
        report = {"size": metadata["vocab_size"], "requested_size": metadata.get("vocab_requested_size"),
                  "model_type": metadata.get("vocab_model_type"), "ordinary_pieces": ordinary,
                  "unused_in_train": unused}
        if unused is not None and ordinary:
            report["unused_share"] = round(unused / ordinary, 4)
        return report

    def vocabulary(self, data_dir):
        self.metadata(data_dir)
        return Vocabulary(os.path.join(self.problem_dir(data_dir), VOCAB_PREFIX + MODEL_SUFFIX))

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
        vocabulary_module.check_vocab_size(self.vocab_size, len(self.vocab_user_symbols()))
        self.check_existing_data(data_dir, manual_dir)
        if records.is_complete(final_dir, verify_checksums=True, data_version=version):
            return self._summary(records.read_metadata(final_dir), final_dir, True, time.perf_counter() - start)
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
        """Writes the vocabulary, every split and the metadata into `work_dir`; returns the metadata."""
        model_path = os.path.join(work_dir, VOCAB_PREFIX + MODEL_SUFFIX)
        if vocabulary_from is None:
            sample, train_pairs = self._vocabulary_sample(tmp_dir, manual_dir)
            print(f"{self.name}: training a {self.vocab_size:,}-piece {self.vocab_model_type} vocabulary on "
                  f"{len(sample):,} sentences", file=sys.stderr, flush=True)
            vocabulary = train_vocabulary(sample, model_path[: -len(MODEL_SUFFIX)], self.vocab_size,
                                          self.vocab_model_type, self.vocab_user_symbols())
            del sample
            _return_freed_memory()  # the peak so far, before the workers add theirs
            self._check_vocabulary_size(vocabulary.vocab_size)
        else:
            print(f"{self.name}: encoding with the {vocabulary_from.vocab_size:,}-piece vocabulary of "
                  f"{self.vocab_from}", file=sys.stderr, flush=True)
            safe_write.write_file(model_path, vocabulary_from.serialized_model)
            vocabulary = Vocabulary(model_path)
            train_pairs = None
        trained_sha256 = records.file_sha256(vocabulary.model_path)
        if vocabulary_sha256 and trained_sha256 != vocabulary_sha256:
            raise UserError(f"problem {self.name} now trains another vocabulary (sha256 {trained_sha256[:12]}...) "
                            f"than the run being restarted trained with ({vocabulary_sha256[:12]}...): its settings "
                            "or code changed; nothing was regenerated or published; undo the change, or train a "
                            "new run (--output_dir) on its own --data_dir")
        splits = {}
        with EncodingPool(workers) as pool:
            for split in SPLITS:
                total = train_pairs if split == "train" else None
                splits[split] = self._write_split(pool, work_dir, split, vocabulary, tmp_dir, manual_dir, total)
        ordinary_pieces = len(vocabulary.ordinary_ids())
        self._report_unused_pieces(vocabulary.vocab_size, ordinary_pieces, splits["train"]["unused_ids"])
        seconds = time.perf_counter() - start
        return records.write_metadata(
            work_dir,
            {
                "problem": self.name,
                "problem_settings": self.data_settings(),
                "manual_dir": os.path.abspath(manual_dir) if manual_dir else None,
                "source_files": self._source_fingerprint(tmp_dir, manual_dir),
                "data_version": version,
                "vocab_size": vocabulary.vocab_size,
                "vocab_requested_size": self.vocab_size,
                "vocab_model_type": self.vocab_model_type,
                "vocab_ordinary_pieces": ordinary_pieces,
                "vocab_file": VOCAB_PREFIX + MODEL_SUFFIX,
                "vocab_sha256": trained_sha256,
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

    def _vocab_size_is_a_setting(self):
        return "vocab_size" in self.data_settings()

    def _check_vocabulary_size(self, trained_size):
        """A vocab_size the user chose and the corpus cannot give is an error; a fixed one is taken as reached."""
        if trained_size >= self.vocab_size:
            return
        reached = (f"SentencePiece's {self.vocab_model_type} training on this corpus reaches {trained_size:,} "
                   f"pieces, not the {self.vocab_size:,} requested")
        if self._vocab_size_is_a_setting():
            raise UserError(f"problem {self.name}: vocab_size={self.vocab_size} cannot be reached: {reached}; set "
                            f"vocab_size={trained_size} or less (--problem_overrides)")
        print(f"{self.name}: {reached} (its class fixes vocab_size; for your own files translate_files and "
              "parse_files take it as a setting)", file=sys.stderr, flush=True)

    def _report_unused_pieces(self, vocab_size, ordinary_pieces, unused):
        """Says, in one line, when more than UNUSED_WARNING_SHARE of the ordinary pieces (neither reserved nor
        byte fallback) never occur in the train split."""
        share = unused / max(1, ordinary_pieces)
        if share <= UNUSED_WARNING_SHARE:
            return
        how = ("--problem_overrides=vocab_size=N" if self._vocab_size_is_a_setting()
               else "the problem class's vocab_size; translate_files and parse_files take it as a setting")
        print(f"{self.name}: {unused:,} of the {ordinary_pieces:,} vocabulary pieces ({share:.0%}) never occur in the "
              f"encoded train split; each costs output-projection and softmax work at every target token: a "
              f"vocab_size near {vocab_size - unused:,} covers the same text ({how})", file=sys.stderr, flush=True)

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
        return [sentence for pair in reservoir for sentence in pair], count

    def _write_split(self, pool, work_dir, split, vocabulary, tmp_dir, manual_dir, total):
        """Pass 2 for one split (`split_writer`): encodes, filters (train only), writes shards and (dev/test)
        the raw texts. Records the split's counts and its shortest pair (the longer side's ids, EOS included)."""
        keep_text = split != "train"
        job = BlockJob(vocabulary.model_path, os.path.join(work_dir, f".blocks-{split}"), split,
                       self.train_shards if split == "train" else 1, self.max_tokens_per_side, keep_text)
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
    return (
        f"{summary['problem']}: {action} {', '.join(parts)} examples; vocab {summary['vocab_size']:,}; "
        f"{summary['seconds']:.1f} s{speed}; in {summary['directory']}"
    )
