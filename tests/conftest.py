"""Shared pytest set-up: quiet TensorFlow, the Keras TensorFlow backend, and two logical CPU devices."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ["KERAS_BACKEND"] = "tensorflow"

import tensorflow as tf  # noqa: E402

# Multi-device tests run on two logical CPUs; this must happen before TensorFlow initializes its devices.
_cpus = tf.config.list_physical_devices("CPU")
tf.config.set_logical_device_configuration(_cpus[0], [tf.config.LogicalDeviceConfiguration()] * 2)
