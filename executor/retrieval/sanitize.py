"""Text made safe at parse time: what a document carries must not reach a terminal, a store or an LLM raw.

NUL bytes break graph parameters and C strings, terminal escape sequences (CSI colours, OSC titles
and hyperlinks) would be replayed by whoever prints a chunk, and lone surrogates (undecodable bytes
smuggled through `surrogateescape`) make UTF-8 encoding fail later, far from the file that had them.
"""

from __future__ import annotations

import re

# OSC ... BEL/ST, CSI ... final byte, and the two-byte escapes; the 8-bit C1 forms too.
_ESCAPES = re.compile(
    r"(?:\x1b\]|\x9d)[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"  # OSC (window title, hyperlink), terminated or not
    r"|(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]"  # CSI (colours, cursor moves, screen clears)
    r"|\x1b[ -/]*[0-~]?"  # any other ESC sequence, or a lone ESC
)
_CONTROLS = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f-\x9f]")  # keeps \t and \n; \f and \r are handled first
_SURROGATES = re.compile(r"[\ud800-\udfff]")


def sanitize_text(text: str) -> str:
    """Newlines normalised, escape sequences and control characters removed, lone surrogates replaced."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\f", "\n\n")  # pdf page breaks are \f
    text = _ESCAPES.sub("", text)
    text = _CONTROLS.sub("", text)
    return _SURROGATES.sub("\ufffd", text)


def sanitize_line(text: str) -> str:
    """One line of plain text (a title, a keyword): sanitised, whitespace runs folded."""
    return " ".join(sanitize_text(text).split())
