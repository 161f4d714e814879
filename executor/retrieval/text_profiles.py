"""A candidate document's terms and language without segmenting its text again, so a cold lookup of an English
query need not load jieba's dictionary (~0.4 s) to grade the KB's Chinese pages.

Grading describes a candidate by `terms` and `document_language` of its title and retrieved chunks joined by
newlines (`retrieval.ranking`). Both can be assembled from the pieces: `normalize` works character by
character except for whitespace, which it collapses to one space or, next to a CJK character, removes. So an
ASCII term never spans a newline, and neither does a CJK run, unless the newline joins two CJK characters:
then the last CJK run of one piece and the first of the next are one run, which jieba may cut differently.
A piece's profile therefore keeps its terms apart from those two edge runs, and the KB's profile keeps the
cut of every edge run, alone and as its document's pieces can be joined (title then chunk, chunk then chunk).
A joined run that is not there (a piece that is one CJK run between two others) is cut the usual way: the
result is always `terms` of the joined text. Language counts are sums (newlines are neither visible nor CJK).

Profiles are built with the KB's vocabulary, once per KB version, and kept beside it under the cache dir in
SQLite, so a lookup reads only the rows of the pieces it got back.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from executor.core.fs import private_dir, private_file
from executor.core.relevance import CJK, language_by_counts
from executor.retrieval.keywords import normalize
from executor.retrieval.vocabulary import ASCII_TERM, CJK_RUN, STOPWORDS, cjk_words

FORMAT = 2  # bump when what a profile holds changes: older files are rebuilt


def piece_key(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=12).hexdigest()


@dataclass(frozen=True)
class Piece:
    """One piece's share of `terms`: the terms of everything but its edge CJK runs; the runs themselves
    (`lead` at its start, `trail` at its end; one run filling the piece is both); whether nothing of it is
    left after `normalize` (whitespace only: it joins nothing and separates nothing); its language counts."""

    inner: frozenset[str]
    lead: str
    trail: str
    whole: bool
    empty: bool
    visible: int
    cjk: int

    @classmethod
    def of(cls, text: str) -> Piece:
        norm = normalize(text)
        inner = {w for w in ASCII_TERM.findall(norm) if w not in STOPWORDS}
        runs = list(CJK_RUN.finditer(norm))
        lead = runs[0].group() if runs and runs[0].start() == 0 else ""
        trail = runs[-1].group() if runs and runs[-1].end() == len(norm) else ""
        whole = bool(lead) and len(lead) == len(norm)
        for i, run in enumerate(runs):
            if not ((i == 0 and lead) or (i == len(runs) - 1 and trail)):
                inner.update(cjk_words(run.group()))
        visible = sum(1 for ch in text if not ch.isspace())
        return cls(frozenset(inner), lead, trail, whole, not norm, visible, len(CJK.findall(text)))

    def to_row(self) -> tuple:
        return (
            json.dumps(sorted(self.inner), ensure_ascii=False),
            self.lead,
            self.trail,
            int(self.whole),
            int(self.empty),
            self.visible,
            self.cjk,
        )

    @classmethod
    def from_row(cls, row: tuple) -> Piece:
        inner, lead, trail, whole, empty, visible, cjk = row
        return cls(frozenset(json.loads(inner)), lead, trail, bool(whole), bool(empty), visible, cjk)


def joins(left: str, right: str) -> bool:
    """Whether `normalize` joins the run ending a piece and the run starting the next one: it removes the
    whitespace between them when either character is in its CJK range (narrower than CJK_RUN's)."""
    return bool(left) and bool(right) and bool(normalize(left[-1] + "\n" + right[0]) == left[-1] + right[0])


def edge_runs(pieces: list[Piece]) -> list[str]:
    """The CJK runs of the joined text that touch a piece's edge, as `normalize` would join them."""
    runs: list[str] = []
    open_run = ""  # the run the previous piece ended with, still open
    for p in pieces:
        if p.empty:
            continue
        if p.lead and joins(open_run, p.lead):
            head = open_run + p.lead
        else:
            if open_run:
                runs.append(open_run)
            head = p.lead
        if p.whole:
            open_run = head
            continue
        if head:
            runs.append(head)
        open_run = p.trail
    if open_run:
        runs.append(open_run)
    return runs


def assemble(pieces: list[Piece], cuts: dict[str, frozenset[str]]) -> tuple[frozenset[str], str]:
    """`terms` and `document_language` of the pieces' texts joined by newlines; a run missing from `cuts`
    is cut now (which loads jieba)."""
    out = set().union(*(p.inner for p in pieces))
    for run in edge_runs(pieces):
        cut = cuts.get(run)
        out.update(cut if cut is not None else cjk_words(run))
    return frozenset(out), language_by_counts(sum(p.visible for p in pieces), sum(p.cjk for p in pieces))


class TextProfiles:
    """A KB's piece profiles and edge-run cuts for one KB version (`stores.catalog.version`), in `path` (SQLite)."""

    def __init__(self, path: Path):
        self.path = path
        self._db: sqlite3.Connection | None = None
        self._lock = threading.Lock()
        self._pieces: dict[str, Piece | None] = {}
        self._cuts: dict[str, frozenset[str] | None] = {}

    # -- building ---------------------------------------------------------------
    @staticmethod
    def build(path: Path, version: str, rows: Iterable[tuple[str, str, str, str]]) -> None:
        """From every chunk's (chunk_id, doc_key, title, text) (`VectorStore.texts`), as the vocabulary is built."""
        pieces: dict[str, Piece] = {}
        by_doc: dict[str, tuple[str, list[str]]] = {}
        for _, doc_key, title, text in rows:
            for piece in (title, text):
                key = piece_key(piece)
                if key not in pieces:
                    pieces[key] = Piece.of(piece)
            by_doc.setdefault(doc_key, (piece_key(title), []))[1].append(piece_key(text))
        runs: set[str] = {r for p in pieces.values() for r in (p.lead, p.trail) if r}
        for title, chunks in by_doc.values():
            # a candidate is its title, then any of its chunks in any order: every pair that can meet
            ends = [pieces[k].trail for k in dict.fromkeys([title, *chunks]) if pieces[k].trail]
            starts = [pieces[k].lead for k in dict.fromkeys(chunks) if pieces[k].lead]
            runs.update(a + b for a in dict.fromkeys(ends) for b in dict.fromkeys(starts) if joins(a, b))
        private_dir(path.parent)
        # two processes (a Milvus server), or two threads of one, may build at once: each writes its own file
        tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.unlink(missing_ok=True)  # left by a build that died
        db = sqlite3.connect(private_file(tmp))  # 0600 like every data file; sqlite fills the empty file
        try:
            db.executescript(
                "CREATE TABLE meta (format INTEGER, version TEXT);"
                "CREATE TABLE piece (key TEXT PRIMARY KEY, inner_terms TEXT, lead TEXT, trail TEXT, whole INTEGER,"
                " empty INTEGER, visible INTEGER, cjk INTEGER);"
                "CREATE TABLE cut (run TEXT PRIMARY KEY, terms TEXT);"
            )
            db.execute("INSERT INTO meta VALUES (?, ?)", (FORMAT, version))
            db.executemany(
                "INSERT INTO piece VALUES (?, ?, ?, ?, ?, ?, ?, ?)", ((k, *p.to_row()) for k, p in pieces.items())
            )
            db.executemany(
                "INSERT INTO cut VALUES (?, ?)",
                ((r, json.dumps(sorted(cjk_words(r)), ensure_ascii=False)) for r in sorted(runs)),
            )
            db.commit()
        finally:
            db.close()
        tmp.replace(path)

    @classmethod
    def load(cls, path: Path, version: str) -> TextProfiles | None:
        """The profiles if they were built for this KB version; None when stale, missing or unreadable."""
        try:
            if not path.is_file():
                return None
        except OSError:  # a cache folder this user may not enter (`Runtime.cache_dir` warned)
            return None
        profiles = cls(path)
        try:
            db = sqlite3.connect(path, check_same_thread=False)  # the grader may serve several threads
        except sqlite3.Error:
            return None
        try:
            row = db.execute("SELECT format, version FROM meta").fetchone()
        except sqlite3.Error:
            row = None
        if row != (FORMAT, version):
            db.close()
            return None
        profiles._db = db
        return profiles

    # -- reading ----------------------------------------------------------------
    def _piece(self, text: str) -> Piece:
        key = piece_key(text)
        if key not in self._pieces:
            row = self._query(
                "SELECT inner_terms, lead, trail, whole, empty, visible, cjk FROM piece WHERE key = ?", key
            )
            self._pieces[key] = Piece.from_row(row) if row is not None else None
        return self._pieces[key] or Piece.of(text)  # a text the KB did not hold at this version: profiled now

    def _cut(self, run: str) -> frozenset[str] | None:
        if run not in self._cuts:
            row = self._query("SELECT terms FROM cut WHERE run = ?", run)
            self._cuts[run] = frozenset(json.loads(row[0])) if row is not None else None
        return self._cuts[run]

    def _query(self, sql: str, arg: str) -> tuple | None:
        with self._lock:  # one connection, shared by the threads of a multi-KB query; closed under the same lock
            try:
                return self._db.execute(sql, (arg,)).fetchone() if self._db is not None else None
            except sqlite3.Error:  # unreadable now: that piece is profiled from its text
                return None

    def profile(self, texts: list[str]) -> tuple[frozenset[str], str]:
        """`(terms(joined), document_language(joined))` of `"\\n".join(texts)`."""
        pieces = [self._piece(t) for t in texts]
        cuts = {r: c for r in edge_runs(pieces) if (c := self._cut(r)) is not None}
        return assemble(pieces, cuts)

    def close(self) -> None:
        """Later reads profile from the text: a thread still grading with these profiles gets the same terms."""
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None
