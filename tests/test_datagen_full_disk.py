"""Datagen onto a full disk, and with a worker process that dies: one line on stderr and exit status 2, never a
traceback, and nothing published or left over in data_dir, whichever file could not be written (the
vocabulary, a block file in a worker process or inline, a shard, the texts) and whether datagen or the trainer
generates the data.

A full disk is a real one where this process may mount a small tmpfs (as root, with the capability); the
command-line test falls back to a file-size limit (RLIMIT_FSIZE), under which a write fails with EFBIG ("File
too large") the same way."""

import os
import resource
import shutil
import signal
import subprocess

import pytest
from conftest import run_cli, run_cli_in_process, write_parallel_corpus

from t2t_repro import catalog
from t2t_repro.data.datagen_options import DatagenOptions
from t2t_repro.data.encoding_blocks import BlockJob
from t2t_repro.data.split_writer import EncodingPool
from t2t_repro.errors import UserError
from t2t_repro.run.data import prepare_data

# The tiny wmt_ende data takes about 168 kB of tmpfs (4 kB pages): its vocabulary 16 kB, its train block file
# 24 kB, its train shards 128 kB. Each size fails at another step (with workers=1 the block is written inline).
FAILING_STEPS = {"8k": "the vocabulary", "24k": "the train block file", "100k": "a train shard",
                 "164k": "the dev texts"}
FILE_SIZE_LIMIT = 16 * 1024  # above the vocabulary's files (8 kB), below the train block file (24 kB)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return write_parallel_corpus(tmp_path_factory.mktemp("corpus"))


@pytest.fixture
def small_disk(tmp_path):
    """mount(size): a new directory holding a tmpfs of `size` ("24k"); the test is skipped where mounting is not
    permitted. Unmounted at the end."""
    mounted = []

    def mount(size):
        directory = tmp_path / f"disk-{len(mounted)}"
        directory.mkdir()
        if os.geteuid() != 0 or not shutil.which("mount"):
            pytest.skip("mounting a tmpfs needs root")
        result = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(directory)],
                                capture_output=True, text=True)
        if result.returncode:
            pytest.skip(f"cannot mount a tmpfs here: {result.stderr.strip()}")
        mounted.append(directory)
        return directory

    yield mount
    for directory in mounted:
        subprocess.run(["umount", str(directory)], check=True)


def _limit_file_size():
    """In the child before it runs the command: a write past FILE_SIZE_LIMIT bytes fails with EFBIG (SIGXFSZ,
    which would kill the process instead, ignored; both are inherited by datagen's worker processes)."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_SIZE_LIMIT, FILE_SIZE_LIMIT))


def _one_line_error(result):
    """The error line of a refused command: its last line on stderr, after the progress bars; no traceback."""
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert ": error: " in lines[-1] and result.stderr.count(": error: ") == 1, result.stderr
    return lines[-1]


def _assert_full_disk_message(line, data_dir, reason):
    prefix = f"cannot write the data of wmt_ende to {data_dir}: {reason} ("
    assert prefix in line and line.endswith(" MB free there); nothing was published"), line


@pytest.mark.parametrize("full_disk", ["tmpfs", "file_size_limit"])
def test_datagen_onto_a_full_disk_ends_in_one_line_and_publishes_nothing(tmp_path, small_disk, corpus, full_disk):
    if full_disk == "tmpfs":
        data_dir, reason, limits = small_disk("24k"), "No space left on device", {}
    else:
        data_dir, reason, limits = tmp_path / "data", "File too large", {"preexec_fn": _limit_file_size}
        data_dir.mkdir()
    result = run_cli("datagen", "--problem=wmt_ende", f"--data_dir={data_dir}", f"--manual_dir={corpus}",
                     "--workers=2", **limits)  # the train block file fails in a worker process
    _assert_full_disk_message(_one_line_error(result), data_dir, reason)
    assert os.listdir(data_dir) == []  # no problem directory, no work directory


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("size", FAILING_STEPS)
def test_every_write_that_fails_ends_in_one_line(small_disk, corpus, size, workers):
    data_dir = small_disk(size)
    result = run_cli_in_process("datagen", "--problem=wmt_ende", f"--data_dir={data_dir}", f"--manual_dir={corpus}",
                                f"--workers={workers}")
    _assert_full_disk_message(_one_line_error(result), data_dir, "No space left on device")
    assert os.listdir(data_dir) == [], FAILING_STEPS[size]


def test_the_trainer_generating_onto_a_full_disk_gets_the_same_error(small_disk, corpus):
    data_dir = small_disk("100k")
    problem = catalog.get_problem("wmt_ende")
    with pytest.raises(UserError, match="cannot write the data of wmt_ende to .*; nothing was published"):
        prepare_data(problem, data_dir, None, corpus, DatagenOptions(workers=1))
    assert os.listdir(data_dir) == []


def test_the_sizes_leave_room_for_the_data_once_large_enough(small_disk, corpus):
    """The failures above come from the room left: the same data fits a larger tmpfs."""
    data_dir = small_disk("256k")
    result = run_cli_in_process("datagen", "--problem=wmt_ende", f"--data_dir={data_dir}", f"--manual_dir={corpus}",
                                "--workers=1")
    assert result.returncode == 0, result.stderr
    assert os.listdir(data_dir) == ["wmt_ende"]


class _KillsItsWorker:
    """A block whose unpickling ends the worker process at once, as a kill or the out-of-memory killer would."""

    def __reduce__(self):
        return os._exit, (9,)


def test_a_worker_process_that_dies_is_a_one_line_error(tmp_path):
    job = BlockJob("unused.model", str(tmp_path / "blocks"), "train", 1, 10, False)
    with EncodingPool(2) as pool, pytest.raises(UserError, match="a datagen worker process died"):
        list(pool.map_blocks(job, [_KillsItsWorker(), _KillsItsWorker()]))  # two: one would stay in process
