"""The layer contract (.importlinter): imports point down only, checked by import-linter on the package as it
is installed, with problems/ and hparams/ inside t2t_repro as setup.py maps them."""

import os
import shutil
import subprocess
import sys
import zipfile

import pytest

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


def test_a_plain_install_puts_problems_and_hparams_inside_the_package(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(tmp_path),
         REPOSITORY], capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stderr
    (wheel,) = tmp_path.glob("t2t_repro-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    assert {"t2t_repro/problems/wmt.py", "t2t_repro/hparams/table3.py", "t2t_repro/run/jobs.py"} <= names
    assert not any(name.startswith(("problems/", "hparams/")) for name in names)
