"""Markdown knowledge-base documents: front matter, defaults, and chunks."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from agent.errors import InputError

ERROR_CODE = re.compile(r"\b(?:ERR|E)_[A-Z0-9_]{2,}\b|\bOOMKilled\b|\bCrashLoopBackOff\b")
# doc keys and domains end up inside Milvus expressions, which have no parameters
# in Lite: the character set is the whitelist that keeps them literal.
DOC_KEY = re.compile(r"^[\w][\w.\-/ ]{0,400}$")
DOMAIN = re.compile(r"^[a-z0-9][a-z0-9_\-]{0,63}$")
HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$", re.M)
MAX_CHUNK_CHARS = 800


@dataclass(frozen=True)
class Chunk:
    chunk_id: str
    doc_key: str
    index: int
    text: str


@dataclass
class Document:
    doc_key: str
    title: str
    domain: str
    keywords: list[str]
    body: str
    entities: list[dict] = field(default_factory=list)
    relations: list[dict] = field(default_factory=list)

    @property
    def content_hash(self) -> str:
        meta = yaml.safe_dump(
            [self.title, self.domain, self.keywords, self.entities, self.relations], allow_unicode=True
        )
        return hashlib.sha256((meta + self.body).encode("utf-8")).hexdigest()

    @property
    def error_codes(self) -> list[str]:
        return sorted(set(ERROR_CODE.findall(self.body)))

    def chunks(self) -> list[Chunk]:
        return [
            Chunk(chunk_id=f"{self.doc_key}#{i}", doc_key=self.doc_key, index=i, text=text)
            for i, text in enumerate(split_sections(self.body))
        ]


def split_sections(body: str, limit: int = MAX_CHUNK_CHARS) -> list[str]:
    """Split on headings, then pack paragraphs so no chunk exceeds `limit` characters."""
    starts = [m.start() for m in HEADING.finditer(body)] or [0]
    if starts[0] != 0:
        starts.insert(0, 0)
    sections = [body[a:b].strip() for a, b in zip(starts, starts[1:] + [len(body)])]
    chunks: list[str] = []
    for section in filter(None, sections):
        current = ""
        for para in re.split(r"\n\s*\n", section):
            while len(para) > limit:  # one huge paragraph: cut it, there is no better boundary
                if current:
                    chunks.append(current)
                    current = ""
                chunks.append(para[:limit])
                para = para[limit:]
            if current and len(current) + len(para) + 2 > limit:
                chunks.append(current)
                current = para
            else:
                current = f"{current}\n\n{para}" if current else para
        if current.strip():
            chunks.append(current)
    return chunks or [body.strip()[:limit]]


def _front_matter(text: str) -> tuple[dict, str]:
    if not text.startswith("---"):
        return {}, text
    match = re.match(r"^---\s*\n(.*?)\n---\s*(?:\n|$)", text, re.S)
    if not match:
        return {}, text
    try:
        meta = yaml.safe_load(match.group(1)) or {}
    except yaml.YAMLError:
        meta = {}
    return (meta if isinstance(meta, dict) else {}), text[match.end():]


def _as_list(value) -> list:
    if value is None:
        return []
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    return [v for v in value if v is not None]


def parse_document(path: Path, root: Path) -> Document:
    doc_key = path.relative_to(root).as_posix()
    if not DOC_KEY.match(doc_key):
        raise InputError(f"{doc_key}: file names may hold letters, digits, '_', '-', '.', '/' and spaces only")
    text = path.read_text(encoding="utf-8", errors="replace").replace("\r\n", "\n")
    meta, body = _front_matter(text)
    headings = [m.group(2).strip() for m in HEADING.finditer(body)]
    title = str(meta.get("title") or (headings[0] if headings else path.stem))
    folder = doc_key.split("/")[0] if "/" in doc_key else "general"
    domain = str(meta.get("domain") or folder).strip().lower()
    if not DOMAIN.match(domain):
        raise InputError(f"{doc_key}: domain {domain!r} must be lowercase letters, digits, '_' or '-'")
    keywords = [str(k) for k in _as_list(meta.get("keywords"))]
    doc = Document(
        doc_key=doc_key,
        title=title,
        domain=domain,
        keywords=keywords,
        body=body.strip(),
        entities=[e if isinstance(e, dict) else {"name": str(e)} for e in _as_list(meta.get("entities"))],
        relations=[r for r in _as_list(meta.get("relations")) if isinstance(r, dict)],
    )
    if not doc.keywords:
        doc.keywords = list(dict.fromkeys(headings[1:] + doc.error_codes))
    return doc


def load_documents(root: Path) -> list[Document]:
    if not root.is_dir():
        raise InputError(f"{root}: no such folder")
    paths = sorted(p for p in root.rglob("*.md") if p.is_file() and not p.name.startswith("."))
    if not paths:
        raise InputError(f"{root}: no Markdown (.md) documents found")
    return [parse_document(p, root) for p in paths]
