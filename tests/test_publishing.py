"""The one rule where a directory is published: a tool replaces only a directory this project made. Anything else at
that path (a user's file, folder or link, the --manual_dir being read) is refused in one line, exit 2, with every
file involved unchanged (checksums before and after)."""

import os
import sys
from pathlib import Path

import pytest
from conftest import run_cli_in_process, write_parallel_corpus
from test_nothing_lost import checksums, error_line

from t2t_repro import safe_write
from t2t_repro.errors import UserError

TRANSLATE_FILES = ["--problem=translate_files",
                   "--problem_overrides=source_language=en,target_language=de,vocab_size=300"]


def _tree_state(root):
    """Checksums of every file under `root` and the set of its directories: what a refused command leaves."""
    directories = sorted(os.path.relpath(parent, root) for parent, _, _ in os.walk(root))
    return checksums(root), directories


def _work(tmp_path, name="work"):
    work = tmp_path / name
    work.mkdir()
    (work / "new").write_text("new")
    return work


@pytest.mark.parametrize("make", ["folder", "file", "link"])
def test_publish_refuses_what_this_project_did_not_make(tmp_path, make):
    final = tmp_path / "final"
    if make == "folder":
        final.mkdir()
        (final / "mine.txt").write_text("a user's own file")
    elif make == "file":
        final.write_text("a user's own file")
    else:
        (tmp_path / "elsewhere").mkdir()
        final.symlink_to(tmp_path / "elsewhere")
    before = _tree_state(tmp_path)
    work = _work(tmp_path)
    with pytest.raises(UserError, match=f"{final} is a (directory that t2t-repro did not make|file|symbolic link)"):
        safe_write.check_replaceable(final)
    with pytest.raises(UserError, match="it is left as it is and nothing was written"):
        safe_write.publish_directory(str(work), final)
    safe_write.remove(work)  # the caller's work directory: what callers do with it after a failure
    assert _tree_state(tmp_path) == before


def test_publish_replaces_an_empty_folder_one_it_made_and_one_its_legacy_test_recognises(tmp_path):
    final = tmp_path / "final"
    final.mkdir()
    safe_write.publish_directory(str(_work(tmp_path)), final)  # empty: nothing is lost
    assert sorted(os.listdir(final)) == [safe_write.MARKER_FILE, "new"]
    (final / "new").write_text("old")
    safe_write.publish_directory(str(_work(tmp_path)), final)  # marked: made here
    assert (final / "new").read_text() == "new"
    os.remove(final / safe_write.MARKER_FILE)
    with pytest.raises(UserError):
        safe_write.publish_directory(str(_work(tmp_path, "w2")), final)
    safe_write.publish_directory(str(tmp_path / "w2"), final, legacy=lambda path: os.path.exists(Path(path) / "new"))
    assert sorted(os.listdir(tmp_path)) == ["final"]


def test_a_directory_being_read_is_never_replaced(tmp_path):
    final = tmp_path / "data"
    (final / "corpus").mkdir(parents=True)
    safe_write.publish_directory(str(_work(tmp_path)), tmp_path / "made")
    with pytest.raises(UserError, match=r"holds --manual_dir .*corpus, which is being read"):
        safe_write.check_replaceable(final, reading={"--manual_dir": str(final / "corpus")})
    with pytest.raises(UserError, match="which is being read"):  # even one this project made
        safe_write.check_replaceable(tmp_path / "made", reading={"--tmp_dir": str(tmp_path / "made")})


@pytest.mark.parametrize("layout", ["manual_dir_named_after_the_problem", "users_folder", "users_file"])
def test_datagen_never_deletes_what_it_did_not_make(tmp_path, layout):
    root = tmp_path / "D"
    corpus = write_parallel_corpus(root / "corpus", sizes=(("train", 60), ("dev", 5), ("test", 5)))
    target = root / "translate_files"
    if layout == "manual_dir_named_after_the_problem":
        corpus.rename(target)
        corpus = target
    elif layout == "users_folder":
        target.mkdir()
        (target / "notes.txt").write_text("mine")
    else:
        target.write_text("mine")
    before = _tree_state(root)
    for tool in ("datagen", "trainer"):
        extra = [] if tool == "datagen" else ["--hparams=transformer_tiny", f"--output_dir={tmp_path / 'run'}"]
        result = run_cli_in_process(tool, *TRANSLATE_FILES, f"--manual_dir={corpus}", f"--data_dir={root}", *extra)
        line = error_line(result)
        assert f"{target} " in line and "nothing was written" in line, line
        assert _tree_state(root) == before and not (tmp_path / "run").exists()
    if layout == "manual_dir_named_after_the_problem":
        assert "holds --manual_dir" in line and "which is being read" in line
    else:
        assert ("a directory that t2t-repro did not make" if layout == "users_folder" else "is a file") in line


def test_datagen_replaces_data_it_made_before_the_marker_existed(tmp_path):
    corpus = write_parallel_corpus(tmp_path / "corpus", sizes=(("train", 60), ("dev", 5), ("test", 5)))
    data = tmp_path / "data"
    made = run_cli_in_process("datagen", *TRANSLATE_FILES, f"--manual_dir={corpus}", f"--data_dir={data}")
    assert made.returncode == 0, made.stderr
    problem_dir = data / "translate_files"
    os.remove(problem_dir / safe_write.MARKER_FILE)  # as data published by older versions
    (problem_dir / "metadata.json").write_text((problem_dir / "metadata.json").read_text().replace(
        '"data_version"', '"data_version_of_older_code"'))  # made by other code: regenerated
    again = run_cli_in_process("datagen", *TRANSLATE_FILES, f"--manual_dir={corpus}", f"--data_dir={data}")
    assert again.returncode == 0, again.stderr
    assert "reused" not in again.stdout and (problem_dir / safe_write.MARKER_FILE).exists()


def test_visualize_writes_only_into_a_new_empty_or_own_directory(tmp_path, trained_run):
    out = tmp_path / "pictures"
    out.mkdir()
    (out / "holiday.png").write_bytes(b"a user's picture")
    before = _tree_state(tmp_path)
    result = run_cli_in_process("visualize", f"--output_dir={trained_run}", f"--out={out}", "--curves")
    assert "a directory that t2t-repro did not make" in error_line(result)
    assert _tree_state(tmp_path) == before


def test_the_benchmark_harness_removes_only_its_own_directories(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(Path(__file__).parents[1] / "tools" / "benchmarks"))
    import opennmt_py

    mine = tmp_path / "onmt_run"
    opennmt_py.own_directory(mine)
    (mine / "train.log").write_text("log")
    opennmt_py.remove_own(mine)
    assert not mine.exists()
    users = tmp_path / "users"
    users.mkdir()
    (users / "keep.txt").write_text("keep")
    with pytest.raises(SystemExit, match="was not made by this benchmark"):
        opennmt_py.remove_own(users)
    assert (users / "keep.txt").read_text() == "keep"
    sys.modules.pop("opennmt_py", None)
