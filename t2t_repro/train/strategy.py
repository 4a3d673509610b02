"""Choosing the tf.distribute strategy the trainer runs under (no home-made distribution code)."""

import json
import os

import tensorflow as tf

from t2t_repro.errors import UserError
from t2t_repro.train.options import STRATEGIES


def make_strategy(kind="auto", tpu_address=None):
    """Returns a tf.distribute.Strategy.

    auto: MirroredStrategy over all local GPUs when there is more than one, else one device (the first GPU, or
        the CPU). mirrored: MirroredStrategy over every local GPU, or over every logical CPU when there is no
        GPU (how multi-device training is tested on CPU). multi_worker: MultiWorkerMirroredStrategy from the
        TF_CONFIG environment variable. tpu: TPUStrategy on `tpu_address` (or the TPU the environment names).
        one_device: the first GPU or the CPU.
    """
    if kind not in STRATEGIES:
        raise UserError(f"unknown strategy {kind!r}; choose one of {', '.join(STRATEGIES)}")
    if kind == "multi_worker":  # before anything initializes the runtime: collectives are set up at start-up
        _check_tf_config()
        return tf.distribute.MultiWorkerMirroredStrategy()
    if kind == "tpu":
        return _tpu_strategy(tpu_address)
    gpus = tf.config.list_logical_devices("GPU")
    if kind == "auto":
        kind = "mirrored" if len(gpus) > 1 else "one_device"
    if kind == "one_device":
        return tf.distribute.OneDeviceStrategy(gpus[0].name if gpus else "/cpu:0")
    devices = [d.name for d in gpus] or [d.name for d in tf.config.list_logical_devices("CPU")]
    return tf.distribute.MirroredStrategy(devices)


def _check_tf_config():
    raw = os.environ.get("TF_CONFIG")
    if not raw:
        raise UserError("--strategy=multi_worker needs the TF_CONFIG environment variable (cluster and task)")
    try:
        config = json.loads(raw)
        config["cluster"]["worker"], config["task"]["type"], config["task"]["index"]
    except (json.JSONDecodeError, KeyError, TypeError) as error:
        raise UserError(f"TF_CONFIG is not a valid cluster description: {error}") from None


def _tpu_strategy(tpu_address):
    try:
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=tpu_address or "")
        tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
    except (ValueError, tf.errors.OpError) as error:
        raise UserError(f"no TPU found ({error}); use --strategy=auto on GPUs or CPUs") from None
    return tf.distribute.TPUStrategy(resolver)


def is_chief(strategy):
    """True on the worker that writes checkpoints, summaries and reports (the only one outside multi-worker)."""
    resolver = getattr(strategy, "cluster_resolver", None)
    if resolver is None or not resolver.task_type:
        return True
    return resolver.task_type == "chief" or (resolver.task_type == "worker" and resolver.task_id == 0)


def worker_position(strategy):
    """(number of workers, this worker's index) for sharding the input: (1, 0) outside multi-worker."""
    resolver = getattr(strategy, "cluster_resolver", None)
    if resolver is None or not resolver.task_type:
        return 1, 0
    jobs = resolver.cluster_spec().as_dict()
    workers = len(jobs.get("chief", [])) + len(jobs.get("worker", []))
    index = resolver.task_id + (len(jobs.get("chief", [])) if resolver.task_type == "worker" else 0)
    return workers, index
