"""Whether this process has kernels for a mixed precision's compute dtype.

TensorFlow hands bfloat16 ops to oneDNN (which this project turns on for every x86 CPU) by the CPU's own
instruction set. ONEDNN_MAX_CPU_ISA, which holds oneDNN below it (e.g. at AVX2 to imitate an AVX2-only CPU on an
AVX-512 one), leaves oneDNN without the bfloat16 kernels TensorFlow then asks for: a bf16 softmax raises an error,
and a bf16 matmul of a compiled step ends the process with no Python error at all. One eager softmax tells which,
before anything is built or written.
"""

import functools
import os

import tensorflow as tf

from t2t_repro.errors import UserError, first_line


@functools.cache
def _missing_bfloat16_kernels():
    """The error of a bf16 softmax on this process's devices, or None where it runs (or runs on a GPU or TPU)."""
    if tf.config.list_logical_devices("GPU") or tf.config.list_logical_devices("TPU"):
        return None
    try:
        tf.nn.softmax(tf.zeros([1, 2], tf.bfloat16))
    except tf.errors.OpError as error:
        return first_line(error)
    return None


def check_compute_kernels(precision):
    """Raises a UserError when `precision` (a Keras dtype policy name) computes in bfloat16 and this process
    cannot; float32 and float16 run everywhere."""
    if "bfloat16" not in (precision or ""):
        return
    error = _missing_bfloat16_kernels()
    if error is None:
        return
    held = os.environ.get("ONEDNN_MAX_CPU_ISA")
    cause, unset = ((f"oneDNN held to ONEDNN_MAX_CPU_ISA={held} has no bfloat16 kernels", "unset it, ") if held
                    else (f"this CPU's bfloat16 kernels fail ({error})", ""))
    raise UserError(f"precision {precision} cannot run here: {cause}: {unset}use float32, or set "
                    "TF_ENABLE_ONEDNN_OPTS=0 for TensorFlow's own bfloat16 kernels")
