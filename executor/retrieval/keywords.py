"""L0: exact matches of document keywords and titles inside the query.

Matching is on token boundaries: an ASCII term must match whole words
("TLS" does not match "TLSv1"), while Chinese has no spaces, so every
character is a boundary ("连接池" matches "数据库连接池怎么配置").
"""

from __future__ import annotations

import re
import unicodedata
from collections import defaultdict
from collections.abc import Iterable

TOKEN = re.compile(r"[a-z0-9_]+(?:[.\-][a-z0-9_]+)*|[\u3400-\u9fff\uf900-\ufaff]")
_SPACE_NEAR_CJK = re.compile(r"\s+(?=[\u3400-\u9fff])|(?<=[\u3400-\u9fff])\s+")
MAX_TERM_CHARS = 48
MAX_TERM_TOKENS = 12
# a letter under four or more of the generic combining marks (accents, not a script's own vowel signs) is Zalgo text:
# no language stacks more than two of them (Vietnamese), and a mark left on an ASCII letter cuts the word in two for
# every layer (`ERR_TIMEOUT` with accents on each letter matched no keyword); taken off before NFKC, which would
# compose the first with its letter
STACKED_MARKS = re.compile(r"[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]{4,}")


def unstacked(text: str) -> str:
    """`text` without the runs of combining marks no writing stacks (`STACKED_MARKS`)."""
    return STACKED_MARKS.sub("", text)


def normalize(text: str) -> str:
    text = unicodedata.normalize("NFKC", unstacked(text)).casefold()
    text = _SPACE_NEAR_CJK.sub("", text)
    return " ".join(text.split())


class KeywordIndex:
    def __init__(self, entries: Iterable[tuple[str, Iterable[str]]]):
        self._terms: dict[str, set[str]] = defaultdict(set)
        for doc_key, terms in entries:
            for term in terms:
                norm = normalize(str(term))
                if len(norm) >= 2 and len(norm) <= MAX_TERM_CHARS:
                    self._terms[norm].add(doc_key)

    def __len__(self) -> int:
        return len(self._terms)

    def documents(self, term: str) -> frozenset[str]:
        """The documents that name `term` (normalized) as a keyword or title."""
        return frozenset(self._terms.get(term, ()))

    def match(self, query: str) -> dict[str, list[str]]:
        """doc_key -> the terms of that document found in the query."""
        text = normalize(query)
        spans = [(m.start(), m.end()) for m in TOKEN.finditer(text)]
        found: dict[str, list[str]] = defaultdict(list)
        for i, (start, _) in enumerate(spans):
            for _, end in spans[i : i + MAX_TERM_TOKENS]:
                if end - start > MAX_TERM_CHARS:
                    break
                term = text[start:end]
                for doc_key in self._terms.get(term, ()):
                    if term not in found[doc_key]:
                        found[doc_key].append(term)
        return dict(found)
