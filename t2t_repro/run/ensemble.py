"""The models of several runs decoding together (t2t-repro-decoder --ensemble): one `Ensemble` of their
restored models, checked to be of one problem and one vocabulary.

    ensemble = restore_ensemble("runs/a", ["runs/b", "runs/c"])
    settings = ensemble.decode_settings(beam_size=4)

Only the first run's checkpoint may be chosen (--checkpoint); the others decode with their default one (the
averaged one when it is current, else the latest). Decode settings, post-processing and the vocabulary are the
first run's problem's; sources are truncated to the shortest max_length among the runs, so that every model
reads what it was built to.
"""

import dataclasses

from t2t_repro.decode.ensemble import Ensemble
from t2t_repro.errors import UserError
from t2t_repro.run.layout import RunLayout, vocabulary_sha256
from t2t_repro.run.restore import restore_run


@dataclasses.dataclass
class LoadedEnsemble:
    """Restored runs (`LoadedRun`s, the first one's problem and vocabularies serving all) and their `Ensemble`."""

    runs: list
    model: Ensemble

    @property
    def problem(self):
        return self.runs[0].problem

    @property
    def vocabularies(self):
        return self.runs[0].vocabularies

    @property
    def description(self):
        """What decodes, for messages: each run's checkpoint."""
        return f"an ensemble of {len(self.runs)} models: {', '.join(run.checkpoint for run in self.runs)}"

    def decode_settings(self, **flags):
        """The first run's decode settings, sources truncated to the shortest max_length, then `flags`."""
        shortest = min(run.hparams.max_length for run in self.runs)
        return self.runs[0].decode_settings(max_input_length=shortest).override(**flags)


def _check_same_task(first_dir, first, other_dir, other):
    """UserError naming `other_dir` when its run (RunInfo `other`) is not of the first run's problem, problem
    settings and recorded vocabulary. A run and its children, fine-tuned (--warm_start_from) or trained on data
    encoded with its vocabulary (the vocab_from setting), may differ in problem when they recorded one
    vocabulary; the first run's problem decodes and scores."""
    related = any(info.warm_start or info.problem_settings.get("vocab_from") for info in (first, other))
    if related and first.vocabulary_sha256 and first.vocabulary_sha256 == other.vocabulary_sha256:
        return
    if other.problem != first.problem:
        raise UserError(f"--ensemble: {other_dir} is a run of problem {other.problem!r}, not {first.problem!r} as "
                        f"{first_dir}; an ensemble's runs must share their problem")
    if first.problem_settings and other.problem_settings:  # runs recorded before the settings were: not compared
        keys = sorted(key for key in {**first.problem_settings, **other.problem_settings}
                      if first.problem_settings.get(key) != other.problem_settings.get(key))
        if keys:
            details = ", ".join(f"{key}={other.problem_settings.get(key)!r}, not {first.problem_settings.get(key)!r}"
                                for key in keys)
            raise UserError(f"--ensemble: {other_dir} has other {other.problem} settings than {first_dir} "
                            f"({details}); an ensemble's runs must share their problem")
    _check_same_vocabulary(first_dir, first.vocabulary_sha256, other_dir, other.vocabulary_sha256)


def _check_same_vocabulary(first_dir, first_sha256, other_dir, other_sha256):
    """UserError naming `other_dir` when the two vocabularies' sha256s (`vocabulary_sha256`; "": unknown) differ."""
    if first_sha256 and other_sha256 and first_sha256 != other_sha256:
        raise UserError(f"--ensemble: {other_dir} trained with another vocabulary than {first_dir} (sha256 "
                        f"{other_sha256[:12]}..., not {first_sha256[:12]}...); an ensemble's runs must share it (with "
                        "separate vocabularies: both sides)")


def restore_ensemble(output_dir, other_dirs, checkpoint=None, precision="float32", usr_dir=None):
    """A `LoadedEnsemble` of the run in `output_dir` (from `checkpoint`, by default its default one) and the runs in
    `other_dirs`, every model computing in `precision`. Runs of another problem or vocabulary (run.json's
    records, and the vocabularies themselves for runs that recorded none) are refused, naming the run, before
    any checkpoint is read where the records tell."""
    dirs = [str(output_dir), *map(str, other_dirs)]
    infos = [RunLayout(directory).load_info() for directory in dirs]
    for directory, info in zip(dirs[1:], infos[1:]):
        _check_same_task(dirs[0], infos[0], directory, info)
    runs = [restore_run(dirs[0], checkpoint, precision, usr_dir)]
    runs += [restore_run(directory, None, precision, usr_dir) for directory in dirs[1:]]
    first = runs[0].vocabularies
    for directory, run in zip(dirs[1:], runs[1:]):
        _check_same_vocabulary(dirs[0], vocabulary_sha256(first), directory, vocabulary_sha256(run.vocabularies))
        sizes = [(v.source.vocab_size, v.target.vocab_size) for v in (run.vocabularies, first)]
        if sizes[0] != sizes[1]:  # vocabularies of a kind without a sha256
            raise UserError(f"--ensemble: {directory} trained with another vocabulary than {dirs[0]} "
                            f"(source and target ids {sizes[0]}, not {sizes[1]}); an ensemble's runs must share it")
    return LoadedEnsemble(runs, Ensemble([run.model for run in runs]))
