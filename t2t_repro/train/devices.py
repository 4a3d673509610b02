"""What a run computes on: the device model, its kind and how many, for run.json, report.json and Table 2."""

import platform

import tensorflow as tf


def _cpu_model():
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "CPU"


def _accelerator_details(device):
    """(model name, compute capability or None) of a physical GPU or TPU, from TensorFlow's device details."""
    try:
        details = tf.config.experimental.get_device_details(device)
    except (ValueError, tf.errors.OpError):
        details = {}
    capability = details.get("compute_capability")
    return details.get("device_name") or device.name, list(capability) if capability else None


def device_summary(strategy):
    """{"type": GPU, TPU or CPU, "name": the model, "compute_capability": [major, minor] (GPUs), "count": the
    devices this worker trains on} for a tf.distribute strategy."""
    devices = strategy.extended.worker_devices
    kind = "CPU"
    for candidate in ("TPU", "GPU"):
        if any(f"{candidate}:" in device.upper() for device in devices):
            kind = candidate
            break
    summary = {"type": kind, "name": _cpu_model(), "compute_capability": None, "count": len(devices)}
    physical = tf.config.list_physical_devices(kind) if kind != "CPU" else []
    if physical:
        summary["name"], summary["compute_capability"] = _accelerator_details(physical[0])
    return summary
