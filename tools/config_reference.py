"""The configuration page's reference, made from the classes themselves: every field of
every config class with its default, as the dataclass and the core give it (sizes left
to the model-aware default are shown resolved for a known and an unknown window), and
what it does, from the class's docstring. ``readme_examples.py`` puts it in
docs/configuration.md and checks it there, so the page cannot drift from the code.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
from typing import Any

from fastcompact import config as cfg

# The sub-configs in the order the page shows them, with the key of their resolved
# settings (None: nothing in them is left to a model-aware default).
SECTIONS: list[tuple[type, str | None]] = [
    (cfg.TokenBudgetConfig, "budget"),
    (cfg.TruncateArgsConfig, "truncate_args"),
    (cfg.ClearingConfig, "clearing"),
    (cfg.DedupeConfig, "dedupe"),
    (cfg.CollapseConfig, "collapse"),
    (cfg.MicrocompactConfig, "microcompact"),
    (cfg.RestorationConfig, None),
    (cfg.MemoryConfig, None),
]
SUB_CONFIGS = {c: key for c, key in SECTIONS}
# The window the "known window" defaults are shown for.
WINDOW = 200_000


def _code(text: str) -> str:
    """Docstring markup (``x``) as Markdown (`x`), lines joined."""
    return " ".join(line.strip() for line in text.replace("``", "`").splitlines()).strip()


def _prose(cls: type) -> str:
    """The class docstring up to its first section (Attributes, Examples)."""
    doc = inspect.getdoc(cls) or ""
    body = re.split(r"^(?:Attributes|Examples):$", doc, maxsplit=1, flags=re.M)[0]
    return "\n\n".join(_code(part) for part in body.strip().split("\n\n"))


def _attributes(cls: type) -> dict[str, str]:
    """The ``Attributes:`` section of a class docstring, by field name."""
    doc = inspect.getdoc(cls) or ""
    found = re.search(r"^Attributes:\n(.*?)(?:^\S|\Z)", doc, flags=re.M | re.S)
    if not found:
        return {}
    entries = re.split(r"^ {4}(\w+): ", found.group(1), flags=re.M)[1:]
    return {name: _code(text) for name, text in zip(entries[::2], entries[1::2], strict=True)}


def _value(value: Any) -> str:
    if isinstance(value, tuple) and len(value) == 2 and value[0] == "fraction":
        return f"{value[1]:.0%} of the window"
    if isinstance(value, set | frozenset | list) and all(isinstance(v, str) for v in value):
        return "`{" + ", ".join(sorted(value)) + "}`" if value else "`set()`"
    if isinstance(value, list) and len(value) == 1:
        return _value(value[0])
    return f"`{value!r}`"


def _resolved(known: Any, unknown: Any) -> str:
    if known == unknown:
        return _value(known)
    return f"{_value(known)}; without a window, {_value(unknown)}"


def _default(cls: type, f: dataclasses.Field[Any], resolved: tuple[dict[str, Any], dict[str, Any]]) -> str:
    if f.default is not dataclasses.MISSING:
        default = f.default
    elif f.default_factory is not dataclasses.MISSING:
        default = f.default_factory()
    else:
        raise ValueError(f"{cls.__name__}.{f.name} has no default")
    if type(default) in SUB_CONFIGS:
        name = type(default).__name__
        return f"a [`{name}`](#{name.lower()})"
    known, unknown = resolved
    if default is cfg.DEFAULT or (cls is cfg.CompactionConfig and default is None and f.name in known):
        return _resolved(known[f.name], unknown[f.name])
    if isinstance(default, set):
        return _value(default)
    return f"`{default!r}`"


def _table(cls: type, resolved: tuple[dict[str, Any], dict[str, Any]], effects: dict[str, str]) -> list[str]:
    head = ["| field | default | effect |", "|---|---|---|"]
    rows = head if effects else ["| field | default |", "|---|---|"]
    for f in dataclasses.fields(cls):
        row = f"| `{f.name}` | {_default(cls, f, resolved)} |"
        if effects:
            row += f" {effects.get(f.name, '')} |"
        rows.append(row)
    return rows


def reference() -> str:
    """The Markdown of the reference: CompactionConfig, then each sub-config."""
    known = cfg.CompactionConfig().resolved(max_input_tokens=WINDOW)
    unknown = cfg.CompactionConfig().resolved(max_input_tokens=None)
    top = cfg.CompactionConfig
    effects = _attributes(top)
    missing = [f.name for f in dataclasses.fields(top) if f.name not in effects]
    if missing:
        raise ValueError(f"CompactionConfig's docstring says nothing of: {', '.join(missing)}")
    out = [f"### {top.__name__}", "", _prose(top), "", *_table(top, (known, unknown), effects)]
    for cls, key in SECTIONS:
        section = (known[key], unknown[key]) if key else ({}, {})
        out += ["", f"### {cls.__name__}", "", _prose(cls), "", *_table(cls, section, _attributes(cls))]
    out += ["", f'("of the window" is a share of the model\'s `max_input_tokens`, {WINDOW:,} above.)']
    return "\n".join(out) + "\n"
