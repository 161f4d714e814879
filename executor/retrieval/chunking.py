"""Markdown cut into chunks along its structure.

The Markdown is parsed with markdown-it-py (CommonMark + tables), so a `#` comment inside a code
block is not a heading and a table is one block. Each chunk carries its heading path
(`Charts › Chart dependencies`) as its first line: the path is what a question names, so it goes
to the embedder and to BM25 with the chunk's text. Chunks are bounded in characters (a Chinese
character and a Latin letter count the same), consecutive chunks of one section share an
overlap of prose, and code blocks and tables are never cut in the middle: one that does not fit
gets a chunk of its own, and only one longer than `ATOMIC_MAX_CHARS` is cut, between lines, each
piece re-fenced or with the table header repeated, so every piece is still a valid block.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

MAX_CHUNK_CHARS = 800
OVERLAP_CHARS = 120
ATOMIC_MAX_CHARS = 3 * MAX_CHUNK_CHARS
PATH_SEPARATOR = " › "
MAX_PATH_CHARS = 200
# A page of more headings than this is chunked by size alone, its headings kept as lines of text: 540 kB of
# `# h1\ntext` made 50,000 one-line sections, so 50,000 chunks to embed and store (1.6 GB, minutes), where the
# same bytes of prose make ~700.
MAX_SECTIONS = 5_000
_ATOMIC = {"fence", "code_block", "table_open", "html_block"}
_SENTENCE_END = re.compile(r"(?<=[.!?。！？；;])\s*")


@dataclass(frozen=True)
class Block:
    text: str
    atomic: bool  # code, tables, raw HTML: kept whole


@dataclass(frozen=True)
class Section:
    headings: tuple[str, ...]  # the heading path below the title
    blocks: tuple[Block, ...]


@lru_cache(maxsize=1)
def _parser():
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark").enable("table")


def parse_sections(markdown: str) -> list[Section]:
    """The document as sections (one per heading, plus what precedes the first), in reading order; a document
    of more than MAX_SECTIONS headings is one section whose blocks include its headings."""
    lines = markdown.splitlines()
    tokens = _parser().parse(markdown)
    flat = sum(1 for t in tokens if t.type == "heading_open" and t.level == 0) > MAX_SECTIONS
    sections: list[Section] = []
    stack: list[tuple[int, str]] = []
    blocks: list[Block] = []

    def close() -> None:
        if blocks:
            sections.append(Section(tuple(h for _, h in stack), tuple(blocks)))

    for i, token in enumerate(tokens):
        if token.level != 0 or token.map is None:
            continue
        if token.type == "heading_open" and not flat:
            close()
            blocks = []
            level = int(token.tag[1])
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, inline_text(tokens[i + 1])))
            continue
        text = "\n".join(lines[token.map[0] : token.map[1]]).strip("\n")
        if text.strip():
            blocks.append(Block(text, token.type in _ATOMIC))
    close()
    return sections


def inline_text(token) -> str:
    """A heading's words without its Markdown (`code`, links, emphasis)."""
    parts = [c.content for c in token.children or [] if c.type in ("text", "code_inline")]
    return " ".join("".join(parts).split())


def headings(markdown: str) -> list[str]:
    tokens = _parser().parse(markdown)
    return [inline_text(tokens[i + 1]) for i, t in enumerate(tokens) if t.type == "heading_open" and t.level == 0]


def heading_path(title: str, section_headings: tuple[str, ...]) -> str:
    """`Title › Heading › Subheading`; a heading that repeats the title (the page's H1) is not repeated."""
    path = [title] + [h for h in section_headings if h and h.casefold() != title.casefold()]
    text = PATH_SEPARATOR.join(path)
    return text if len(text) <= MAX_PATH_CHARS else text[: MAX_PATH_CHARS - 1] + "…"


def chunk_markdown(title: str, markdown: str, limit: int = MAX_CHUNK_CHARS, overlap: int = OVERLAP_CHARS) -> list[str]:
    """Chunk texts, each `heading path\\nbody`, in reading order."""
    chunks: list[str] = []
    for section in parse_sections(markdown):
        path = heading_path(title, section.headings)
        budget = max(limit - len(path) - 1, limit // 2)
        chunks += [f"{path}\n{body}" for body in _pack(section.blocks, budget, overlap)]
    return chunks


def _pack(blocks: tuple[Block, ...], limit: int, overlap: int) -> list[str]:
    pieces = [p for b in blocks for p in _fit(b, limit, room=overlap + 3)]
    bodies: list[str] = []
    current: list[Block] = []
    size = 0
    for piece in pieces:
        if current and size + 2 + len(piece.text) > limit:
            bodies.append("\n\n".join(b.text for b in current))
            carried = _tail(current[-1], overlap)
            current = [carried] if carried and len(carried.text) + 2 + len(piece.text) <= limit else []
            size = len(current[0].text) if current else 0
        size += (2 if current else 0) + len(piece.text)
        current.append(piece)
    if current:
        bodies.append("\n\n".join(b.text for b in current))
    return bodies


def _tail(block: Block, overlap: int) -> Block | None:
    """The end of a prose block, from a sentence or word boundary, to open the next chunk with."""
    if block.atomic or overlap <= 0:
        return None
    if len(block.text) <= overlap:
        return block
    tail = block.text[-overlap:]
    boundary = _SENTENCE_END.search(tail)
    if boundary and boundary.end() < len(tail):
        tail = tail[boundary.end() :]
    elif " " in tail:
        tail = tail[tail.index(" ") + 1 :]
    return Block("…" + tail.strip(), atomic=False) if tail.strip() else None


def _fit(block: Block, limit: int, room: int) -> list[Block]:
    """A block cut to fit: prose at sentence, then word boundaries; code and tables only when huge, between lines.

    Pieces of a long paragraph leave `room` for the overlap carried in front of them.
    """
    if block.atomic:
        return [block] if len(block.text) <= ATOMIC_MAX_CHARS else _split_atomic(block.text, limit)
    if len(block.text) <= limit:
        return [block]
    limit = max(limit - room, limit // 2)
    parts: list[str] = []
    current = ""
    for sentence in _sentences(block.text):
        while len(sentence) > limit:  # no sentence boundary in sight: the last space, or a hard cut for CJK
            cut = sentence.rfind(" ", limit // 2, limit)
            cut = cut if cut > 0 else limit
            if current:
                parts.append(current)
                current = ""
            parts.append(sentence[:cut].rstrip())
            sentence = sentence[cut:].lstrip()
        if current and len(current) + len(sentence) > limit:
            parts.append(current)
            current = ""
        current += sentence
    if current.strip():
        parts.append(current)
    return [Block(p.strip(), atomic=False) for p in parts if p.strip()]


def _sentences(text: str) -> list[str]:
    out, start = [], 0
    for match in _SENTENCE_END.finditer(text):
        if match.end() > start:
            out.append(text[start : match.end()])
            start = match.end()
    if start < len(text):
        out.append(text[start:])
    return out


def _split_atomic(text: str, limit: int) -> list[Block]:
    """A huge code block or table, between lines; each piece re-opens the fence or repeats the header."""
    lines = text.split("\n")
    fence = re.match(r"^\s*(`{3,}|~{3,})", lines[0])
    if fence:
        head, body, foot = [lines[0]], lines[1:-1] if len(lines) > 1 else [], [fence.group(1)]
    elif len(lines) > 2 and lines[0].lstrip().startswith("|"):
        head, body, foot = lines[:2], lines[2:], []
    else:
        head, body, foot = [], lines, []
    frame = sum(len(x) + 1 for x in head + foot)
    pieces, current = [], []
    size = frame
    step = max(limit - frame, 1)
    for line in (part for row in body for part in (row[i : i + step] for i in range(0, max(len(row), 1), step))):
        if current and size + len(line) + 1 > max(limit, frame + 1):
            pieces.append("\n".join(head + current + foot))
            current, size = [], frame
        current.append(line)
        size += len(line) + 1
    if current:
        pieces.append("\n".join(head + current + foot))
    return [Block(p, atomic=True) for p in pieces]
