"""t2t-repro: the Transformer of "Attention Is All You Need" (Vaswani et al., 2017) in TensorFlow 2 / Keras 3."""

import os
import platform

__version__ = "0.1.0"

# TensorFlow turns its oneDNN CPU kernels on by itself only on x86 CPUs with AVX512-VNNI, AVX512-BF16 or AMX;
# on AVX2-only CPUs (many laptops and cloud VMs) it keeps its own slower kernels. We turn them on on every x86
# CPU unless the user chose (TF_ENABLE_ONEDNN_OPTS=0 keeps TensorFlow's): transformer_tiny's training step,
# oneDNN held to AVX2 against TensorFlow's kernels on the same host, took 170 against 222 ms, and the same
# kernels everywhere keep results alike across CPUs. It must be set before TensorFlow loads.
if platform.machine().lower() in ("x86_64", "amd64"):
    os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")
