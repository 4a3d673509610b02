"""TensorFlow Serving's REST request and response formats (https://www.tensorflow.org/tfx/serving/api_rest).

A predict request is a JSON object with an optional "signature_name" and either

- "instances" (row format): a list with one entry per example, each the input value itself or an object
  {"<input name>": value}; the answer is {"predictions": [...]}, one entry per example, an object
  {"<output name>": value, ...} when the signature has several outputs;
- "inputs" (columnar format): the list of values, or {"<input name>": list}; the answer is {"outputs": ...},
  an object {"<output name>": list, ...} when the signature has several outputs.

Strings may be given as {"b64": "<base64>"}, as TensorFlow Serving allows. Everything a client can get wrong
raises `RequestError` with an HTTP status and a one-line message, answered as {"error": message}.
"""

import base64
import binascii
import json
import math

import numpy as np

DEFAULT_SIGNATURE = "serving_default"


class RequestError(Exception):
    """A request the server cannot answer: `status` is the HTTP status (4xx for the client's mistakes, 5xx when
    the model fails or the server is overloaded), `message` says why."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status
        self.message = message


def parse_json_body(body):
    """The JSON object of a request body; RequestError 400 for anything else."""
    try:
        value = json.loads(body.decode("utf-8"))
    except UnicodeDecodeError:
        raise RequestError(400, "the request body is not UTF-8 text") from None
    except json.JSONDecodeError as error:
        raise RequestError(400, f"the request body is not valid JSON: {error}") from None
    except RecursionError:
        raise RequestError(400, "the request body is nested too deeply to parse") from None
    if not isinstance(value, dict):
        raise RequestError(400, f"the request body must be a JSON object, not {_json_type(value)}")
    return value


def _json_type(value):
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    return "an object"


def split_predict_request(request, input_name):
    """(signature name, the list of example values, "row" or "columnar") of a parsed predict request."""
    unknown = sorted(set(request) - {"signature_name", "instances", "inputs"})
    if unknown:
        raise RequestError(400, f"unknown request field(s) {', '.join(map(repr, unknown))}: "
                                "expected 'instances' or 'inputs', and optionally 'signature_name'")
    signature = request.get("signature_name", DEFAULT_SIGNATURE)
    if not isinstance(signature, str):
        raise RequestError(400, f"'signature_name' must be a string, not {_json_type(signature)}")
    if ("instances" in request) == ("inputs" in request):
        raise RequestError(400, "a predict request needs exactly one of 'instances' (row format) or 'inputs' "
                                "(columnar format)")
    if "instances" in request:
        instances = request["instances"]
        if not isinstance(instances, list):
            raise RequestError(400, f"'instances' must be a list, not {_json_type(instances)}")
        values = [_unwrap_named(instance, input_name, f"instance {index}") for index, instance in enumerate(instances)]
        return signature, values, "row"
    inputs = _unwrap_named(request["inputs"], input_name, "'inputs'")
    if not isinstance(inputs, list):
        raise RequestError(400, f"'inputs' must be a list of examples, not {_json_type(inputs)}")
    return signature, inputs, "columnar"


def _unwrap_named(value, input_name, where):
    """`value`, or value[input_name] when it is the {"<input name>": value} object form."""
    if isinstance(value, dict) and "b64" not in value:
        if set(value) != {input_name}:
            raise RequestError(400, f"{where}: expected the input {input_name!r} only, got "
                                    f"{', '.join(map(repr, sorted(value))) or 'an empty object'}")
        return value[input_name]
    return value


def as_text(value, where):
    """A str example: a JSON string or {"b64": ...} holding UTF-8; RequestError 400 otherwise."""
    if isinstance(value, dict) and set(value) == {"b64"}:
        try:
            value = base64.b64decode(value["b64"], validate=True).decode("utf-8")
        except (TypeError, binascii.Error):
            raise RequestError(400, f"{where}: 'b64' must hold base64 text") from None
        except UnicodeDecodeError:
            raise RequestError(400, f"{where}: the 'b64' bytes are not UTF-8 text") from None
    if not isinstance(value, str):
        raise RequestError(400, f"{where}: expected a string, got {_json_type(value)}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise RequestError(400, f"{where}: the string holds an unpaired surrogate (not valid Unicode)") from None
    return value


def as_ids(value, where, vocab_size=None):
    """A list of token ids: a non-empty JSON list of integers in [0, vocab_size); RequestError 400 otherwise."""
    if not isinstance(value, list) or not value:
        raise RequestError(400, f"{where}: expected a non-empty list of token ids, got "
                                f"{'an empty list' if value == [] else _json_type(value)}")
    for token in value:
        if isinstance(token, bool) or not isinstance(token, int):
            raise RequestError(400, f"{where}: token ids must be integers, got {_json_type(token)}")
        if token < 0 or (vocab_size is not None and token >= vocab_size):
            limit = f"[0, {vocab_size})" if vocab_size is not None else "non-negative"
            raise RequestError(400, f"{where}: token id {token} is outside the vocabulary ({limit})")
    return value


def to_json_value(value):
    """A numpy scalar or array (or a list of them) as plain JSON values (UTF-8 strings, floats, ints, nested
    lists)."""
    if isinstance(value, (np.ndarray, list, tuple)):
        return [to_json_value(item) for item in value]
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, (np.floating, float)):
        value = float(value)
        return value if math.isfinite(value) else None  # JSON has no infinity; -inf marks an empty slot
    if isinstance(value, (np.integer, np.bool_)):
        return value.item()
    return value


def format_predictions(rows, output_names, layout):
    """The response object for per-example outputs `rows` (each {output name: JSON value})."""
    if layout == "row":
        if len(output_names) == 1:
            return {"predictions": [row[output_names[0]] for row in rows]}
        return {"predictions": rows}
    if len(output_names) == 1:
        return {"outputs": [row[output_names[0]] for row in rows]}
    return {"outputs": {name: [row[name] for row in rows] for name in output_names}}


def model_status(version):
    """GET /v1/models/<name>: the status object TensorFlow Serving answers for one available version."""
    return {
        "model_version_status": [
            {"version": str(version), "state": "AVAILABLE", "status": {"error_code": "OK", "error_message": ""}}
        ]
    }


def model_metadata(name, version, signature_defs):
    """GET /v1/models/<name>/metadata: the model spec and its SignatureDefs (protobuf JSON, as TF Serving)."""
    return {
        "model_spec": {"name": name, "signature_name": "", "version": str(version)},
        "metadata": {"signature_def": {"signature_def": signature_defs}},
    }
