"""Knowledge-base documents: front matter, defaults, doc-site clean-up, and structural chunks.

Every format ends here as Markdown (`executor/retrieval/converters.py` converts the others), is
sanitised, and becomes a `Document`. Problems in one file (wrongly typed front matter, a domain
that is not a valid name) become warnings on that document, never a traceback.
"""

from __future__ import annotations

import datetime
import hashlib
import math
import re
import tomllib
import unicodedata
from dataclasses import dataclass, field
from functools import cached_property

import yaml

from executor.core import bounded_yaml
from executor.core.errors import InputError
from executor.retrieval.chunking import MAX_SECTIONS, chunk_markdown
from executor.retrieval.chunking import headings as markdown_headings
from executor.retrieval.doc_site import clean_doc_site
from executor.retrieval.sanitize import sanitize_line, sanitize_text
from executor.stores.knowledge_graph import MAX_ENTITY_CHARS

# libyaml's C dumper (and loader, executor/core/bounded_yaml.py) where PyYAML has them: the same text as the pure-Python
# one (compared on the sample KB, the Helm docs and synthetic pages), several times faster; reading
# front matter and hashing it was most of a re-ingest that found little changed
_YAML_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


ERROR_CODE = re.compile(r"\b(?:ERR|E)_[A-Z0-9_]{2,}\b|\bOOMKilled\b|\bCrashLoopBackOff\b")
# doc keys and domains end up inside Milvus expressions, which have no parameters
# in Lite: the character set is the whitelist that keeps them literal.
DOC_KEY = re.compile(r"^[\w][\w.\-/ ]{0,400}$")
DOMAIN = re.compile(r"^[a-z0-9][a-z0-9_\-]{0,63}$")
# Part of every content hash: a change to cleaning or chunking re-embeds existing KBs on the
# next ingest (their documents count as changed), with no --rebuild and no schema change.
# 3: converted pages keep `_` and `*` unescaped; 5,000+ headings chunked by size. 4: inline images and long
# encoded blobs cut; hidden HTML elements and hidden sheets left out (a KB ingested before still serves them)
PARSER_VERSION = "4"
OFFICE_AND_PDF = frozenset({"pdf", "docx", "pptx", "xlsx"})
_YAML_FRONT = re.compile(r"^---[ \t]*\n(.*?)\n---[ \t]*(?:\n|$)", re.S)
_TOML_FRONT = re.compile(r"^\+\+\+[ \t]*\n(.*?)\n\+\+\+[ \t]*(?:\n|$)", re.S)


# A data URI's payload (`![diagram](data:image/png;base64,iVBOR…)`, as Typora, Obsidian and pandoc's self-contained
# export paste images): 2 MB of it made 3,017 chunks of base64, most of an ingest's time, quoted to the LLM
# (hostile22 #2). Cut to its type, as markitdown cuts the data URIs of HTML and Office files.
_DATA_URI = re.compile(
    r"\b(data:[\w.+-]{0,100}(?:/[\w.+-]{0,100})?(?:;[\w.+-]{1,100}=[^;,\s()\"']{0,100}){0,10};base64),"
    r"[A-Za-z0-9+/=_-]*",
    re.I,
)
# Any other run this long of base64's (or hex's) characters holding letters and digits: a key or a certificate on
# one line (`tls.crt: LS0tLS1CRUdJTi…`), an attachment pasted whole. No one looks one up, nor reads it quoted. A
# run of letters alone (a DNA or protein sequence) is text; a PEM block's lines of 64 are short of it.
MAX_ENCODED_RUN = 1000
_ENCODED_RUN = re.compile(rf"(?<![A-Za-z0-9+/=_-])[A-Za-z0-9+/=_-]{{{MAX_ENCODED_RUN},}}")


def cut_encoded(text: str) -> str:
    """`text` with data URIs cut to their type (`data:image/png;base64...`) and long encoded runs to a note."""
    text = _DATA_URI.sub(r"\1...", text)
    return _ENCODED_RUN.sub(_encoded_note, text)


def _encoded_note(match: re.Match) -> str:
    run = match.group()
    if not (re.search(r"\d", run) and re.search(r"[A-Za-z]", run)):
        return run
    return f"[{len(run):,} characters of encoded data left out]"


@dataclass(frozen=True)
class Chunk:
    chunk_id: str
    doc_key: str
    index: int
    text: str  # "heading path\nbody": what is embedded, matched by BM25 and shown


@dataclass
class Document:
    doc_key: str
    title: str
    domain: str
    keywords: list[str]  # front-matter keywords (or tags); headings + error codes when there are none
    body: str
    entities: list[dict] = field(default_factory=list)
    relations: list[dict] = field(default_factory=list)
    source_format: str = "md"  # md, mdx, txt, html, pdf, docx, pptx, xlsx
    warnings: list[str] = field(default_factory=list)  # what was wrong with the file, one line each

    @property
    def content_hash(self) -> str:
        meta = yaml.dump(
            [self.title, self.domain, self.keywords, self.entities, self.relations],
            Dumper=_YAML_DUMPER,
            allow_unicode=True,
        )
        return hashlib.sha256((PARSER_VERSION + meta + self.body).encode("utf-8")).hexdigest()

    @property
    def error_codes(self) -> list[str]:
        return sorted(set(ERROR_CODE.findall(self.body)))

    @cached_property
    def _chunk_texts(self) -> list[str]:
        return chunk_markdown(self.title, self.body) or [self.title]

    def chunks(self) -> list[Chunk]:
        return [
            Chunk(chunk_id=f"{self.doc_key}#{i}", doc_key=self.doc_key, index=i, text=text)
            for i, text in enumerate(self._chunk_texts)
        ]


def a_kind(value) -> str:
    """What a YAML value is, in YAML's words for a person ("not a int" read as our slip, and named Python)."""
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, list | tuple):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    if value is None:
        return "an empty value"
    if isinstance(value, datetime.date):
        return "a date"
    return "text" if isinstance(value, str) else f"a {type(value).__name__}"


def _in_letter(ch: str) -> bool:
    """A combining mark, or a zero-width (non-)joiner: part of the letters around it."""
    return ch in "\u200c\u200d" or unicodedata.category(ch).startswith("M")


def _symbol(ch: str) -> str:
    """A letter for an emoji or another pictographic symbol (Unicode's So: `🚀`, `✅`, `©`; and the skin tone
    modifiers), so that the name rule reads it as part of a word; any other character as it is."""
    return "x" if unicodedata.category(ch) == "So" or "\U0001f3fb" <= ch <= "\U0001f3ff" else ch


MAX_DOC_KEY_CHARS = 401


def check_doc_key(doc_key: str) -> str:
    # a combining mark belongs to the letter before it, and Persian writes words with a zero-width non-joiner:
    # Devanagari's vowel signs (`हिंदी.md`), Hebrew points, an accent kept apart (NFD) and `می‌خواهم.md` were
    # refused as if they were punctuation; so were emoji (`🚀 launch.md`, `✅ done.md`), which are symbols a name
    # may hold (an emoji's variation selector and joiners are marks and joiners, read with it)
    if len(doc_key) > MAX_DOC_KEY_CHARS:  # a name of allowed characters, 300 folders deep, was told its characters
        raise InputError(
            f"{doc_key[:60]}...: the path is {len(doc_key):,} characters long; at most {MAX_DOC_KEY_CHARS} are read"
        )
    bare = "".join(_symbol(ch) for ch in doc_key if not _in_letter(ch))
    if _in_letter(doc_key[:1] or " ") or not DOC_KEY.fullmatch(bare):
        raise InputError(f"{doc_key}: file names may hold letters, digits, emoji, '_', '-', '.', '/' and spaces only")
    return doc_key


def folder_domain(doc_key: str) -> str:
    """The first folder of the doc key as a domain name (`User Guides/x.md` -> `user-guides`)."""
    if "/" not in doc_key:
        return "general"
    slug = re.sub(r"[^a-z0-9_\-]+", "-", doc_key.split("/")[0].lower()).strip("-_")[:64]
    return slug if DOMAIN.match(slug) else "general"


def _load_yaml(text: str):
    # no aliases, bounded size and depth: a front matter cannot blow up or hang an ingest
    return bounded_yaml.load(text, bounded_yaml.FRONT_MATTER)


def _load_toml(text: str):
    if len(text) > bounded_yaml.FRONT_MATTER.max_chars:
        raise bounded_yaml.YamlBoundError(
            f"it is {len(text):,} characters; at most {bounded_yaml.FRONT_MATTER.max_chars:,} are read"
        )
    try:
        return tomllib.loads(text)
    except RecursionError as exc:  # tomllib nests by recursion: thousands of nested arrays
        raise bounded_yaml.YamlBoundError("it nests too deeply") from exc


def _parse_problem(exc: Exception) -> str:
    """What the parser found wrong, and where, in words ("exceeded maximum nesting depth at line 1"), not the
    parser's class name."""
    problem = getattr(exc, "problem", None)
    if problem is None:  # tomllib's and ValueError's message is the problem, with its line and column
        return " ".join(str(exc).split())[:160] or exc.__class__.__name__
    mark = getattr(exc, "problem_mark", None)
    # the front matter starts on the file's second line, after its `---`
    return f"{problem} at line {mark.line + 2}" if mark is not None else str(problem)


def split_front_matter(text: str) -> tuple[dict, str, list[str]]:
    """(metadata, body, warnings): YAML (`---`, Jekyll, Docusaurus, Hugo) or TOML (`+++`, Hugo)."""
    # a byte order mark left after the one decoding took (two files joined, an editor adding its own): the front
    # matter was not seen, and the page's title became "\ufeff---title: ..."
    text = text.lstrip("\ufeff")
    for pattern, load, kind in ((_YAML_FRONT, _load_yaml, "YAML"), (_TOML_FRONT, _load_toml, "TOML")):
        match = pattern.match(text)
        if not match:
            continue
        try:
            meta = load(match.group(1)) or {}
        except bounded_yaml.YamlBoundError as exc:
            return {}, text[match.end() :], [f"front matter ignored: {exc}"]
        except (yaml.YAMLError, tomllib.TOMLDecodeError, ValueError) as exc:
            return {}, text[match.end() :], [f"front matter is not valid {kind} ({_parse_problem(exc)}); ignored"]
        if not isinstance(meta, dict):
            return {}, text[match.end() :], [f"front matter is {a_kind(meta)}, not a mapping; ignored"]
        # TOML refuses a key given twice; YAML's loader keeps the last one, silently
        twice = bounded_yaml.duplicate_keys(match.group(1)) if kind == "YAML" else []
        return (
            meta,
            text[match.end() :],
            [f"front matter key {k!r} is given twice; the last one is kept" for k in twice],
        )
    return {}, text, []


def _text_field(meta: dict, key: str, warnings: list[str]) -> str | None:
    value = meta.get(key)
    if value is None or value == "":
        return None
    if isinstance(value, float) and not math.isfinite(value):
        # YAML reads `.nan` and `.inf` as numbers: as text they became the title "nan", with no word of why
        warnings.append(f"front matter '{key}' is YAML's {value!r}, a number, not text (quote it); ignored")
        return None
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return sanitize_line(str(value)) or None
    warnings.append(f"front matter '{key}' should be text, not {a_kind(value)}; ignored")
    return None


def _list_field(meta: dict, key: str, warnings: list[str]) -> list[str]:
    """A list of words: a list, or a comma-separated string. A bare number (`keywords: 5`) is a typo, and as a
    keyword it would match every query holding that number, so it is refused with the rest."""
    value = meta.get(key)
    if value is None:
        return []
    if isinstance(value, str):
        items = value.split(",")
    elif isinstance(value, list):
        items = [str(v) for v in value if isinstance(v, (str, int, float)) and not isinstance(v, bool)]
        if len(items) < len([v for v in value if v is not None]):
            warnings.append(f"front matter '{key}' holds items that are not text; they were ignored")
    else:
        warnings.append(f"front matter '{key}' should be a list of words, not {a_kind(value)}; ignored")
        return []
    return [_bounded(clean, key, warnings) for clean in (sanitize_line(v) for v in items) if clean]


def _records(meta: dict, key: str, warnings: list[str], name_only: bool) -> list[dict]:
    """Entities (a name or a mapping each) and relations (mappings only), from front matter."""
    value = meta.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        warnings.append(f"front matter '{key}' should be a list, not {a_kind(value)}; ignored")
        return []
    out: list[dict] = []
    for item in value:
        if isinstance(item, dict):
            record = _record(_sanitized(item), key, warnings)
            if record is not None:
                out.append(record)
        elif name_only and isinstance(item, (str, int, float)) and not isinstance(item, bool):
            out.append({"name": _bounded(sanitize_line(str(item)), key, warnings)})
        elif item is not None:
            warnings.append(f"front matter '{key}' holds {a_kind(item)} item; ignored")
    return out


_TEXT_FIELDS = {"entities": ("name", "type"), "relations": ("source", "target", "type")}


def _record(item: dict, key: str, warnings: list[str]) -> dict | None:
    """An entity or relation whose names are text and whose aliases a list of text: `aliases: 5` stopped the whole
    ingest with a TypeError, `type: [a, b]` too (unhashable), and `aliases: k8` became the aliases `k` and `8`."""
    for name in _TEXT_FIELDS[key]:
        value = item.get(name)
        if value is not None and not (isinstance(value, (str, int, float)) and not isinstance(value, bool)):
            warnings.append(f"front matter '{key}': '{name}' should be text, not {a_kind(value)}; ignored")
            return None
        if value is not None:
            item[name] = _bounded(str(value), key, warnings)
    aliases = item.get("aliases")
    if isinstance(aliases, str):
        item["aliases"] = [aliases]
    elif aliases is not None and not (
        isinstance(aliases, list) and all(isinstance(a, (str, int, float)) and not isinstance(a, bool) for a in aliases)
    ):
        warnings.append(f"front matter '{key}': 'aliases' should be a list of names; ignored")
        item.pop("aliases")
    if isinstance(item.get("aliases"), list):
        item["aliases"] = [_bounded(str(a), key, warnings) for a in item["aliases"]]
    return item


MAX_LINE_CHARS = 300  # a title, keyword or name: a 250 k-character title went in front of every embedded chunk


def _bounded(text: str, key: str, warnings: list[str]) -> str:
    """`text` cut to MAX_LINE_CHARS (an entity's or relation's names to MAX_ENTITY_CHARS, what a graph command may
    name: a 300-character entity was stored, then refused by every command that asked for it); the first cut of a
    front-matter field says so (the page's key before it): a keyword of 400 characters was cut without a word, and
    matched no query that held its end."""
    limit = MAX_ENTITY_CHARS if key in _TEXT_FIELDS else MAX_LINE_CHARS
    if len(text) <= limit:
        return text
    said = f"front matter '{key}' holds an item longer than {limit} characters"
    if not any(w.startswith(said) for w in warnings):
        warnings.append(f"{said} ({len(text):,}); cut to {limit}")
    return text[:limit]


def _sanitized(value):
    """YAML escapes (`"a\\0b"`) can make control characters after parsing: clean every string inside."""
    if isinstance(value, str):
        return sanitize_line(value)
    if isinstance(value, dict):
        return {_sanitized(k): _sanitized(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_sanitized(v) for v in value]
    return value


def clean_text(text: str) -> str:
    """A file's text as a document keeps it: sanitised (`sanitize_text`), its pasted images and encoded runs cut."""
    return cut_encoded(sanitize_text(text))


def parse_text(doc_key: str, text: str, source_format: str = "md", meta_title: str | None = None) -> Document:
    """A Document from the Markdown (or plain text) of a file; `meta_title` is the file's own metadata title."""
    return parse_clean_text(doc_key, clean_text(text), source_format, meta_title)


def parse_clean_text(doc_key: str, text: str, source_format: str = "md", meta_title: str | None = None) -> Document:
    """`parse_text` of a text `clean_text` already made: an ingest cleans a file's text once, before it measures it
    against the per-document limit."""
    check_doc_key(doc_key)
    warnings: list[str] = []
    meta: dict = {}
    if source_format in ("md", "mdx"):
        meta, text, warnings = split_front_matter(text)
    if source_format != "txt":  # converters leave HTML comments too (`<!-- Slide number: 1 -->`)
        text = clean_doc_site(text, mdx=source_format == "mdx")
    description = _text_field(meta, "description", warnings)
    body = text.strip()
    if description and description not in body:  # a page's summary is content a reader sees: under its H1
        top = re.match(r"#[ \t]+[^\n]*\n+", body)
        at = top.end() if top else 0
        body = f"{body[:at]}{description}\n\n{body[at:]}".strip()
    headings = markdown_headings(body) if source_format != "txt" else []
    if len(headings) > MAX_SECTIONS:
        warnings.append(f"{len(headings):,} headings (more than {MAX_SECTIONS:,}): chunked by size, not by heading")
    stem = doc_key.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    first_heading = headings[0] if headings and source_format != "xlsx" else None  # a sheet name is no title
    file_title = sanitize_line(meta_title) if meta_title else None
    # An author-set PDF/Office title beats the first heading; an HTML <title> often carries the site name.
    by_file = [file_title, first_heading] if source_format in OFFICE_AND_PDF else [first_heading, file_title]
    title = (
        _text_field(meta, "title", warnings)
        or _text_field(meta, "sidebar_label", warnings)
        or _text_field(meta, "linkTitle", warnings)
        or next((t for t in by_file if t), None)
        or stem
    )
    if len(title) > MAX_LINE_CHARS:
        warnings.append(f"title of {len(title):,} characters cut to {MAX_LINE_CHARS}")
        title = title[:MAX_LINE_CHARS].rstrip()
    domain = folder_domain(doc_key)
    declared = _text_field(meta, "domain", warnings)
    if declared:
        if DOMAIN.match(declared.lower()):
            domain = declared.lower()
        else:
            warnings.append(f"domain {declared!r} must be lowercase letters, digits, '_' or '-'; using {domain!r}")
    keywords = _list_field(meta, "keywords", warnings) or _list_field(meta, "tags", warnings)
    doc = Document(
        doc_key=doc_key,
        title=title,
        domain=domain,
        keywords=keywords,
        body=body,
        entities=_records(meta, "entities", warnings, name_only=True),
        relations=_records(meta, "relations", warnings, name_only=False),
        source_format=source_format,
        warnings=warnings,
    )
    if not doc.keywords:
        doc.keywords = list(dict.fromkeys(headings[1:] + doc.error_codes))
    return doc
