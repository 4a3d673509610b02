"""Which checkpoint of a run a tool restores: the one --checkpoint vocabulary of the decoder, the exporters
(SavedModel and CTranslate2) and the visualizer.

    (not given)  the averaged checkpoint when it is as new as the newest training checkpoint, else the newest
                 training checkpoint (a damaged one is an error naming the damaged file)
    averaged     output_dir/averaged: the average of the last checkpoints, the paper's model (section 6.1)
    latest       the newest training checkpoint that restores, found as the trainer finds the one it resumes
                 from: damaged newer ones are skipped, and the tool says so
    best         output_dir/best: the weights of the best dev evaluation (`BestCheckpoint`)
    ckpt-N       a training checkpoint in output_dir/checkpoints; or any checkpoint prefix, relative to
                 output_dir or to the current directory, or absolute, of this run or of another run directory
                 trained with the same vocabulary (its run.json's sha256; a checkpoint outside any run directory
                 is refused: its vocabulary cannot be checked)

Checkpoints are found by listing their ckpt-N.index files, never through TensorFlow's `checkpoint` index file
alone, which may be lost or stale. The tool says on stderr which checkpoint it restored, with its step.
"""

import functools
import os
import sys

from t2t_repro.errors import UserError, first_line
from t2t_repro.run.layout import RunLayout
from t2t_repro.train.checkpoints import (
    all_finite, checkpoint_prefixes, damage_details, latest_checkpoint, read_model, restore_model,
    restore_newest,
)

NAMES = ("averaged", "latest", "best")


def prefix_step(prefix):
    """The step in a checkpoint prefix named ckpt-N (or anything ending in -N), or None."""
    tail = os.path.basename(prefix).rsplit("-", 1)[-1]
    return int(tail) if tail.isdigit() else None


def inventory(layout):
    """What checkpoints the run has, for messages: "averaged/ckpt-20, best/ckpt-6, checkpoints/ckpt-5 ...", or
    "none"."""
    found = [latest_checkpoint(layout.averaged_dir), latest_checkpoint(layout.best_dir),
             *checkpoint_prefixes(layout.checkpoint_dir)]
    names = [os.path.relpath(prefix, layout.output_dir) for prefix in found if prefix]
    return ", ".join(names) if names else "none"


def _named(layout, name, flag="--checkpoint"):
    """The prefix of --checkpoint=averaged or best; a UserError naming what exists when there is none."""
    directory = layout.averaged_dir if name == "averaged" else layout.best_dir
    prefix = latest_checkpoint(directory)
    if prefix is None:
        how = ("t2t-repro-avg-checkpoints makes one" if name == "averaged"
               else "a run keeps one when it evaluates on dev, every --eval_steps")
        raise UserError(f"{flag}={name}: {directory} holds no checkpoint ({how}); this run has: "
                        f"{inventory(layout)}")
    return prefix


def _given(layout, name):
    """The prefix a --checkpoint path names: in checkpoints/, in output_dir, or as given."""
    name = name[: -len(".index")] if name.endswith(".index") else name
    for prefix in (os.path.join(layout.checkpoint_dir, name), os.path.join(layout.output_dir, name), name):
        if os.path.isfile(prefix + ".index"):
            _check_same_vocabulary(layout, prefix)
            return prefix
    raise UserError(f"checkpoint {name} not found (no {name}.index in {layout.checkpoint_dir}, in "
                    f"{layout.output_dir} or as given); give averaged, latest, best or one this run has: "
                    f"{inventory(layout)}")


def _owning_run(prefix):
    """The run directory a checkpoint prefix lies in (its directory, or the one above: checkpoints/, averaged/,
    best/), found by its run.json; None when there is none."""
    directory = os.path.dirname(os.path.abspath(prefix))
    for candidate in (directory, os.path.dirname(directory)):
        if os.path.isfile(RunLayout(candidate).info_file):
            return candidate
    return None


def _check_same_vocabulary(layout, prefix):
    """UserError when the checkpoint `prefix` belongs to another run than `layout`'s whose vocabulary differs
    (its ids would mean other pieces: every output wrong, without a word), or to no run at all (unknowable)."""
    owner = _owning_run(prefix)
    if owner is None:
        raise UserError(f"checkpoint {prefix} is not in a t2t-repro run directory (no run.json beside it or its "
                        "directory), so whether it was trained with this run's vocabulary cannot be checked; give "
                        f"a checkpoint of a run, or copy it into {layout.checkpoint_dir}")
    if os.path.samefile(owner, layout.output_dir):
        return
    ours, theirs = layout.load_info().vocabulary_sha256, RunLayout(owner).load_info().vocabulary_sha256
    if ours and theirs and ours != theirs:
        raise UserError(f"checkpoint {prefix} is of the run {owner}, which trained with another vocabulary than "
                        f"{layout.output_dir} (sha256 {theirs[:12]}..., not {ours[:12]}...); its ids would mean "
                        "other pieces")


def _restore_latest(layout, model):
    """Restores the newest training checkpoint that restores with finite weights; returns its prefix."""

    def mismatch(prefix, error):
        return UserError(f"checkpoint {prefix} does not fit the run's model: {first_line(error)}")

    prefixes = checkpoint_prefixes(layout.checkpoint_dir, complete=False)
    prefix, damaged = restore_newest(prefixes, functools.partial(read_model, model),
                                     lambda: all_finite(model.weights), mismatch)
    if prefix is None:
        if damaged:
            raise UserError(f"--checkpoint=latest: no training checkpoint in {layout.checkpoint_dir} restores "
                            f"({damage_details(damaged)})")
        raise UserError(f"--checkpoint=latest: no training checkpoint in {layout.checkpoint_dir}; train first "
                        "with t2t-repro-trainer")
    for skipped, damage in damaged:
        print(f"checkpoint {skipped} is damaged ({damage}): skipped", file=sys.stderr, flush=True)
    return prefix


def find_checkpoint(layout, checkpoint=None, flag="--checkpoint"):
    """The prefix of the run's checkpoint that `checkpoint` names, without restoring it: as `restore_checkpoint`
    chooses, except that latest is the newest complete training checkpoint (a damaged one fails when it is
    restored, naming the damaged file). `flag` names the flag in messages."""
    if checkpoint == "latest":
        prefix = latest_checkpoint(layout.checkpoint_dir)
        if prefix is None:
            raise UserError(f"{flag}=latest: no training checkpoint in {layout.checkpoint_dir}")
        return prefix
    if checkpoint in NAMES:
        return _named(layout, checkpoint, flag)
    if checkpoint:
        return _given(layout, checkpoint)
    prefix = layout.latest_checkpoint()
    if not prefix:
        raise UserError(f"no checkpoint in {layout.output_dir}; train first with t2t-repro-trainer")
    return prefix


def restore_checkpoint(layout, model, checkpoint=None):
    """Restores into the built `model` the checkpoint of the run in `layout` that `checkpoint` names (see the
    module's docstring; None or "": the default); says on stderr which one, with its step; returns its prefix."""
    if checkpoint == "latest":
        prefix, kind = _restore_latest(layout, model), "latest"
    else:
        prefix = find_checkpoint(layout, checkpoint)
        kind = checkpoint if checkpoint in NAMES else "as given" if checkpoint else "the default"
        restore_model(model, prefix)
    step = prefix_step(prefix)
    print(f"using checkpoint {prefix} (step {'unknown' if step is None else step}, {kind})", file=sys.stderr,
          flush=True)
    return prefix
