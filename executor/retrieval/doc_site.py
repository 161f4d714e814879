"""Documentation-site Markdown made plain before chunking: Hugo, Jekyll, Docusaurus (MDX).

A doc site's Markdown carries markup that the site renders and a reader never sees: MDX
`import`/`export` lines, JSX components (`<Tabs>`, `<DocCardList />`), admonitions (`:::note`,
Hugo `{{< note >}}`), HTML comments. Indexed as text it is noise that matches queries about
nothing. Components are unwrapped to their text, admonitions keep their label as a word of the
text ("Note:"), and everything inside fenced code is left exactly as written (a shell
`export FOO=1` or an XML `<Error>` in a code block is content).
"""

from __future__ import annotations

import re

ADMONITIONS = {
    "note",
    "tip",
    "info",
    "warning",
    "caution",
    "danger",
    "important",
    "alert",
    "notice",
    "callout",
    "success",
    "hint",
    "attention",
    "error",
}
_FENCE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})")
_COMMENT = re.compile(r"<!--.*?-->", re.S)
_INLINE_CODE = re.compile(r"(`+)(?:(?!\1)[^\n])+?\1")
_MDX_IMPORT = re.compile(r"^import\s+(?:[\w*{}\s,$]+\s+from\s+)?['\"][^'\"]+['\"]\s*;?\s*$", re.M)
_MDX_EXPORT_START = re.compile(r"^export\s+(?:default\s+|const\s+|let\s+|var\s+|function\s+|\{)")
_IMPORTED = re.compile(r"^import\s+([\w*{}\s,$]+?)\s+from\s+", re.M)
_ADMONITION_OPEN = re.compile(
    r"^([ \t]*):::+[ \t]*([A-Za-z]+)(?:\[([^\]]*)\]|[ \t]+(.*?))?[ \t]*(?:\{.*\})?[ \t]*$", re.M
)
_ADMONITION_CLOSE = re.compile(r"^[ \t]*:::+[ \t]*$\n?", re.M)
_SHORTCODE = re.compile(r"\{\{[<%]\s*(/?)\s*([\w\-./]+)((?:\s[^{}]*?)?)\s*/?[>%]\}\}")
_ATTR = re.compile(r"""\b(label|title|name)\s*=\s*(?:"([^"]*)"|'([^']*)'|\{["'`]([^"'`]*)["'`]\})""")
_COMPONENT_USE = re.compile(r"</([A-Z][\w.]*)\s*>|<([A-Z][\w.]*)\b[^<>]*/>", re.S)


def clean_doc_site(markdown: str, mdx: bool = False) -> str:
    """The Markdown a reader of the rendered page would read, with code blocks untouched.

    `export` statements are dropped only from MDX (an .mdx file, or one with an MDX import line):
    in plain Markdown a line may well start with "export default".
    """
    segments = split_fenced(markdown)
    prose = "\n".join(text for is_code, text in segments if not is_code)
    components = _component_names(prose)
    mdx = mdx or bool(_MDX_IMPORT.search(prose))
    cleaned = "".join(text if is_code else _clean_prose(text, components, mdx) for is_code, text in segments)
    return re.sub(r"\n[ \t]*\n(?:[ \t]*\n)+", "\n\n", cleaned).strip()


def split_fenced(markdown: str) -> list[tuple[bool, str]]:
    """(is_code, text) runs: fenced code blocks (fences included) and the prose between them."""
    segments: list[tuple[bool, str]] = []
    current: list[str] = []
    fence = None
    for line in markdown.splitlines(keepends=True):
        match = _FENCE.match(line)
        if fence is None and match:
            if current:
                segments.append((False, "".join(current)))
            current, fence = [line], match.group(1)
        elif fence is not None:
            current.append(line)
            if (
                match
                and match.group(1)[0] == fence[0]
                and len(match.group(1)) >= len(fence)
                and not line.strip()[len(match.group(1)) :]
            ):
                segments.append((True, "".join(current)))
                current, fence = [], None
        else:
            current.append(line)
    if current:
        segments.append((fence is not None, "".join(current)))
    return segments


def _component_names(prose: str) -> set[str]:
    """JSX components: imported, or used in a closing or self-closing tag (so `<CHARTNAME>` in prose stays)."""
    names: set[str] = set()
    for match in _IMPORTED.finditer(prose):
        names.update(n for n in re.findall(r"[A-Z][\w$]*", match.group(1)))
    for match in _COMPONENT_USE.finditer(_INLINE_CODE.sub("", prose)):
        names.add(match.group(1) or match.group(2))
    return names


def _clean_prose(text: str, components: set[str], mdx: bool) -> str:
    text = _COMMENT.sub("", text)
    spans: list[str] = []

    def keep(match: re.Match) -> str:  # inline code is content: hidden from the rules below, put back after
        spans.append(match.group(0))
        return f"\x00{len(spans) - 1}\x00"

    text = _INLINE_CODE.sub(keep, text)
    text = _MDX_IMPORT.sub("", text)
    if mdx:
        text = _drop_exports(text)
    text = _ADMONITION_OPEN.sub(_admonition_label, text)
    text = _ADMONITION_CLOSE.sub("", text)
    text = _SHORTCODE.sub(_shortcode, text)
    if components:
        names = "|".join(re.escape(n) for n in sorted(components, key=len, reverse=True))
        text = re.sub(rf"<(/?)({names})(\s[^<>]*?)?\s*(/?)>", _component, text, flags=re.S)
    return re.sub("\x00(\\d+)\x00", lambda m: spans[int(m.group(1))], text)


def _drop_exports(text: str) -> str:
    """MDX `export` statements, including the ones whose braces span several lines."""
    out: list[str] = []
    depth = 0
    for line in text.splitlines(keepends=True):
        if depth > 0 or _MDX_EXPORT_START.match(line):
            depth = max(
                0,
                depth
                + line.count("{")
                + line.count("(")
                + line.count("[")
                - line.count("}")
                - line.count(")")
                - line.count("]"),
            )
            continue
        out.append(line)
    return "".join(out)


def _label(kind: str, title: str | None) -> str:
    label = kind.capitalize()
    return f"{label}: {title.strip()}" if title and title.strip() else f"{label}:"


def _admonition_label(match: re.Match) -> str:
    indent, kind, bracketed, rest = match.groups()
    return f"{indent}{_label(kind, bracketed or rest)}"


def _attr(attrs: str) -> str | None:
    found = _ATTR.search(attrs or "")
    return next((g for g in found.groups()[1:] if g), None) if found else None


def _shortcode(match: re.Match) -> str:
    closing, name, attrs = match.group(1), match.group(2).lower(), match.group(3) or ""
    if name == "highlight":
        lang = attrs.split()[0].strip("\"'") if attrs.split() else ""
        return "```" if closing else f"```{lang}"
    if name in ADMONITIONS and not closing:
        positional = re.fullmatch(r"\s*[\"']([^\"']*)[\"']\s*", attrs)
        return _label(name, _attr(attrs) or (positional.group(1) if positional else None))
    return ""  # closing tags, refs, figures: the text around them is what a reader sees


def _component(match: re.Match) -> str:
    closing, attrs = match.group(1), match.group(3)
    label = None if closing else _attr(attrs)
    return f"\n\n{label}\n\n" if label else ""
