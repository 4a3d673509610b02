"""Section 6.1's estimate of a model's training cost in FLOPs (training time x devices x sustained
single-precision TFLOPS per device), the TFLOPS of a run's device, and our runs' cost from their report.json.

Table 2 imports this module with or without --report; TensorFlow is imported only where a report needs it.
"""

import os

from t2t_repro.errors import UserError

# The Table 2 footnote: sustained single-precision TFLOPS per GPU.
PAPER_GPU_TFLOPS = {"K80": 2.8, "K40": 3.7, "M40": 6.0, "P100": 9.5}


def training_cost(seconds, devices, tflops):
    """Section 6.1's estimate of the floating-point operations used to train a model: training time x number
    of devices x sustained single-precision FLOPS of one device."""
    return seconds * devices * tflops * 1e12


def measured_device_tflops(device_kind):
    """(TFLOPS, how it was obtained) for a run's device kind by measuring this machine's fp32 matmul peak
    (tools/benchmarks/timing.py); the run must have used this kind of device."""
    # TensorFlow here, not at the top: Table 2 without --report never loads it (nor calls quiet_tensorflow()).
    import tensorflow as tf
    from benchmarks.timing import device_description, device_name, matmul_peak

    here = device_name().split(":")[0]
    if here != device_kind.upper():
        raise UserError(f"the run used a {device_kind} but this machine computes on its {here}: give the "
                        f"{device_kind}'s sustained fp32 TFLOPS with --device_tflops")
    if here == "GPU":
        # The paper's figures are plain single precision; TF32 matmuls would overstate them.
        tf.config.experimental.enable_tensor_float_32_execution(False)
    peak = matmul_peak()
    return peak["flops_per_sec"] / 1e12, (
        f"measured fp32 matmul peak ({peak['size']}x{peak['size']}, median of {peak['repeats']}) of this "
        f"machine's {device_description()}")


class DeviceTflops:
    """The sustained fp32 TFLOPS used for a run's device, per device kind, measured at most once.

    Defaults: the Table 2 footnote's figure for K80, K40, M40 and P100; for "CPU" and "GPU" (what the trainer
    records) the fp32 matmul peak measured on this machine, which must then be of that kind. --device_tflops
    overrides every default."""

    def __init__(self, override=None):
        if override is not None and not override > 0:
            raise UserError(f"--device_tflops={override}: must be positive")
        self.override = override
        self._known = {}

    def __call__(self, device_kind):
        if self.override is not None:
            return self.override, "--device_tflops"
        name = device_kind.upper()
        if name in PAPER_GPU_TFLOPS:
            return PAPER_GPU_TFLOPS[name], "Table 2 footnote"
        if name not in self._known:
            self._known[name] = measured_device_tflops(name)
        return self._known[name]


def read_report(path):
    """A run's report.json (or the one in an output_dir), checked for the fields the estimate needs."""
    # Loads TensorFlow: here, not at the top, for the reason given in measured_device_tflops.
    from t2t_repro.run.layout import read_json

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
    tflops, source = device_tflops(report["device_kind"])
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

