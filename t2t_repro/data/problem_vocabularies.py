"""A TextPairProblem's vocabularies in its data directory: trained on its train sample, or copied from a run's
(vocab_from), described in the metadata, read back, and reported.

Shared (section 5.1, the default): one SentencePiece model, `vocab.model`, trained on both sides of the sample;
the metadata keeps the fields it has always had (vocab_size, vocab_file, vocab_sha256, ...). Separate
(`shared_vocabulary=false`): `vocab.source.model` trained on the sample's sources and `vocab.target.model` on its
targets; vocab_size, vocab_file and vocab_ordinary_pieces then describe the target side (the softmax), vocab_sha256
is `Vocabularies.sha256` of the pair, and `vocabularies` has each side's figures and sha256.
"""

import os
import sys

from t2t_repro import safe_write
from t2t_repro.data.vocabulary import MODEL_SUFFIX, Vocabularies, Vocabulary, train_vocabulary
from t2t_repro.errors import UserError

UNUSED_WARNING_SHARE = 0.10
SHARED_PREFIX = "vocab"
SIDE_PREFIXES = {"source": "vocab.source", "target": "vocab.target"}
SIDES = ("source", "target")


def train_vocabularies(problem, sample, work_dir):
    """Trains the problem's vocabularies on `sample` (a list of (source, target) strings) into `work_dir`."""
    if problem.shared_vocabulary:
        sentences = [sentence for pair in sample for sentence in pair]
        return Vocabularies.shared_one(_train_side(problem, "shared", sentences, work_dir))
    return Vocabularies(*(_train_side(problem, side, [pair[i] for pair in sample], work_dir)
                          for i, side in enumerate(SIDES)))


def _train_side(problem, side, sentences, work_dir):
    size = problem.requested_vocab_size(side)
    coverage = problem.vocabulary_coverage(side)
    what = "" if side == "shared" else f"{side} "
    print(f"{problem.name}: training a {size:,}-piece {problem.vocab_model_type} {what}vocabulary on "
          f"{len(sentences):,} sentences (character_coverage {coverage})", file=sys.stderr, flush=True)
    prefix = os.path.join(work_dir, SIDE_PREFIXES.get(side, SHARED_PREFIX))
    vocabulary = train_vocabulary(sentences, prefix, size, problem.vocab_model_type, problem.vocab_user_symbols(),
                                  coverage, problem.vocab_size_setting(side))
    check_vocabulary_size(problem, side, vocabulary.vocab_size)
    return vocabulary


def _size_is_a_setting(problem, side):
    return problem.vocab_size_setting(side) in problem.data_settings()


def check_vocabulary_size(problem, side, trained_size):
    """A vocabulary size the user chose and the corpus cannot give is an error; a fixed one is taken as reached
    (with a word). `side`: "shared", "source" or "target"."""
    requested = problem.requested_vocab_size(side)
    if trained_size >= requested:
        return
    name = problem.vocab_size_setting(side)
    text = "this corpus" if side == "shared" else f"this corpus's {side} side"
    reached = (f"SentencePiece's {problem.vocab_model_type} training on {text} reaches {trained_size:,} "
               f"pieces, not the {requested:,} requested")
    if _size_is_a_setting(problem, side):
        remedy = name if side == "shared" else f"{side}_vocab_size"  # one side's own size, if separate
        raise UserError(f"problem {problem.name}: {name}={requested} cannot be reached: {reached}; set "
                        f"{remedy}={trained_size} or less (--problem_overrides)")
    print(f"{problem.name}: {reached} (its class fixes {name}; for your own files translate_files and "
          "parse_files take it as a setting)", file=sys.stderr, flush=True)


def report_unused_pieces(problem, fields, train_counts):
    """Says, in one line a vocabulary, when more than UNUSED_WARNING_SHARE of its ordinary pieces (neither
    reserved nor byte fallback) never occur in the train split: each is a row the model learns for nothing."""
    if "vocabularies" in fields:
        sides = [(side, figures["size"], figures["ordinary_pieces"], figures["unused_in_train"])
                 for side, figures in fields["vocabularies"].items()]
    else:
        sides = [("shared", fields["vocab_size"], fields["vocab_ordinary_pieces"], train_counts["unused_ids"])]
    for side, vocab_size, ordinary_pieces, unused in sides:
        share = unused / max(1, ordinary_pieces)
        if share <= UNUSED_WARNING_SHARE:
            continue
        name = problem.vocab_size_setting(side)
        how = (f"--problem_overrides={name}=N" if _size_is_a_setting(problem, side)
               else "the problem class's vocab_size; translate_files and parse_files take it as a setting")
        what = "" if side == "shared" else f"{side} "
        cost = ("a row of the source embedding" if side == "source"
                else "output-projection and softmax work at every target token")
        print(f"{problem.name}: {unused:,} of the {ordinary_pieces:,} {what}vocabulary pieces ({share:.0%}) never "
              f"occur in the encoded train split; each costs {cost}: a {name} near {vocab_size - unused:,} covers "
              f"the same text ({how})", file=sys.stderr, flush=True)


def copy_vocabularies(vocabularies, work_dir):
    """`vocabularies` (a run's, for vocab_from) written into `work_dir` under this layout's names."""
    def copy(side, vocabulary):
        path = os.path.join(work_dir, SIDE_PREFIXES.get(side, SHARED_PREFIX) + MODEL_SUFFIX)
        safe_write.write_file(path, vocabulary.serialized_model)
        return Vocabulary(path)

    if vocabularies.shared:
        return Vocabularies.shared_one(copy("shared", vocabularies.target))
    return Vocabularies(copy("source", vocabularies.source), copy("target", vocabularies.target))


def metadata_fields(problem, vocabularies, train_counts):
    """The metadata's vocabulary fields; `train_counts` is the train split's (its unused ids)."""
    target = vocabularies.target
    fields = {
        "vocab_size": target.vocab_size,
        "vocab_requested_size": problem.requested_vocab_size("target" if not vocabularies.shared else "shared"),
        "vocab_model_type": problem.vocab_model_type,
        "vocab_ordinary_pieces": len(target.ordinary_ids()),
        "vocab_file": os.path.basename(target.model_path),
        "vocab_sha256": vocabularies.sha256,
    }
    if vocabularies.shared:
        return fields
    sha256s = vocabularies.side_sha256s()
    unused = {"source": train_counts.get("unused_source_ids"), "target": train_counts.get("unused_ids")}
    fields["shared_vocabulary"] = False
    fields["vocabularies"] = {
        side: {"size": vocabulary.vocab_size, "requested_size": problem.requested_vocab_size(side),
               "file": os.path.basename(vocabulary.model_path), "sha256": sha256s[side],
               "ordinary_pieces": len(vocabulary.ordinary_ids()), "unused_in_train": unused[side]}
        for side, vocabulary in zip(SIDES, (vocabularies.source, target))
    }
    return fields


def read_vocabularies(directory, metadata):
    """The `Vocabularies` of generated data in `directory`, from its metadata."""
    if metadata.get("shared_vocabulary", True):
        return Vocabularies.shared_one(Vocabulary(os.path.join(directory, metadata.get("vocab_file") or
                                                               SHARED_PREFIX + MODEL_SUFFIX)))
    sides = metadata["vocabularies"]
    return Vocabularies(*(Vocabulary(os.path.join(directory, sides[side]["file"])) for side in SIDES))


def vocabulary_report(metadata):
    """report.json's `vocabulary` block: the size (requested and trained), the model type and the ordinary pieces
    (neither reserved nor byte fallback) that never occur in the encoded train split; with separate vocabularies
    one such block per side under "source" and "target"."""
    if not metadata.get("shared_vocabulary", True):
        return {"shared": False, "model_type": metadata.get("vocab_model_type"),
                **{side: _side_report(figures) for side, figures in metadata["vocabularies"].items()}}
    return _side_report({"size": metadata["vocab_size"], "requested_size": metadata.get("vocab_requested_size"),
                         "model_type": metadata.get("vocab_model_type"),
                         "ordinary_pieces": metadata.get("vocab_ordinary_pieces"),
                         "unused_in_train": metadata["splits"]["train"].get("unused_ids")})


def _side_report(figures):
    report = {key: figures.get(key) for key in ("size", "requested_size", "model_type", "ordinary_pieces",
                                                "unused_in_train", "sha256") if key in figures}
    unused, ordinary = figures.get("unused_in_train"), figures.get("ordinary_pieces")
    if unused is not None and ordinary:
        report["unused_share"] = round(unused / ordinary, 4)
    return report
