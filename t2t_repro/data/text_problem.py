"""TextPairProblem: the whole Problem flow for data that comes as (source text, target text) pairs.

A subclass says where the raw pairs come from (`raw_pairs`) and how its vocabulary is trained (class
attributes); this class generates, verifies and serves the data:

    generate_data: pass 1 streams the train pairs once and keeps a bounded, seeded reservoir sample of
                   sentences (both sides: the vocabulary is shared, section 5.1) to train SentencePiece on;
                   pass 2 streams every split again, encodes it in chunks and writes TFRecord shards.
                   Nothing holds the whole corpus, so memory stays flat however large the corpus is.
    dataset:       {"inputs", "targets"} int32 ids ending in EOS_ID.
    text_pairs:    the dev/test (source, reference) texts, in order, for decoding and scoring.

Every sentence has its surrounding whitespace removed. Train pairs with an empty side, or with a side longer
than `max_tokens_per_side` ids, are dropped and counted; dev and test are kept whole, since they are what is
scored. A split left without any example is an error: training would report a meaningless dev loss.

The metadata records the `data_version` that made the data (a digest of the code that reads, encodes and
writes it, and the SentencePiece version); data of another version is regenerated, not reused. Generation is
deterministic, so regenerating after a change that does not affect the data gives the same bytes.
"""

import abc
import hashlib
import itertools
import json
import os
import random
import sys
import time

import sentencepiece

from t2t_repro import safe_write
from t2t_repro.data import ptb_tree, records, vocabulary as vocabulary_module
from t2t_repro.data.problem import SPLITS, Problem
from t2t_repro.data.vocabulary import MODEL_SUFFIX, Vocabulary, train_vocabulary
from t2t_repro.errors import UserError
from t2t_repro.special_tokens import EOS_ID

VOCAB_PREFIX = "vocab"
_SAMPLE_SEED = 20170612  # the paper's arXiv date; any fixed seed keeps the vocabulary reproducible
# Modules whose code shapes the generated data besides the problem's own classes (see `data_version`).
_ENCODING_MODULES = (records, vocabulary_module, ptb_tree)


def _text_file(split):
    return f"{split}.pairs.jsonl"


def source_digest(paths):
    """A short sha256 of the contents of the files `paths`, in order: a version of the code they hold."""
    digest = hashlib.sha256()
    for path in paths:
        with open(path, "rb") as source:
            digest.update(source.read())
    return digest.hexdigest()[:16]


class TextPairProblem(Problem):
    """A Problem whose raw data is (source text, target text) pairs, both sides sharing one vocabulary."""

    vocab_size = 8000
    vocab_model_type = "bpe"  # a SentencePiece model type: bpe, unigram, char, word
    vocab_sample_sentences = 2_000_000  # sentences (source and target counted separately) to train it on
    max_tokens_per_side = 1024  # generous: far above any hparams max_length, it only drops broken pairs
    train_shards = 16
    encode_chunk_pairs = 8192  # pairs encoded per call (several threads), bounding memory in pass 2

    @abc.abstractmethod
    def raw_pairs(self, split, tmp_dir, manual_dir):
        """Yields the split's (source, target) strings in a fixed order."""

    def check_raw_data(self, tmp_dir, manual_dir):
        """Raises UserError if the raw data is clearly unusable, before any long work starts."""

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
        return records.read_metadata(directory)

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

    def dataset(self, split, data_dir):
        _check_split(split)
        metadata = self.metadata(data_dir)
        return records.read_split(self.problem_dir(data_dir), metadata["splits"][split]["shards"])

    def text_pairs(self, split, data_dir):
        _check_split(split)
        if split == "train":
            raise UserError("only the dev and test splits keep their text; the train split is stored as ids")
        self.metadata(data_dir)
        path = os.path.join(self.problem_dir(data_dir), _text_file(split))
        with open(path, encoding="utf-8") as lines:
            return [tuple(json.loads(line)) for line in lines]

    # Generation.

    def generate_data(self, data_dir, tmp_dir=None, manual_dir=None):
        start = time.perf_counter()
        final_dir = self.problem_dir(data_dir)
        version = self.data_version()
        if records.is_complete(final_dir, verify_checksums=True, data_version=version):
            return self._summary(records.read_metadata(final_dir), final_dir, True, time.perf_counter() - start)
        self.check_raw_data(tmp_dir, manual_dir)
        try:
            work_dir = records.work_directory(final_dir)
        except OSError as error:
            raise UserError(f"cannot write to data_dir {data_dir}: {error.strerror}") from None
        try:
            metadata = self._generate(work_dir, version, tmp_dir, manual_dir, start)
            records.publish(work_dir, final_dir, data_version=version)
        finally:
            safe_write.remove(work_dir)  # gone after a failure too; published, it is no longer there
        return self._summary(metadata, final_dir, False, metadata["seconds"])

    def _generate(self, work_dir, version, tmp_dir, manual_dir, start):
        """Writes the vocabulary, every split and the metadata into `work_dir`; returns the metadata."""
        sample, train_pairs = self._vocabulary_sample(tmp_dir, manual_dir)
        vocabulary = train_vocabulary(
            sample,
            os.path.join(work_dir, VOCAB_PREFIX),
            self.vocab_size,
            self.vocab_model_type,
            self.vocab_user_symbols(),
        )
        del sample
        splits = {}
        for split in SPLITS:
            total = train_pairs if split == "train" else None
            splits[split] = self._write_split(work_dir, split, vocabulary, tmp_dir, manual_dir, total)
        seconds = time.perf_counter() - start
        return records.write_metadata(
            work_dir,
            {
                "problem": self.name,
                "data_version": version,
                "vocab_size": vocabulary.vocab_size,
                "vocab_requested_size": self.vocab_size,
                "vocab_model_type": self.vocab_model_type,
                "vocab_file": VOCAB_PREFIX + MODEL_SUFFIX,
                "vocab_sha256": records.file_sha256(vocabulary.model_path),
                "max_tokens_per_side": self.max_tokens_per_side,
                "splits": splits,
                "seconds": round(seconds, 3),
            },
        )

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
        for count, (source, target) in enumerate(self._stripped_pairs("train", tmp_dir, manual_dir), 1):
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

    def _write_split(self, work_dir, split, vocabulary, tmp_dir, manual_dir, total):
        """Pass 2 for one split: encodes, filters (train only), writes shards and (dev/test) the raw texts.
        Records the split's counts and its shortest pair (the longer side's ids, EOS included)."""
        counts = {"examples": 0, "dropped_empty": 0, "dropped_too_long": 0}
        shortest = None
        keep_text = split != "train"
        text_out = open(os.path.join(work_dir, _text_file(split)), "w", encoding="utf-8") if keep_text else None

        def encoded_examples():
            nonlocal shortest
            pairs = self._stripped_pairs(split, tmp_dir, manual_dir)
            while chunk := list(itertools.islice(pairs, self.encode_chunk_pairs)):
                if not keep_text:
                    kept = [pair for pair in chunk if pair[0] and pair[1]]
                    counts["dropped_empty"] += len(chunk) - len(kept)
                    chunk = kept
                sources = vocabulary.encode_batch([source for source, _ in chunk])
                targets = vocabulary.encode_batch([target for _, target in chunk])
                for pair, source_ids, target_ids in zip(chunk, sources, targets):
                    source_ids.append(EOS_ID)
                    target_ids.append(EOS_ID)
                    too_long = max(len(source_ids), len(target_ids)) > self.max_tokens_per_side
                    if too_long and not keep_text:
                        counts["dropped_too_long"] += 1
                        continue
                    if keep_text:
                        text_out.write(json.dumps(pair, ensure_ascii=False) + "\n")
                    longer = max(len(source_ids), len(target_ids))
                    shortest = longer if shortest is None else min(shortest, longer)
                    yield source_ids, target_ids

        try:
            shards = self.train_shards if split == "train" else 1
            names, counts["examples"] = records.write_split(
                work_dir, split, encoded_examples(), shards, total=total, shuffle=split == "train"
            )
        finally:
            if text_out:
                text_out.close()
        if not counts["examples"]:
            dropped = counts["dropped_empty"] + counts["dropped_too_long"]
            limit = self.max_tokens_per_side
            detail = f" ({dropped} pairs dropped: a side empty or over {limit} tokens)" if dropped else ""
            raise UserError(f"problem {self.name}: the {split} split holds no example{detail}; every split needs "
                            "sentence pairs")
        return dict(counts, shards=names, shortest_pair=shortest)

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
