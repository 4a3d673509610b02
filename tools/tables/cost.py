"""Section 6.1's estimate of a model's training cost in FLOPs (training time x devices x sustained
single-precision TFLOPS per device), the TFLOPS of a run's device, and our runs' cost from their report.json.

Table 2 imports this module with or without --report; TensorFlow is imported only where a report needs it.
"""

import os

from t2t_repro.errors import UserError
from t2t_repro.json_file import read_json

# The Table 2 footnote: sustained single-precision TFLOPS per GPU.
PAPER_GPU_TFLOPS = {"K80": 2.8, "K40": 3.7, "M40": 6.0, "P100": 9.5}

# Published dense peak TFLOPS per device and arithmetic (vendors' data sheets; SXM parts for NVIDIA, per chip
# for TPUs, which have no native float32 matmuls). A run's arithmetic: fp32, tf32 (float32 matmuls on Ampere
# and newer GPUs unless tf32=false), bf16 (mixed_bfloat16) or fp16 (mixed_float16).
PUBLISHED_PEAK_TFLOPS = {
    "P100": {"fp32": 10.6, "fp16": 21.2},
    "V100": {"fp32": 15.7, "fp16": 125.0},
    "A100": {"fp32": 19.5, "tf32": 156.0, "bf16": 312.0, "fp16": 312.0},
    "H100": {"fp32": 67.0, "tf32": 494.7, "bf16": 989.4, "fp16": 989.4},
    "H200": {"fp32": 67.0, "tf32": 494.7, "bf16": 989.4, "fp16": 989.4},
    "TPU v3": {"bf16": 123.0},
    "TPU v4": {"bf16": 275.0},
    "TPU v5e": {"bf16": 197.0},
    "TPU v5p": {"bf16": 459.0},
}
_ARITHMETIC = {"mixed_bfloat16": "bf16", "mixed_float16": "fp16"}


def run_arithmetic(report):
    """fp32, tf32, bf16 or fp16: the matmul arithmetic a run's report.json says it trained in."""
    precision = report.get("training_precision", "float32")
    if precision in _ARITHMETIC:
        return _ARITHMETIC[precision]
    capability = report.get("compute_capability") or [0]
    tf32 = report.get("device_kind") == "GPU" and capability[0] >= 8 and report.get("tf32", True)
    return "tf32" if tf32 else "fp32"


def published_peak(device_name, arithmetic):
    """(TFLOPS, the device it was matched to) from PUBLISHED_PEAK_TFLOPS, or None when unknown."""
    name = (device_name or "").upper()
    for device, peaks in PUBLISHED_PEAK_TFLOPS.items():  # H100 before H200 cannot clash: names differ
        if device.upper() in name and arithmetic in peaks:
            return peaks[arithmetic], device
    return None


def training_cost(seconds, devices, tflops):
    """Section 6.1's estimate of the floating-point operations used to train a model: training time x number
    of devices x sustained single-precision FLOPS of one device."""
    return seconds * devices * tflops * 1e12


def measured_device_tflops(device_kind, arithmetic="fp32"):
    """(TFLOPS, how it was obtained) for a run's device kind by measuring this machine's matmul peak in the
    run's arithmetic (tools/benchmarks/timing.py); the run must have used this kind of device."""
    # TensorFlow here, not at the top: Table 2 without --report never loads it (nor calls quiet_tensorflow()).
    import tensorflow as tf
    from benchmarks.timing import device_description, device_name, matmul_peak

    here = device_name().split(":")[0]
    if here != device_kind.upper():
        raise UserError(f"the run used a {device_kind} but this machine computes on its {here}: give the "
                        f"{device_kind}'s sustained fp32 TFLOPS with --device_tflops")
    if here == "GPU":
        # TF32 only for a run that used it: the paper's figures are plain single precision.
        tf.config.experimental.enable_tensor_float_32_execution(arithmetic == "tf32")
    dtype = {"bf16": tf.bfloat16, "fp16": tf.float16}.get(arithmetic, tf.float32)
    peak = matmul_peak(dtype=dtype)
    return peak["flops_per_sec"] / 1e12, (
        f"measured {arithmetic} matmul peak ({peak['size']}x{peak['size']}, median of {peak['repeats']}) of "
        f"this machine's {device_description()}")


class DeviceTflops:
    """The TFLOPS used for a run's device (`__call__(report)`), measured at most once per device kind.

    In order: --device_tflops; the Table 2 footnote's figure for a device kind K80, K40, M40 or P100; the
    published peak of the recorded device model in the run's arithmetic (`PUBLISHED_PEAK_TFLOPS`); else the
    fp32 matmul peak measured on this machine, which must then be of the run's kind (CPU or GPU)."""

    def __init__(self, override=None):
        if override is not None and not override > 0:
            raise UserError(f"--device_tflops={override}: must be positive")
        self.override = override
        self._known = {}

    def __call__(self, report):
        if self.override is not None:
            return self.override, "--device_tflops"
        name = report["device_kind"].upper()
        if name in PAPER_GPU_TFLOPS:
            return PAPER_GPU_TFLOPS[name], "Table 2 footnote"
        arithmetic = run_arithmetic(report)
        published = published_peak(report.get("device_name"), arithmetic)
        if published:
            return published[0], f"published {arithmetic} peak of the {published[1]}"
        if (name, arithmetic) not in self._known:
            self._known[name, arithmetic] = measured_device_tflops(name, arithmetic)
        return self._known[name, arithmetic]


def read_report(path):
    """A run's report.json (or the one in an output_dir), checked for the fields the estimate needs."""
    if not os.path.exists(path):
        raise UserError(f"--report={path}: no such file or directory")
    if os.path.isdir(path):
        path = os.path.join(path, "report.json")
    report = read_json(path, "a run's report")
    required = ("steps", "train_seconds", "devices", "device_kind")
    missing = [key for key in required if key not in report] if isinstance(report, dict) else list(required)
    if missing:
        raise UserError(f"{path} is not a finished run's report: it lacks {', '.join(missing)}")
    return path, report


def run_cost_row(path, report, device_tflops):
    """Our run in Table 2's units: its training cost and its test score."""
    tflops, source = device_tflops(report)
    bleu = report.get("bleu") or {}
    return {
        "kind": "run", "model": f"{report.get('hparams_set', '?')} on {report.get('problem', '?')}", "report": path,
        "steps": report["steps"], "train_hours": report["train_seconds"] / 3600, "devices": report["devices"],
        "device_kind": report["device_kind"], "device_tflops": tflops, "tflops_source": source,
        "cost_flops": training_cost(report["train_seconds"], report["devices"], tflops),
        # Table 2's BLEU is tokenized (with compound splitting for German); sacreBLEU is the comparable one.
        "bleu_tokenized": bleu.get("tokenized_compound_split", bleu.get("tokenized")) if bleu else None,
        "bleu_sacrebleu": bleu.get("sacrebleu"),
        "f1": report.get("f1"),
    }

