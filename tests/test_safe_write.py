"""safe_write: a failed write leaves the old file or directory and no temporary; leftovers of dead writers go."""

import json
import os
import socket

import pytest

from t2t_repro import safe_write

DEAD_PID = 4_194_305  # beyond Linux's pid_max: never a running process
HOST = socket.gethostname()


class Boom(Exception):
    pass


def test_write_file_json_and_lines_replace_the_file(tmp_path):
    path = tmp_path / "out.txt"
    safe_write.write_file(path, "old ü")
    assert path.read_bytes() == "old ü".encode("utf-8")
    safe_write.write_file(path, b"\x00\xff")
    assert path.read_bytes() == b"\x00\xff"
    safe_write.write_lines(path, ["a", "b"])
    assert path.read_text(encoding="utf-8") == "a\nb\n"
    safe_write.write_json(path, {"b": 1, "a": "ä"})
    assert json.loads(path.read_text(encoding="utf-8")) == {"a": "ä", "b": 1}
    assert os.listdir(tmp_path) == ["out.txt"]


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    path = tmp_path / "out.txt"
    path.write_text("old")
    with pytest.raises(Boom):
        with safe_write.replacing(path) as temporary:
            with open(temporary, "w") as f:
                f.write("half")
            raise Boom
    with pytest.raises(TypeError):
        safe_write.write_file(path, 12)
    assert path.read_text() == "old" and os.listdir(tmp_path) == ["out.txt"]


def test_stale_leftovers_of_dead_processes_are_removed_those_of_live_ones_kept(tmp_path):
    prefix = ".data.incomplete-"
    dead = tmp_path / f"{prefix}{HOST}-{DEAD_PID}"
    live = tmp_path / f"{prefix}{HOST}-{os.getpid()}"
    other_host = tmp_path / f"{prefix}{HOST}x-{DEAD_PID}"  # another machine's: its pid means nothing here
    dead_unique = tmp_path / f"{prefix}{DEAD_PID}-abc_12"
    live_unique = tmp_path / f"{prefix}{os.getpid()}-abc_12"
    unrelated = tmp_path / f".other.incomplete-{HOST}-{DEAD_PID}"
    for directory in (dead, live, other_host, dead_unique, live_unique, unrelated):
        directory.mkdir()
        (directory / "part").write_text("x")
    dead_file = tmp_path / f"{prefix}{HOST}-{DEAD_PID + 1}"
    dead_file.write_text("x")
    safe_write.remove_stale_leftovers(tmp_path, prefix)
    assert sorted(os.listdir(tmp_path)) == sorted(p.name for p in (live, other_host, live_unique, unrelated))
    safe_write.remove_stale_leftovers(tmp_path / "missing", prefix)  # no parent: nothing to do


def test_temporary_directory_beside_is_fresh_and_private(tmp_path):
    final = tmp_path / "parent" / "data"  # the parent does not exist yet
    work = safe_write.temporary_directory_beside(final)
    assert work == str(tmp_path / "parent" / f".data.incomplete-{HOST}-{os.getpid()}")
    open(os.path.join(work, "half"), "w").close()
    assert safe_write.temporary_directory_beside(final) == work and os.listdir(work) == []
    other = safe_write.unique_directory_in(str(tmp_path), ".tmp-x-")
    assert os.path.basename(other).startswith(f".tmp-x-{os.getpid()}-")
    assert other != safe_write.unique_directory_in(str(tmp_path), ".tmp-x-")


def test_publish_directory_replaces_an_existing_one(tmp_path):
    final = tmp_path / "data"
    final.mkdir()
    (final / "old").write_text("old")
    (final / safe_write.MARKER_FILE).write_text("")  # one this project made (others: test_publishing.py)
    work = safe_write.temporary_directory_beside(final)
    with open(os.path.join(work, "new"), "w") as f:
        f.write("new")
    safe_write.publish_directory(work, final)
    assert sorted(os.listdir(final)) == [safe_write.MARKER_FILE, "new"] and os.listdir(tmp_path) == ["data"]
    work = safe_write.temporary_directory_beside(tmp_path / "fresh")
    safe_write.publish_directory(work, tmp_path / "fresh")
    assert sorted(os.listdir(tmp_path)) == ["data", "fresh"]


def test_a_failed_publish_puts_the_old_directory_back(tmp_path):
    final = tmp_path / "data"
    final.mkdir()
    (final / "old").write_text("old")
    with pytest.raises(OSError):
        safe_write.publish_directory(str(tmp_path / "vanished-work"), final, aside_prefix=".data-old-")
    assert os.listdir(final) == ["old"] and os.listdir(tmp_path) == ["data"]


def test_process_alive():
    assert safe_write.process_alive(os.getpid())
    assert not safe_write.process_alive(DEAD_PID)
    assert not safe_write.process_alive(99_999_999_999)
