"""The layer contract (.importlinter): imports point down only, checked by import-linter on the package as it
is installed, with problems/ and hparams/ inside t2t_repro as pyproject.toml maps them; and what a plain install
holds: every module, the console scripts and the serving page's files."""

import os
import shutil
import subprocess
import sys
import zipfile

import pytest

from doc_pages import TOOLS

REPOSITORY = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAX_LINES = 400


@pytest.fixture
def installed_layout(tmp_path):
    """A copy of the package laid out as `pip install .` lays it out."""
    package = tmp_path / "t2t_repro"
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(os.path.join(REPOSITORY, "t2t_repro"), package, ignore=ignore)
    for folder in ("problems", "hparams"):
        shutil.copytree(os.path.join(REPOSITORY, folder), package / folder, ignore=ignore)
    return tmp_path


def _lint_imports(root):
    env = dict(os.environ, PYTHONPATH=str(root))
    linter = os.path.join(os.path.dirname(sys.executable), "lint-imports")
    return subprocess.run([linter, "--config", os.path.join(REPOSITORY, ".importlinter"), "--no-cache"],
                          cwd=root, env=env, capture_output=True, text=True, timeout=300)


def test_imports_point_down_only(installed_layout):
    result = _lint_imports(installed_layout)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 kept, 0 broken" in result.stdout


def test_an_upward_import_breaks_the_contract(installed_layout):
    model_file = installed_layout / "t2t_repro" / "model" / "feed_forward.py"
    model_file.write_text(model_file.read_text() + "\nimport t2t_repro.run.jobs  # noqa\n")
    result = _lint_imports(installed_layout)
    assert result.returncode != 0
    assert "t2t_repro.model.feed_forward -> t2t_repro.run.jobs" in result.stdout


def test_no_module_is_over_400_lines():
    long_files = []
    for folder in ("t2t_repro", "problems", "hparams", "tools"):
        for directory, _, names in os.walk(os.path.join(REPOSITORY, folder)):
            for name in names:
                if name.endswith(".py"):
                    path = os.path.join(directory, name)
                    with open(path, encoding="utf-8") as f:
                        if sum(1 for _ in f) > MAX_LINES:
                            long_files.append(os.path.relpath(path, REPOSITORY))
    assert not long_files


def _installed_name(path):
    """Where a file of the repository lands in an install: problems/ and hparams/ inside t2t_repro/."""
    relative = os.path.relpath(path, REPOSITORY).replace(os.sep, "/")
    return relative if relative.startswith("t2t_repro/") else "t2t_repro/" + relative


def test_a_plain_install_holds_every_module_the_console_scripts_and_the_serving_files(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(tmp_path),
         REPOSITORY], capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stderr
    (wheel,) = tmp_path.glob("t2t_repro-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        (entry_points,) = [name for name in names if name.endswith(".dist-info/entry_points.txt")]
        scripts = {line.split("=")[0].strip(): line.split("=")[1].strip()
                   for line in archive.read(entry_points).decode().splitlines() if line.startswith("t2t-repro-")}
    assert {"t2t_repro/problems/wmt.py", "t2t_repro/hparams/table3.py", "t2t_repro/run/jobs.py"} <= names
    assert not any(name.startswith(("problems/", "hparams/")) for name in names)
    shipped = {_installed_name(os.path.join(directory, name))
               for folder in ("t2t_repro", "problems", "hparams")
               for directory, _, files in os.walk(os.path.join(REPOSITORY, folder)) if "__pycache__" not in directory
               for name in files if name.endswith(".py") or "/serve/static" in directory.replace(os.sep, "/")}
    assert sorted(shipped - names) == []  # a new subpackage must be listed in pyproject.toml's packages
    assert scripts == {script: f"t2t_repro.cli.{module}:main" for script, module in TOOLS.items()}
