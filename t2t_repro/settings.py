"""Settings dataclasses: each setting declared once, with its help and its allowed values.

A field made with `setting(default, help, choices)` carries its help text in the dataclass metadata; command
lines derive their flags from it (`t2t_repro.cli.flags`) and `describe` lists the fields with their values.
`check_fields` enforces what every settings class promises: choices respected, integers positive unless
declared otherwise.
"""

import dataclasses
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


def check_fields(settings, what):
    """Raises UserError for a field outside its choices or below its minimum (None means "not set")."""
    types = field_types(type(settings))
    for f in dataclasses.fields(settings):
        value = getattr(settings, f.name)
        if value is None or not f.metadata:
            continue
        choices = f.metadata.get("choices")
        if choices and value not in choices:
            raise UserError(f"{what} {f.name}={value!r}: must be one of {', '.join(choices)}")
        minimum = f.metadata.get("minimum")
        if minimum is None and types[f.name] is int:
            minimum = 1
        if types[f.name] in (int, float) and minimum is not None and value < minimum:
            raise UserError(f"{what} {f.name}={value}: must be at least {minimum}")


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


def describe(settings):
    """One line per field: its name, its value and its help."""
    fields = [f for f in dataclasses.fields(settings) if f.metadata]
    width = max(len(f.name) for f in fields)
    values = [repr(getattr(settings, f.name)) for f in fields]
    value_width = max(len(v) for v in values)
    return "\n".join(
        f"{f.name.ljust(width)}  {value.ljust(value_width)}  {f.metadata['help']}" for f, value in zip(fields, values)
    )
