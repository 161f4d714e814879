"""Rule-based entity extraction: a dictionary of known names plus patterns.

ASCII names are matched on ASCII boundaries, not `\\b`: in "ComfyUI端口 8188"
the Chinese character counts as a word character, so `\\b` would see no
boundary after "ComfyUI" and miss it.
"""

from __future__ import annotations

import json
import os
import re
import threading
import unicodedata
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from executor.core.errors import BackendError
from executor.core.fs import private_dir, private_file
from executor.retrieval.alignment import EntityAligner
from executor.retrieval.documents import ERROR_CODE
from executor.retrieval.vocabulary import STOPWORDS as FUNCTION_WORDS
from executor.stores.knowledge_graph import entity_key

if TYPE_CHECKING:
    from executor.core.settings import Settings
    from executor.stores.catalog import Catalog
    from executor.stores.embedders import Embedder
    from executor.stores.graph_store import GraphStore

_A = r"(?<![A-Za-z0-9_])"
_Z = r"(?![A-Za-z0-9_])"
URL = re.compile(r"https?://[^\s<>()\[\]\"'`，。；、）]+")
PATH = re.compile(r"(?<![\w:/.])(?:/[A-Za-z0-9._\-]+){2,}/?")
PORT = re.compile(
    r"(?:\bports?\b|端口|监听)\s*(?:号|是|为|[:：=])?\s*(\d{2,5})\b|"
    + _A
    + r"(?:localhost|127\.0\.0\.1|0\.0\.0\.0):(\d{2,5})\b",
    re.I,
)
# CamelCase product names with an inner capital and at least one lowercase letter:
# ComfyUI, HikariCP, PostgreSQL, FastAPI. Plain words, ACRONYMS, plurals of acronyms (URLs) and
# exception class names are left out; the dictionary knows the rest.
SOFTWARE = re.compile(
    _A
    + r"(?=[A-Za-z0-9]*[a-z])(?![A-Za-z0-9]*(?:Exception|Error)"
    + _Z
    + r")(?![A-Z]+s"
    + _Z
    + r")[A-Z][a-z0-9]*[A-Z][A-Za-z0-9]*"
    + _Z
)


@dataclass(frozen=True)
class Mention:
    name: str
    type: str | None
    count: int


def common_word(key: str) -> bool:
    """Whether a case-folded name or alias is a function word, which names nothing in a text."""
    return key in FUNCTION_WORDS


def entity_named(graph: GraphStore, kb: str, name: str) -> str:
    """The entity `name` means in the KB's graph: as written, by one of its aliases, or written in other widths
    (`ＰｇＢｏｕｎｃｅｒ`), as a lookup aligns a question's names; as written when none (the store then says so).
    `graph neighbors k8s` of an entity whose alias is k8s was "no entity 'k8s'", and so was MCP `navigate_graph`
    (hostile24c finding 8)."""
    names = graph.entity_names(kb)
    for key in (entity_key(name), entity_key(unicodedata.normalize("NFKC", name))):
        if key in names and not common_word(key):
            return names[key][0]
    return name


def _is_ascii(text: str) -> bool:
    return all(ord(c) < 128 for c in text)


def _trie(terms: list[str], end: str) -> str:
    """One pattern for many terms, as a trie: at a position it tries the longest term first, as an
    alternation sorted longest-first does (two terms that both match there are a prefix of each other, so
    they share a path and the deeper one is tried first), but steps through the terms' common prefixes
    once instead of trying every term in turn (that made extraction quadratic in the KB's size).
    `end` follows every term (the ASCII boundary)."""
    root: dict = {}
    for term in terms:
        node = root
        for ch in term:
            node = node.setdefault(ch, {})
        node[""] = {}

    def pattern(node: dict) -> str:
        branches = [re.escape(ch) + pattern(child) for ch, child in node.items() if ch != ""]
        if "" in node:
            branches.append(end)  # a term ends here: tried after every longer one
        return branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"

    return pattern(root)


def _dictionary_pattern(terms: list[str]) -> re.Pattern | None:
    """Any of `terms` (case-folded names), longest first; ASCII ones on ASCII boundaries."""
    ascii_terms = [t for t in terms if _is_ascii(t)]
    other = [t for t in terms if not _is_ascii(t)]
    # a non-ASCII term and an ASCII one that both match at one place: the ASCII one is the shorter
    parts = ([_trie(other, "")] if other else []) + ([_A + _trie(ascii_terms, _Z)] if ascii_terms else [])
    if not parts:
        return None
    try:
        return re.compile("|".join(parts), re.I)
    except RecursionError:  # a pathological nesting of names: the plain alternation, slower, same matches
        alternation = sorted(terms, key=len, reverse=True)
        return re.compile(
            "|".join((_A + re.escape(t) + _Z) if _is_ascii(t) else re.escape(t) for t in alternation), re.I
        )


class EntityExtractor:
    def __init__(self, dictionary: dict[str, tuple[str, str | None]], allowed_types: list[str] | None = None):
        """`dictionary`: key (case-folded name or alias) -> (canonical name, type)."""
        self.dictionary = dictionary
        self.allowed = set(allowed_types) if allowed_types else None
        # a name or alias that is a function word ("the", "it": front matter anyone writes) is never matched: it
        # made every page that writes "the" mention its entity, and every question with "the" aligned to it, so
        # "who won the world cup" was answered HIGHLY_RELEVANT with that entity's page (hostile24c finding 2)
        self._known = _dictionary_pattern([k for k in dictionary if k and not common_word(k)])

    def _allowed(self, type_: str | None) -> bool:
        return self.allowed is None or type_ is None or type_ in self.allowed

    def extract(self, text: str) -> list[Mention]:
        counts: Counter[str] = Counter()
        found: dict[str, tuple[str, str | None]] = {}

        def add(name: str, type_: str | None) -> None:
            key = entity_key(name)
            if key in self.dictionary:
                name, type_ = self.dictionary[key]
                key = entity_key(name)
            if not key or not self._allowed(type_):
                return
            found.setdefault(key, (name, type_))
            counts[key] += 1

        if self._known is not None:
            for m in self._known.finditer(text):
                add(m.group(0), None)
        urls = URL.findall(text)
        for url in urls:
            add(url.rstrip(".,;:"), "URL")
        without_urls = URL.sub(" ", text)
        for path in PATH.findall(without_urls):
            add(path, "Path")
        for m in PORT.finditer(without_urls):
            add(m.group(1) or m.group(2), "Port")
        for code in ERROR_CODE.findall(text):
            add(code, "ErrorCode")
        for m in SOFTWARE.finditer(without_urls):
            if entity_key(m.group(0)) not in found:
                add(m.group(0), "Software")
        return [Mention(found[k][0], found[k][1], counts[k]) for k in found]


def absent_graph(kb: str, built: int) -> str:
    """A graph backend that holds nothing of a KB whose last ingest built `built` entities: the backend was switched
    (EXECUTOR_GRAPH_BACKEND, NEO4J_URI, FALKORDB_URL, EXECUTOR_GRAPH_NAME) or its graph emptied since. Said, where
    an empty answer would read as "no such entity" or "nothing related" (hostile18b finding 4)."""
    return (
        f"the graph of knowledge base {kb!r} is not in this graph backend: its last ingest built {built} entities, "
        "this backend holds none (it was built with another EXECUTOR_GRAPH_BACKEND, NEO4J_URI, FALKORDB_URL or "
        "EXECUTOR_GRAPH_NAME, or emptied since); ingest it again with `--rebuild`"
    )


def built_entities(row) -> int:
    """How many entities the KB's last ingest put in its graph (0: never built, or built empty)."""
    return int(((row.graph_counts if row is not None else None) or {}).get("entities") or 0)


class KnownEntities:
    """Which of a knowledge base's graph entities a text names, with the matchers cached per KB version.

    Building the dictionary regex for a large graph costs more than the lookup it serves, and the
    graph only changes at ingest, which bumps the KB's revision. Beyond the exact names, the aligner
    finds prefixes, typos, other widths and close embeddings ("comfy 部署" -> ComfyUI).
    """

    def __init__(
        self,
        settings: Settings,
        catalog: Catalog,
        embedder: Embedder,
        graph: Callable[[], GraphStore],
        names_cache: Path | None = None,
    ):
        """`names_cache`: a folder where each KB's entity names are kept per version, for a graph only this
        EXECUTOR_HOME writes (the embedded FalkorDB, the SQL store): a process then reads them without opening
        the graph (~0.1 s of a cold lookup: redis, the server's ping, the query). None: always from the graph."""
        self.settings, self.catalog, self.embedder, self._open_graph = settings, catalog, embedder, graph
        self.names_cache = names_cache
        self._cache: dict[str, tuple[tuple, EntityExtractor, dict, EntityAligner]] = {}

    @property
    def graph(self) -> GraphStore:
        return self._open_graph()  # opened on first use: a KB without a graph never starts the graph server

    def in_text(self, kb: str, text: str) -> list[str]:
        row = self.catalog.require(kb)
        version = (row.revision, row.created_at)
        cached = self._cache.get(kb)
        if cached is None or cached[0] != version:
            names = self._entity_names(kb, version)
            if not names and (built := built_entities(row)):
                raise BackendError(absent_graph(kb, built))
            s = self.settings
            aligner = EntityAligner(
                names, self.embedder.embed_documents, s.entity_fuzzy_cutoff, s.entity_embedding_threshold
            )
            cached = (version, EntityExtractor(names), names, aligner)
            self._cache[kb] = cached
        _, extractor, names, aligner = cached
        # pattern hits that are not graph entities (a CamelCase word, a port) cannot be traversed from
        exact = [m.name for m in extractor.extract(text) if entity_key(m.name) in names]
        return list(dict.fromkeys(exact + [a.name for a in aligner.align(text)]))

    def _entity_names(self, kb: str, version: tuple) -> dict[str, tuple[str, str | None]]:
        """The graph's names for the KB, from the names cache when it holds this version (in the graph's order,
        which breaks the aligner's ties)."""
        if self.names_cache is None:
            return self.graph.entity_names(kb)
        path = self.names_cache / f"entities-{kb}.json"
        stamp = [version[0], str(version[1]), self.settings.graph_backend, self.settings.graph_name]
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if data["version"] == stamp:
                return {key: (name, type_) for key, name, type_ in data["names"]}
        except (OSError, ValueError, KeyError, TypeError):
            pass  # missing, stale or unreadable: asked of the graph
        names = self.graph.entity_names(kb)
        try:  # only saves work: unwritable (a full disk), the next process asks the graph again
            private_dir(path.parent)
            tmp = private_file(path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp"))
            tmp.write_text(
                json.dumps({"version": stamp, "names": [[k, n, t] for k, (n, t) in names.items()]}, ensure_ascii=False),
                encoding="utf-8",
            )
            tmp.replace(path)
        except OSError:
            pass
        return names

    def seeds(self, kb: str, text: str, doc_keys: list[str], limit: int) -> list[str]:
        """Where a traversal starts: the graph entities the text names, then those the documents mention most."""
        mentioned = [n.name for n in self.graph.entities_of_documents(kb, doc_keys, limit=limit)]
        return list(dict.fromkeys(self.in_text(kb, text) + mentioned))[:limit]
