"""Reading a JSON object a tool or a run wrote, with one-line errors; light to import (no TensorFlow), so that
standalone tools can use it."""

import json
import os

from t2t_repro.errors import UserError


def read_json(path, what):
    """The JSON object in the file `path` (`what` it holds, for messages); UserError when it is missing,
    unreadable, not JSON or not an object."""
    try:
        with open(path, encoding="utf-8") as f:
            value = json.load(f)
    except FileNotFoundError:
        raise UserError(f"{path} not found: is {os.path.dirname(path) or '.'} a t2t-repro output_dir?") from None
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as error:
        reason = str(error) if not isinstance(error, RecursionError) else "nested too deeply"
        raise UserError(f"{path} is not valid JSON ({what}): {reason}") from None
    except OSError as error:
        raise UserError(f"cannot read {path} ({what}): {error.strerror}") from None
    if not isinstance(value, dict):
        kind = {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(type(value), "a number")
        raise UserError(f"{path} holds {kind}, not a JSON object ({what})")
    return value
