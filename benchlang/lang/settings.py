"""Validation of ``{ key value ... }`` blocks against a schema, with positioned diagnostics."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs

from benchlang.lang import ast
from benchlang.lang.credentials import credential_refusal
from benchlang.lang.diagnostics import Diagnostic, Span, did_you_mean


class Invalid(Exception):
    """Raised by a validator: the value is wrong; message says what was expected."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


Validator = Callable[[ast.Value], Any]


@attrs.frozen
class Checked:
    """Validated settings: values by key and where each key was written."""

    values: dict[str, Any]
    spans: dict[str, Span]
    blocks: dict[str, ast.Setting]


def percent(value: ast.Value) -> float:
    """A percentage strictly inside (0, 100): ``95%`` or ``95``."""
    if value.kind not in ("percent", "int", "float"):
        raise Invalid(f"expected a percentage such as 95%, got {value.describe()}")
    number = float(value.value)
    if not 0.0 < number < 100.0:
        raise Invalid(
            f"{number:g}% is outside (0%, 100%)", "a percentage must lie strictly between 0 and 100"
        )
    return number


def percentile(value: ast.Value) -> float:
    if value.kind not in ("int", "float", "percent"):
        raise Invalid(f"expected a percentile such as 95, got {value.describe()}")
    number = float(value.value)
    if not 0.0 < number < 100.0:
        raise Invalid(
            f"percentile {number:g} is outside (0, 100)",
            "a percentile must lie strictly between 0 and 100, e.g. 50 or 95",
        )
    return number


def count(minimum: int = 0, maximum: int | None = None) -> Validator:
    def validate(value: ast.Value) -> int:
        if value.kind != "int" or value.value < minimum:
            raise Invalid(f"expected a whole number of at least {minimum}, got {_show(value)}")
        if maximum is not None and value.value > maximum:
            raise Invalid(f"expected a whole number of at most {maximum}, got {_show(value)}")
        return int(value.value)

    return validate


def number(minimum: float | None = None, maximum: float | None = None) -> Validator:
    def validate(value: ast.Value) -> float:
        if value.kind not in ("int", "float"):
            raise Invalid(f"expected a number, got {value.describe()}")
        x = float(value.value)
        if (minimum is not None and x < minimum) or (maximum is not None and x > maximum):
            raise Invalid(f"{x:g} is outside [{minimum}, {maximum}]")
        return x

    return validate


def duration(value: ast.Value) -> float:
    if value.kind != "duration":
        raise Invalid(f"expected a duration such as 30s, 5m or 2h, got {value.describe()}")
    return float(value.value)


def duration_or_auto(value: ast.Value) -> float | str:
    if value.kind == "word" and value.value == "auto":
        return "auto"
    if value.kind != "duration":
        raise Invalid(f"expected a duration such as 1d or 12h, or 'auto', got {value.describe()}")
    return float(value.value)


def string(value: ast.Value) -> str:
    if value.kind != "string":
        raise Invalid(f"expected a string in double quotes, got {value.describe()}")
    return value.value


def boolean(value: ast.Value) -> bool:
    if value.kind != "word" or value.value not in ("true", "false"):
        raise Invalid(f"expected true or false, got {_show(value)}")
    return value.value == "true"


def choice(*options: str) -> Validator:
    def validate(value: ast.Value) -> str:
        if value.kind != "word" or value.value not in options:
            hint = did_you_mean(str(value.value), options) if value.kind == "word" else None
            raise Invalid(f"expected one of {', '.join(options)}; got {_show(value)}", hint)
        return value.value

    return validate


def word(value: ast.Value) -> str:
    if value.kind != "word":
        raise Invalid(f"expected a name, got {_show(value)}")
    return value.value


def count_or_auto(value: ast.Value) -> int | str:
    if value.kind == "word" and value.value == "auto":
        return "auto"
    if value.kind == "int" and value.value >= 1:
        return int(value.value)
    raise Invalid(f"expected a whole number of at least 1 or 'auto', got {_show(value)}")


def strings(value: ast.Value) -> tuple[str, ...]:
    if value.kind == "string":
        return (value.value,)
    if value.kind == "list" and all(v.kind == "string" for v in value.value):
        return tuple(v.value for v in value.value)
    raise Invalid(f"expected a string or a list of strings, got {value.describe()}")


def literal(value: ast.Value) -> Any:
    """Any scalar or list literal as a plain Python value (lists become tuples, a quantity
    its text: ``4GB``)."""
    if value.kind == "quantity":
        return f"{value.value[0]:g}{value.value[1]}"
    if value.kind == "list":
        return tuple(literal(v) for v in value.value)
    if value.kind == "range":
        return value.value
    return value.value


def _show(value: ast.Value) -> str:
    if value.kind in ("list", "range"):
        return value.describe()
    if value.kind == "quantity":
        return literal(value)
    return repr(value.value) if value.kind == "string" else str(value.value)


def check_settings(
    settings: ast.Settings | None,
    schema: Mapping[str, Validator | None],
    where: str,
    diagnostics: list[Diagnostic],
    blocks: tuple[str, ...] = (),
) -> Checked:
    """Validate each ``key value`` against ``schema`` (None: a nested block is expected)."""
    values: dict[str, Any] = {}
    spans: dict[str, Span] = {}
    nested: dict[str, ast.Setting] = {}
    for item in settings.items if settings else ():
        if item.value is not None and (
            refusal := credential_refusal(item.key, item.value.span, where, None)
        ):
            diagnostics.append(refusal)
            continue
        if item.key not in schema:
            hint = did_you_mean(item.key, schema) or f"{where} accepts: {', '.join(sorted(schema))}"
            diagnostics.append(
                Diagnostic(f"unknown setting '{item.key}' in {where}", item.span, hint)
            )
            continue
        if item.key in spans:
            diagnostics.append(
                Diagnostic(
                    f"'{item.key}' is set twice in {where}",
                    item.span,
                    f"first set on line {spans[item.key].line}",
                )
            )
            continue
        spans[item.key] = item.span
        validator = schema[item.key]
        if item.key in blocks:
            nested[item.key] = item
            continue
        if (
            item.file is not None
            or item.env is not None
            or item.block is not None
            or item.value is None
            or validator is None
        ):
            diagnostics.append(Diagnostic(f"'{item.key}' in {where} takes a value", item.span))
            continue
        try:
            values[item.key] = validator(item.value)
        except Invalid as err:
            diagnostics.append(Diagnostic(f"{item.key}: {err.message}", item.value.span, err.hint))
    return Checked(values, spans, nested)


def amount(minimum: float = 0.0) -> Validator:
    """A number, or a percentage of a reference (kept as ``("percent", x)``)."""

    def validate(value: ast.Value) -> float | tuple[str, float]:
        if value.kind == "percent":
            return ("percent", float(value.value))
        return number(minimum, None)(value)

    return validate


def from_parameter(parameter: Any) -> Validator:
    """The validator of a statistics method's declared parameter (stats.contract.Parameter)."""
    p = parameter
    if p.type == "percent":
        return percent if p.minimum is None and p.maximum is None else _bounded(percent, p, "%")
    if p.type == "percentile":
        return percentile
    if p.type == "count":
        low = int(p.minimum) if p.minimum is not None else 0
        return count(low, int(p.maximum) if p.maximum is not None else None)
    if p.type == "number":
        return number(p.minimum, p.maximum)
    if p.type == "amount":
        return amount(p.minimum or 0.0)
    if p.type == "choice":
        return choice(*p.choices)
    return {"boolean": boolean, "word": word, "string": string, "duration": duration}[p.type]


def method_schema(method: Any) -> dict[str, Validator | None]:
    """Setting key -> validator for every parameter a statistics method declares."""
    return {p.name: from_parameter(p) for p in method.parameters}


def _bounded(validate: Validator, p: Any, unit: str) -> Validator:
    def bounded(value: ast.Value) -> Any:
        x = validate(value)
        if (p.minimum is not None and x < p.minimum) or (p.maximum is not None and x > p.maximum):
            raise Invalid(
                f"{x:g}{unit} is outside [{p.minimum or 0:g}{unit}, {p.maximum:g}{unit}]",
                f"{p.name}: {p.doc}",
            )
        return x

    return bounded
