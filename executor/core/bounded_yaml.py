"""YAML from files anyone may have written (front matter, config.yaml, label files), read within bounds.

PyYAML's safe loader builds whatever the text describes: an alias bomb ("billion laughs") of 1 kB expands to
gigabytes, and 10,000 levels of nesting end in a RecursionError. Here the text is first read as a stream of
events (libyaml, no tree, no recursion), which gives its nesting depth and the size it would have once its
aliases are expanded; only a text within the bounds is then loaded, by the same safe loader.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

import yaml

# libyaml's C loader where PyYAML has it: the same data as the pure-Python one, several times faster
# libyaml's loader when PyYAML was built with it; typed as the pure-Python one, whose interface it shares
LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

# the tags YAML 1.1 gives a plain word that is no text: `on`, `yes`, `off`, `no`, `true` (bool), `~`, `null`
_WORD_TAGS = ("tag:yaml.org,2002:bool", "tag:yaml.org,2002:null")


class _Loader(LOADER):
    """The safe loader, except that a mapping key YAML 1.1 reads as a boolean or null keeps the text it was written
    with: `on: 1` in config.yaml was "unknown setting 'True'". No file read here means a boolean as a key; values
    are read as before."""

    def flatten_mapping(self, node):  # after merge keys (`<<: *d`) brought their pairs in, before any key is built
        super().flatten_mapping(node)
        for key, _ in node.value:
            if isinstance(key, yaml.ScalarNode) and key.tag in _WORD_TAGS:
                key.tag = "tag:yaml.org,2002:str"


class YamlBoundError(ValueError):
    """The text is valid YAML or not, but too big, too deep, or uses aliases where none are allowed."""


@dataclass(frozen=True)
class Bounds:
    max_chars: int  # the text itself
    max_depth: int  # nested mappings and lists
    max_expanded: int  # characters of every scalar, counted again wherever an alias repeats it
    aliases: bool = True  # whether `&anchor` / `*alias` may be used at all


FRONT_MATTER = Bounds(max_chars=256 * 1024, max_depth=32, max_expanded=1024 * 1024, aliases=False)
CONFIG = Bounds(max_chars=1024 * 1024, max_depth=64, max_expanded=4 * 1024 * 1024)
LABELS = Bounds(max_chars=16 * 1024 * 1024, max_depth=64, max_expanded=64 * 1024 * 1024)


_KINDS = {
    stat.S_ISDIR: "a folder",
    stat.S_ISCHR: "a character device",
    stat.S_ISBLK: "a block device",
    stat.S_ISFIFO: "a named pipe (FIFO)",
    stat.S_ISSOCK: "a socket",
}


def file_kind(mode: int) -> str:
    """What a file that is not a regular one is, in words ("a named pipe (FIFO)"), from its `st_mode`."""
    return next((name for test, name in _KINDS.items() if test(mode)), "not a file")


def read_text(path: Path, bounds: Bounds) -> str:
    """The UTF-8 text of `path`, a regular file within `bounds`; YamlBoundError for anything else, OSError or
    UnicodeDecodeError if it cannot be read as text. Only the bytes the bound allows are read: /dev/zero read
    whole ended in a MemoryError, and a FIFO blocked forever (it is opened without waiting for a writer)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise YamlBoundError(f"it is {file_kind(mode)}, not a regular file")
        most = bounds.max_chars * 4  # UTF-8: up to 4 bytes a character
        with os.fdopen(os.dup(fd), "rb") as f:
            data = f.read(most + 1)
    finally:
        os.close(fd)
    if len(data) > most:
        raise YamlBoundError(f"it is over {most:,} bytes; at most {bounds.max_chars:,} characters are read")
    return data.decode("utf-8")


def check(text: str, bounds: Bounds) -> None:
    """YamlBoundError unless `text` is within `bounds`; yaml.YAMLError if it is not YAML."""
    if len(text) > bounds.max_chars:
        raise YamlBoundError(f"it is {len(text):,} characters; at most {bounds.max_chars:,} are read")
    sizes: dict[str, int] = {}  # anchor -> the expanded size of what it names
    stack: list[list] = [[None, 0]]  # [anchor, size so far] per open mapping or list; the bottom is the document
    for event in yaml.parse(text, Loader=LOADER):
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            if event.anchor is not None and not bounds.aliases:
                raise YamlBoundError("it uses YAML anchors and aliases (&name, *name), which are not allowed here")
            stack.append([event.anchor, 1])
            if len(stack) - 1 > bounds.max_depth:
                raise YamlBoundError(f"it nests deeper than {bounds.max_depth} levels")
            continue
        if isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            anchor, size = stack.pop()
        elif isinstance(event, yaml.ScalarEvent):
            anchor, size = event.anchor, len(event.value) + 1
        elif isinstance(event, yaml.AliasEvent):
            if not bounds.aliases:
                raise YamlBoundError("it uses YAML anchors and aliases (&name, *name), which are not allowed here")
            anchor, size = None, sizes.get(event.anchor, 1)
        else:
            continue
        if anchor is not None:
            if not bounds.aliases:
                raise YamlBoundError("it uses YAML anchors and aliases (&name, *name), which are not allowed here")
            sizes[anchor] = size
        stack[-1][1] += size
        if stack[0][1] + sum(s for _, s in stack[1:]) > bounds.max_expanded:
            raise YamlBoundError(
                f"it expands to more than {bounds.max_expanded:,} characters (its aliases repeat what they name)"
            )


def load(text: str, bounds: Bounds):
    """The data of `text` (safe types only; a key written `on`, `no` or `~` is that text), once `check` found it
    within `bounds`."""
    check(text, bounds)
    return yaml.load(text, Loader=_Loader)


def duplicate_keys(text: str) -> list[str]:
    """The keys a mapping of `text` gives twice (`a.b` for one nested under `a`), which the safe loader keeps
    the last of without a word; for a text `check` found within bounds (its depth bounds the walk)."""
    found: list[str] = []

    def walk(node, path: list[str]) -> None:
        if isinstance(node, yaml.MappingNode):
            seen: set[str] = set()
            for key, value in node.value:
                name = key.value if isinstance(key, yaml.ScalarNode) else "?"
                if name in seen:
                    found.append(".".join([*path, name]))
                seen.add(name)
                walk(value, [*path, name])
        elif isinstance(node, yaml.SequenceNode):
            for i, value in enumerate(node.value):
                walk(value, [*path, str(i)])

    walk(yaml.compose(text, Loader=LOADER), [])
    return found
