"""A run's data: generated once, by the chief; the other workers of a multi-worker run wait for it.

    line = generate_data("wmt_ende", "D", manual_dir="M", options=DatagenOptions(workers=4))
    prepare_data(problem, "D", tmp_dir, manual_dir, options, chief=trainer.chief)

Datagen publishes the data directory with its metadata written last (`t2t_repro.data.records`), so a worker
that finds `problem.data_ready` true reads complete data. A worker waits, saying so every few minutes, until
the chief has published it, and gives up with a UserError after `options.data_wait_minutes`.
"""

import errno
import os
import shutil
import sys
import time

from t2t_repro import catalog
from t2t_repro.data.datagen_options import DatagenOptions
from t2t_repro.data.text_problem import summary_line
from t2t_repro.errors import UserError
from t2t_repro.run.layout import RunLayout
from t2t_repro.run.restore import run_vocabulary
from t2t_repro.safe_write import removed_if_left_empty

WAIT_POLL_SECONDS = 10.0
WAIT_REPORT_SECONDS = 300.0


def generate_data(problem_name, data_dir, tmp_dir=None, manual_dir=None, options=DatagenOptions(),
                  problem_overrides=""):
    """Generates (or verifies and reuses) the data of a problem with its settings `problem_overrides`; returns
    the one-line summary."""
    return _generate(catalog.get_problem(problem_name, problem_overrides), data_dir, tmp_dir, manual_dir, options)


def _generate(problem, data_dir, tmp_dir, manual_dir, options, vocabulary_sha256=None):
    """The one way datagen and the trainer generate data: a file of it that cannot be written (a full disk,
    in this process or in a datagen worker) ends in one line, the work directory already removed.
    `vocabulary_sha256`: the vocabulary a restarted run trained with, which the data must keep."""
    extra = {"vocabulary_sha256": vocabulary_sha256} if vocabulary_sha256 else {}
    if getattr(problem, "vocab_from", None):
        extra["vocabulary_from"] = _reused_vocabulary(problem)
    try:
        with removed_if_left_empty(data_dir):
            summary = problem.generate_data(data_dir, tmp_dir=tmp_dir, manual_dir=manual_dir,
                                            workers=options.workers, **extra)
    except OSError as error:
        if not _is_data_write_failure(error, data_dir):
            raise
        raise UserError(f"cannot write the data of {problem.name} to {data_dir}: {error.strerror or error}"
                        f"{_free_space(data_dir)}; nothing was published") from None
    return summary_line(summary)


def _reused_vocabulary(problem):
    """The `Vocabularies` of the run the problem's vocab_from setting names, read and checked as a decoder would;
    UserError when it names no run, or one whose vocabulary is shared where the problem asks for one per side (or
    the reverse): the data would be recorded as what it is not."""
    run = problem.vocab_from
    RunLayout(run).check_is_run(f"problem {problem.name}: vocab_from={run}",
                                "; give the --output_dir of the run whose vocabulary the data should share")
    vocabularies = run_vocabulary(run)[2]
    if vocabularies.shared != problem.shared_vocabulary:
        has, asked = (("one shared vocabulary", "one per side") if vocabularies.shared else
                      ("a vocabulary per side", "one shared vocabulary"))
        raise UserError(f"problem {problem.name}: vocab_from={run} has {has}, but shared_vocabulary="
                        f"{str(problem.shared_vocabulary).lower()} asks for {asked}: add shared_vocabulary="
                        f"{str(vocabularies.shared).lower()} to --problem_overrides to encode with it")
    return vocabularies


def _is_data_write_failure(error, data_dir):
    """Whether `error` is a failed write of the data: out of room or over the file-size limit (only writing
    fails so), or a failure on a file inside data_dir, which datagen fills (the raw data it reads is elsewhere)."""
    if error.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
        return True
    inside = os.path.abspath(data_dir) + os.sep
    return any(name and os.path.abspath(os.fsdecode(name)).startswith(inside)
               for name in (error.filename, error.filename2))


def _free_space(data_dir):
    """The " (<N> MB free there)" of the message, or nothing where data_dir cannot be asked."""
    try:
        return f" ({shutil.disk_usage(data_dir).free / 2**20:,.1f} MB free there)"
    except OSError:
        return ""


def prepare_data(problem, data_dir, tmp_dir, manual_dir, options, chief=True, poll_seconds=WAIT_POLL_SECONDS,
                 vocabulary_sha256=None):
    """Makes sure `data_dir` holds the problem's data: the chief generates what is missing, another worker
    waits for the chief to publish it (at most options.data_wait_minutes). `vocabulary_sha256`: a restart's
    recorded vocabulary, which data generated now must have (else nothing is published)."""
    if problem.data_ready(data_dir):
        return
    if chief:
        print(f"generating data for {problem.name} in {data_dir}", flush=True)
        print(_generate(problem, data_dir, tmp_dir, manual_dir, options, vocabulary_sha256), flush=True)
        return
    wait_for_data(problem, data_dir, options.data_wait_minutes * 60, poll_seconds)


def wait_for_data(problem, data_dir, timeout_seconds, poll_seconds=WAIT_POLL_SECONDS):
    """Waits until `problem.data_ready(data_dir)`; a UserError after `timeout_seconds`."""
    start = time.monotonic()
    last_report = None
    while not problem.data_ready(data_dir):
        waited = time.monotonic() - start
        if waited >= timeout_seconds:
            raise UserError(
                f"waited {waited / 60:.1f} minutes for the chief to generate the data of {problem.name} in "
                f"{data_dir}; it is still not there (is the chief running, and is data_dir shared by every "
                "worker?); raise --data_wait_minutes or generate it first with t2t-repro-datagen"
            )
        if last_report is None or time.monotonic() - last_report >= WAIT_REPORT_SECONDS:
            print(f"waiting for the chief to generate the data of {problem.name} in {data_dir} "
                  f"({waited / 60:.1f} of at most {timeout_seconds / 60:.1f} minutes)", file=sys.stderr, flush=True)
            last_report = time.monotonic()
        time.sleep(min(poll_seconds, max(0.0, timeout_seconds - waited)))
