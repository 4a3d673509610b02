"""Settings dataclasses: each setting declared once, with its help and its allowed values.

A field made with `setting(default, help, choices)` carries its help text in the dataclass metadata; command
lines derive their flags from it (`t2t_repro.cli.flags`) and `describe` lists the fields with their values.
`check_fields` enforces what every settings class promises: values of the declared type, numbers finite,
choices respected, integers positive unless declared otherwise; `check_interval` states a narrower range.
"""

import dataclasses
import difflib
import math
import typing

from t2t_repro.errors import UserError


def setting(default, help, choices=None, minimum=None):
    """A dataclass field with its help text, its allowed values and its smallest allowed value (integers: 1
    unless told otherwise)."""
    return dataclasses.field(default=default, metadata={"help": help, "choices": choices, "minimum": minimum})


def field_types(cls):
    """{field name: type} of a settings dataclass, with `X | None` resolved to X."""
    types = {}
    for name, kind in typing.get_type_hints(cls).items():
        arguments = [a for a in typing.get_args(kind) if a is not type(None)]
        types[name] = arguments[0] if arguments and type(None) in typing.get_args(kind) else kind
    return types


def _of_type(value, kind):
    """True when `value` is a value of the field type `kind` (an int is a float; a bool is neither)."""
    if kind is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return not isinstance(kind, type) or isinstance(value, kind)


def check_fields(settings, what):
    """Raises UserError for a field of another type, a number that is NaN or infinite, a value outside its
    choices or below its minimum (None means "not set")."""
    types = field_types(type(settings))
    for f in dataclasses.fields(settings):
        value = getattr(settings, f.name)
        if value is None or not f.metadata:
            continue
        kind = types[f.name]
        if not _of_type(value, kind):
            raise UserError(f"{what} {f.name}={value!r}: expected a value of type {kind.__name__}")
        if kind is float and not math.isfinite(value):
            raise UserError(f"{what} {f.name}={value}: must be a finite number")
        choices = f.metadata.get("choices")
        if choices and value not in choices:
            raise UserError(f"{what} {f.name}={value!r}: must be one of {', '.join(choices)}")
        minimum = f.metadata.get("minimum")
        if minimum is None and kind is int:
            minimum = 1
        if kind in (int, float) and minimum is not None and value < minimum:
            raise UserError(f"{what} {f.name}={value}: must be at least {minimum}")


def check_interval(settings, what, names, low, high=math.inf, low_open=False, high_open=True):
    """Raises UserError for a field of `names` outside the interval from `low` (included unless `low_open`) to
    `high` (excluded unless `high_open=False`): `check_interval(hparams, "hparams", ["adam_beta1"], 0, 1)`
    asks for [0, 1)."""
    for name in names:
        value = getattr(settings, name)
        above = low < value if low_open else low <= value
        below = value < high if high_open else value <= high
        if not (above and below):
            if high == math.inf:
                bound = f"greater than {low:g}" if low_open else f"at least {low:g}"
            else:
                bound = f"in {'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
            raise UserError(f"{what} {name}={value}: must be {bound}")


def parse_value(name, text, kind):
    """A command-line or override string as a value of `kind` (bool, int, float or str)."""
    if kind is bool:
        lowered = text.strip().lower()
        if lowered in ("true", "1", "yes"):
            return True
        if lowered in ("false", "0", "no"):
            return False
        raise UserError(f"{name}={text!r}: expected true or false")
    try:
        return kind(text.strip())
    except ValueError:
        raise UserError(f"{name}={text!r}: expected a value of type {kind.__name__}") from None


def parse_overrides(settings_class, text, what):
    """Parses "key=value,key=value" into a dict typed by the fields of `settings_class`; `what` names the
    settings in messages ("hparams", "problem setting"). An unknown key is refused naming the closest field
    names, a key given twice is refused, and a value must parse as its field's type."""
    types = {f.name: field_types(settings_class)[f.name] for f in dataclasses.fields(settings_class) if f.metadata}
    values = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        if "=" not in item:
            raise UserError(f"{what} override {item!r}: expected key=value")
        name, raw = (s.strip() for s in item.split("=", 1))
        if name not in types:
            raise UserError(f"unknown {what} key {name!r}; {_closest_names(name, types)}")
        if name in values:
            raise UserError(f"{what} override {name} is given twice; give each key once")
        values[name] = parse_value(f"{what} override {name}", raw, types[name])
    return values


def _closest_names(name, names):
    close = difflib.get_close_matches(name, names, n=3, cutoff=0.5)
    listing = f"closest: {', '.join(close)}; " if close else ""
    return f"{listing}valid keys: {', '.join(names)}" if names else "it takes no settings"


def apply_overrides(settings, text, what):
    """`settings` (a frozen settings dataclass) with the overrides in `text` ("key=value,...") applied; the new
    values are validated by the dataclass."""
    if not text:
        return settings
    return dataclasses.replace(settings, **parse_overrides(type(settings), text, what))


def differing_keys(saved, current):
    """Names of the fields whose values differ between two settings of one dataclass."""
    return [f.name for f in dataclasses.fields(saved) if getattr(saved, f.name) != getattr(current, f.name)]


def dict_differences(saved, now, saved_word="saved"):
    """"key: saved X, now Y, ..." for each key whose value differs between the dicts `saved` and `now` (a key
    missing from one is None there); "" when they agree."""
    keys = sorted(key for key in set(saved) | set(now) if saved.get(key) != now.get(key))
    return ", ".join(f"{key}: {saved_word} {saved.get(key)!r}, now {now.get(key)!r}" for key in keys)


def describe(settings):
    """One line per field: its name, its value and its help."""
    fields = [f for f in dataclasses.fields(settings) if f.metadata]
    width = max(len(f.name) for f in fields)
    values = [repr(getattr(settings, f.name)) for f in fields]
    value_width = max(len(v) for v in values)
    return "\n".join(
        f"{f.name.ljust(width)}  {value.ljust(value_width)}  {f.metadata['help']}" for f, value in zip(fields, values)
    )
