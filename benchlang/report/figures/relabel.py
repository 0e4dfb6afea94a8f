"""Names of one's own for a figure's configurations (``benchlang figure --label``): a paper
shows "SHA-256", not the internal label ``digest[tool=sha256sum]``.

A name replaces a configuration's label, or a factor level as a figure draws it on an axis
(``levels``, ``level-means``), wherever the figure's numbers hold it; the caption and the
notes name the configuration by its new name too. The palette keeps each configuration's
colour and marker (``relabelled_palette``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from benchlang.errors import UserError
from benchlang.stats.figure_data import FigureData


def _swap(value: Any, names: Mapping[str, str]) -> Any:
    if isinstance(value, str):
        return names.get(value, value)
    if isinstance(value, list | tuple):
        return type(value)(_swap(v, names) for v in value)
    return value


def _text(text: str, names: Mapping[str, str]) -> str:
    """Each key renamed where it stands as a whole name (not inside a longer one: a level
    ``md5`` is not renamed inside ``md5sum`` nor inside ``digest[tool=md5]``)."""
    import re

    if not names:
        return text
    keys = sorted(names, key=len, reverse=True)
    pattern = re.compile(r"(?<![\w\[=.-])(" + "|".join(map(re.escape, keys)) + r")(?![\w\].-])")
    return pattern.sub(lambda m: names[m.group(1)], text)


def relabelled(data: FigureData, names: Mapping[str, str]) -> FigureData:
    """``data`` with every cell (and every meta value) equal to a key of ``names`` renamed,
    and each key standing as a whole name in the caption and the notes."""
    if not names:
        return data
    in_text = dict(names)
    return attrs.evolve(
        data,
        rows=[tuple(_swap(v, names) for v in row) for row in data.rows],
        caption=_text(data.caption, in_text),
        notes=tuple(_text(n, in_text) for n in data.notes),
        meta={k: _swap(v, names) for k, v in data.meta.items()},
    )


def check_names(names: Mapping[str, str], labels: Sequence[str], levels: Iterable[Any]) -> None:
    """A UserError naming each key that is neither a configuration's label nor a factor's
    level (a typo would otherwise rename nothing, silently), with the labels it could be."""
    known = set(labels) | {str(v) for v in levels}
    missing = [k for k in names if k not in known]
    if missing:
        raise UserError(
            f"--label: no configuration or level named {', '.join(map(repr, missing))}",
            hint="the configurations are " + ", ".join(labels),
        )


def parse_pairs(pairs: Iterable[str], where: str = "--label") -> dict[str, str]:
    """``CONFIG=TEXT`` pairs as a mapping: a label such as ``digest[tool=md5sum]`` holds an
    ``=`` itself, so the one after its ``]`` separates; else the first."""
    out: dict[str, str] = {}
    for pair in pairs:
        if "]=" in pair:
            head, _, new = pair.partition("]=")
            old, sep = head + "]", "="
        else:
            old, sep, new = pair.partition("=")
        if not sep or not old.strip() or not new.strip():
            raise UserError(
                f"{where}: {pair!r} is not CONFIG=TEXT",
                hint="--label 'digest[tool=sha256sum]=SHA-256' (quote it for the shell)",
            )
        out[old.strip()] = new.strip()
    return out


LABELS_FILE = "a labels file holds one CONFIG=TEXT a line, e.g. digest[tool=sha256sum]=SHA-256"


def read_labels(path: str) -> dict[str, str]:
    """A labels file: one ``CONFIG=TEXT`` a line; blank lines and ``#`` comments skipped."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError as err:
        raise UserError(
            f"cannot read labels file {path}: {err.strerror}", hint=LABELS_FILE
        ) from None
    except UnicodeDecodeError:
        raise UserError(f"labels file {path} is not UTF-8 text", hint=LABELS_FILE) from None
    kept = [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]
    return parse_pairs(kept, where=path)
