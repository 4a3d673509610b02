"""The package turns TensorFlow's oneDNN CPU kernels on before TensorFlow loads, unless the user chose.

TensorFlow turns them on by itself only on CPUs with AVX512-VNNI, AVX512-BF16 or AMX; on an AVX2-only CPU this
test fails without the package's default."""

import os
import platform
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"), reason="x86 CPUs only")

ONEDNN_ON_LOG = "oneDNN custom operations are on"


def _import_tensorflow_after_the_package(value):
    """TensorFlow's start-up log and the variable's value, TensorFlow imported after t2t_repro."""
    env = {k: v for k, v in os.environ.items() if k != "TF_ENABLE_ONEDNN_OPTS"}
    env["TF_CPP_MIN_LOG_LEVEL"] = "0"
    if value is not None:
        env["TF_ENABLE_ONEDNN_OPTS"] = value
    code = "import os, t2t_repro, tensorflow; print(os.environ['TF_ENABLE_ONEDNN_OPTS'])"
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return result.stdout.strip(), ONEDNN_ON_LOG in result.stderr


def test_onednn_kernels_are_on_by_default():
    assert _import_tensorflow_after_the_package(None) == ("1", True)


def test_the_users_choice_wins():
    assert _import_tensorflow_after_the_package("0") == ("0", False)
