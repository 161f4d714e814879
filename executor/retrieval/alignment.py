"""Entity alignment: which graph entities a query means, beyond the names it spells out exactly (seed 001 §4.3).

Three steps after the exact dictionary match (executor/retrieval/extraction.py), each
only for the query terms the earlier steps left unmatched:

1. prefix: a term that begins a name or alias ("comfy" -> ComfyUI);
2. fuzzy: a term within a small edit distance of one (rapidfuzz ratio:
   "kubernets" -> Kubernetes);
3. embedding: a candidate phrase whose embedding is close to a name's
   ("postgres" -> PostgreSQL, "监控告警" -> Alertmanager).

Terms and names are compared after `normalize` (NFKC and case folding), so
full-width letters ("ＣｏｍｆｙＵＩ") and any case match. Terms are the query's
ASCII words and its Chinese words (jieba), and runs of two or three of them.
The fuzzy cutoff and the embedding threshold are calibrated by
`python -m evals.entity_linking` on labelled queries (evals/labels/entity_linking.yaml).

Lookups are graded with the aligned names too (`search_text`): "comfy 部署"
is searched and embedded as "comfy 部署 ComfyUI", so the keyword layer, BM25
and the vectors find the ComfyUI guide that the loose name alone does not
reach. A query that spells its entities out is searched as written.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from bisect import bisect_left
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from itertools import groupby

import numpy as np

from executor.core.errors import BackendError
from executor.retrieval.keywords import MAX_TERM_CHARS, normalize, unstacked
from executor.retrieval.vocabulary import RAW_ASCII_TERM, Vocabulary, terms
from executor.retrieval.vocabulary import STOPWORDS as FUNCTION_WORDS

ASCII_TERM = re.compile(r"[a-z0-9][a-z0-9_.+#\-]*[a-z0-9+#]|[a-z0-9]")
HAN = re.compile(r"[\u4e00-\u9fff]")
ASCII_OR_NOT = re.compile(r"[\x00-\x7f]+|[^\x00-\x7f]+")
MIN_PREFIX = 4  # ASCII letters; shorter prefixes ("doc", "log") name too many things
MIN_PREFIX_HAN = 2
PREFIX_SHARE = 0.4  # a prefix covers at least this share of the name: "kube" -> Kubernetes, not "roll" -> RollingUpdate
MIN_FUZZY = 5
# query_knowledge_graph aligns in one thread per knowledge base; the embedder is not known to be thread-safe
_EMBED_LOCK = threading.Lock()
# words that begin or resemble entity names but mean something else in a question
STOPWORDS = frozenset(
    "what when where which with does from that this have how the and for are our your about into after before "
    "there their them then than they will would should could using used use make made need needs want wants "
    "show tell give does doing done kind type types name names file files page pages docs document documents "
    "error errors issue issues problem problems config configure configured setting settings step steps "
    "deploy deployed deployment release releases version versions service services server servers running "
    "port ports path paths log logs login logging data database databases keep keeps work works set get "
    "怎么 什么 如何 为什么 哪些 哪个 是否 可以 需要 我们 你们 一下 时候 问题 配置 部署 怎么办 是 的 了 吗 呢 和 与 在 "
    "有 要 用 把 让 会 能 该 这个 那个 还是 以及 多少 一个 报错 错误 设置 步骤 版本 服务".split()
)


def _content_words(term: str) -> list[str]:
    return [w for w in term.split() if w not in STOPWORDS and (HAN.search(w) or len(w) > 2)]


@dataclass(frozen=True)
class Alignment:
    name: str  # the canonical entity name
    term: str  # the part of the query that matched
    how: str  # exact | prefix | fuzzy | embedding
    score: float  # 1.0 for exact and prefix; rapidfuzz ratio / 100; cosine similarity


def query_terms(text: str) -> list[str]:
    """Candidate terms: ASCII words, Chinese words (jieba), and runs of two or three adjacent ones, longest first.

    ASCII runs are split by a pattern, not by jieba, which would cut ERR_CERT_EXPIRED at its underscores.
    """
    words: list[str] = []
    for run in ASCII_OR_NOT.findall(normalize(text)):
        if run.isascii():
            words += ASCII_TERM.findall(run)
        else:
            import jieba  # only for text that needs it: an ASCII query does not import it

            jieba.setLogLevel(60)
            words += [w for w in (t.strip() for t in jieba.lcut(run)) if HAN.search(w)]
    runs = [" ".join(words[i : i + n]) for n in (3, 2) for i in range(len(words) - n + 1)]
    return list(dict.fromkeys(runs + words))


class EntityAligner:
    def __init__(
        self,
        names: dict[str, tuple[str, str | None]],
        embed: Callable[[list[str]], np.ndarray] | None = None,
        fuzzy_cutoff: float = 0.8,
        embedding_threshold: float = 0.9,
    ):
        """`names`: key (case-folded name or alias) -> (canonical name, type), as GraphStore.entity_names gives.
        `embed`: texts -> unit vectors (the KB's embedder); None turns the embedding step off."""
        self.surfaces: dict[str, str] = {}  # folded name or alias -> canonical name
        for key, (name, _type) in names.items():
            self.surfaces.setdefault(normalize(key), name)
            self.surfaces.setdefault(normalize(name), name)
        self.embed = embed
        self.fuzzy_cutoff = fuzzy_cutoff
        self.embedding_threshold = embedding_threshold
        self._canonical = sorted(set(self.surfaces.values()))
        self._vectors: np.ndarray | None = None
        # indexes built once per KB revision (the aligner is cached per revision), so a lookup does not scan every
        # name per query term: names in sorted order for prefixes, names by first character for fuzzy matching;
        # `_order` keeps the dictionary's own order as the tie-break it always was
        self._order = {s: i for i, s in enumerate(self.surfaces)}
        self._sorted = sorted(self.surfaces)
        self._by_first: dict[str, list[str]] = {}
        for surface in self.surfaces:
            self._by_first.setdefault(surface[:1], []).append(surface)

    def _embed(self, texts: list[str]) -> np.ndarray:
        embed = self.embed
        assert embed is not None  # only an aligner with an embedder compares by meaning
        with _EMBED_LOCK:
            return np.asarray(embed(texts), dtype=np.float32)

    def _name_vectors(self) -> np.ndarray:
        if self._vectors is None:
            self._vectors = self._embed(self._canonical)
        return self._vectors

    def candidates(self, text: str) -> list[Alignment]:
        """Every term's alignment with its score, cutoffs not applied (calibration sweeps them).

        First by name (exact, then prefix), longest terms first; a word inside a term aligned by name is
        taken, so "docker 镜像" is not embedded once "docker" matched. Then fuzzy and embedding for the
        terms none of whose words are taken.
        """
        from rapidfuzz import fuzz, process

        terms = [t for t in query_terms(text) if _content_words(t)]
        found: list[Alignment] = []
        taken: set[str] = set()
        for term in terms:
            words = set(term.split())
            if words & taken:
                continue
            if term in self.surfaces:  # an exact name the dictionary regex misses (full-width letters, say)
                found.append(Alignment(self.surfaces[term], term, "exact", 1.0))
                taken |= words
                continue
            han = bool(HAN.search(term))
            if len(term) >= (MIN_PREFIX_HAN if han else MIN_PREFIX):
                prefixed = sorted(
                    (s for s in self._starting_with(term) if len(term) >= PREFIX_SHARE * len(s)),
                    key=lambda s: (len(s), self._order[s]),
                )
                if prefixed:
                    found.append(Alignment(self.surfaces[prefixed[0]], term, "prefix", 1.0))
                    taken |= words
        rest = [t for t in terms if not set(t.split()) & taken]
        for term in rest:
            if not HAN.search(term) and len(term) >= MIN_FUZZY:
                # a typo rarely changes the first letter; without this, "bad gateway" would be "api gateway"
                same_start = self._by_first.get(term[0], [])
                best = process.extractOne(term, same_start, scorer=fuzz.ratio) if same_start else None
                if best is not None:
                    found.append(Alignment(self.surfaces[best[0]], term, "fuzzy", best[1] / 100))
        if self.embed is not None and rest and self._canonical:
            sims = self._embed(rest) @ self._name_vectors().T
            for term, row in zip(rest, sims):
                j = int(np.argmax(row))
                found.append(Alignment(self._canonical[j], term, "embedding", float(row[j])))
        return found

    def _starting_with(self, prefix: str):
        i = bisect_left(self._sorted, prefix)
        while i < len(self._sorted) and self._sorted[i].startswith(prefix):
            yield self._sorted[i]
            i += 1

    def align(self, text: str) -> list[Alignment]:
        """The entities `text` means, best first, one alignment per entity."""
        kept: dict[str, Alignment] = {}
        for a in self.candidates(text):
            if a.how == "fuzzy" and a.score < self.fuzzy_cutoff:
                continue
            if a.how == "embedding" and a.score < self.embedding_threshold:
                continue
            if a.name not in kept or a.score > kept[a.name].score:
                kept[a.name] = a
        return sorted(kept.values(), key=lambda a: -a.score)


def with_names(query: str, names: Iterable[str]) -> tuple[str, list[str]]:
    """(the query followed by the names it does not already spell out, those names). A query that names its
    entities exactly stays as it is, so only loose names, typos and other widths change what is searched."""
    folded = normalize(query)
    added = [n for n in dict.fromkeys(names) if normalize(n) not in folded]
    return (" ".join([query, *added]) if added else query), added


# a word that holds `_` or a digit is an identifier, written in capitals on its page too (ERR_TIMEOUT, HTTP2)
IDENTIFIER = re.compile(r"[_\d]")


def unshouted(query: str) -> str:
    """A query typed in capitals, as the same words in lower case, identifiers kept as typed. The sentence encoder
    is case-sensitive: `PGBOUNCER` or `REDIS EVICTION POLICY` embed far from the pages the lower-case words find
    (on the sample KB's English questions in capitals, "nothing found" went from 19% to 76%); the keyword layers
    fold case anyway. A query mostly in capitals is one typed so, though a word or two of it is not (`REDIS EVICTION
    POLICY please`: "nothing found" as typed): its words in capitals are lowered, the others kept. A query with as many
    words written in lower case as half its words in capitals is left as written (`TLS for PgBouncer`, `the HTTP and
    TLS settings`)."""
    words = query.split(" ")
    written = sum(any(c.islower() for c in w) for w in words)
    capitals = sum(sum(c.isupper() for c in w) >= 2 and not any(c.islower() for c in w) for w in words)
    if not (written == 0 and capitals or capitals >= 2 and written * 2 < capitals):
        return query
    # `İ` (a Turkish keyboard's capital i) lowers to `i` and a combining dot, a word no page writes
    return " ".join(
        w if IDENTIFIER.search(w) or any(c.islower() for c in w) else w.replace("İ", "I").lower() for w in words
    )


# a word said this many times in a row or more is said once: `的` × 600 after a question outweighed the question for
# the sentence encoder ("nothing found" on `ERR_TIMEOUT 是什么` so padded); twice may be meant ("very very slow")
REPEATED = 3


# a number tagged on after the question: a bare number after its closing mark ("PgBouncer 是什么？ 3", a chat's turn
# number), a `#3` at its end, or a bracket holding one ("(ticket #3)"). A number that is part of the question
# ("install Python 3") has no mark before it and stays.
NUMBER_TAG = re.compile(
    r"(?:(?<=[?？!！。])\s*#?\d{1,9}|\s+#\d{1,9}|\s*[(\[（【][^()\[\]（）【】]{0,40}#\d{1,9}[)\]）】])\s*$"
)


def untagged(query: str) -> str:
    """The query without the numbers tagged on after it (`NUMBER_TAG`): the sentence encoder reads them as part of
    its meaning, and "PgBouncer 是什么？ 3" fell under the page "PgBouncer 是什么？" finds (hostile20b finding 1). A
    query that is nothing else stays."""
    text = query
    while (cut := NUMBER_TAG.sub("", text)) != text and any(ch.isalpha() for ch in cut):
        text = cut
    return text


def without_noise(query: str, vocabulary: Vocabulary) -> str:
    """The query without what no page can match and the sentence encoder reads as its meaning: stacked combining
    marks (Zalgo, `keywords.unstacked`), numbers tagged on after the question (`untagged`), a word repeated
    `REPEATED` times or more in a row (said once), and a word longer than any keyword (`MAX_TERM_CHARS`) none of
    whose terms the KB writes (`ERR_TIMEOUT` followed by 200 letters found nothing; a request id or a URL naming a
    KB term stays). A query that is nothing else stays."""
    text = untagged(unstacked(query))
    typed = text.split()
    said = []
    for word, run in groupby(typed):
        n = len(list(run))
        said += [word] * (1 if n >= REPEATED else n)
    kept = [w for w in said if len(w) <= MAX_TERM_CHARS or any(t in vocabulary.df for t in terms(w))]
    return " ".join(kept) if kept and len(kept) < len(typed) else text


def spelled(query: str, vocabulary: Vocabulary) -> str:
    """The query with its ASCII words spelt as the KB writes them: a word the KB writes only in another case
    (`err_timeout`, `Err_Timeout` -> `ERR_TIMEOUT`; a word it also writes as typed stays), and two adjacent words
    whose join the KB writes as one (`Pg Bouncer` -> `PgBouncer`) where it does not write both of them, neither
    a function word. The sentence encoder is case-sensitive and reads a name cut in two as two other words: on the
    sample KB `err_timeout` had the nginx page first and `Pg Bouncer` found nothing; the keyword layers fold case
    anyway. Full-width or circled letters are read as the letters (NFKC) once a word is spelt anew. A slug the KB
    never writes is read as its words (`_unslugged`), and a long code typed with two letters swapped as the one code
    the KB writes so (`_unswapped`)."""
    text = unicodedata.normalize("NFKC", query)
    found = list(RAW_ASCII_TERM.finditer(text))
    out: list[str] = []
    last = i = 0
    while i < len(found):
        start, end, spelt = found[i].start(), found[i].end(), vocabulary.spelling(found[i].group())
        spelt = _as_code_name(spelt, vocabulary) or _unswapped(spelt, vocabulary) or _unslugged(spelt, vocabulary)
        words = _code_name_words(found, i, text, vocabulary)
        if words:
            joined = "".join(m.group() for m in found[i : i + words])
            end, spelt = found[i + words - 1].end(), vocabulary.spelling(joined)
            i += words - 1
        elif i + 1 < len(found) and _joins(
            found[i].group(), found[i + 1].group(), text[end : found[i + 1].start()], vocabulary
        ):
            end, spelt = found[i + 1].end(), vocabulary.spelling(found[i].group() + found[i + 1].group())
            i += 1
        out += [text[last:start], spelt]
        last, i = end, i + 1
    out.append(text[last:])
    spelt_text = "".join(out)
    return spelt_text if spelt_text != text else query


# a config key written as its words is at most this many (`leak detection threshold`: `leakDetectionThreshold`)
CODE_NAME_WORDS = 4


def _as_code_name(word: str, vocabulary: Vocabulary) -> str | None:
    """A name in snake or kebab case (`maximum_pool_size`, `leak-detection-threshold`, as Spring's application.yml
    writes HikariCP's keys) that the KB writes only in camel case (`maximumPoolSize`), as the KB writes it; None
    for any other word. Read whole it is a name the KB never uses: `unknown_name_cap` made it "nothing found",
    though the dense layer put the key's page first."""
    parts = re.split(r"[_\-]", word)
    if len(parts) < 2 or not all(p.isalpha() for p in parts) or vocabulary.known(word.lower()):
        return None
    joined = "".join(parts)
    return vocabulary.spelling(joined) if vocabulary.code_name(joined.lower()) else None


def _code_name_words(found: list[re.Match[str]], i: int, text: str, vocabulary: Vocabulary) -> int:
    """How many words from `found[i]` on (three to `CODE_NAME_WORDS`, spaces between) the KB writes joined as a
    name in code (`leak detection threshold` -> `leakDetectionThreshold`); 0 when none. Two words are `_joins`'s."""
    for n in range(CODE_NAME_WORDS, 2, -1):
        run = found[i : i + n]
        if len(run) < n or not all(m.group().isalpha() for m in run):
            continue
        if all(text[a.end() : b.start()].isspace() for a, b in zip(run, run[1:], strict=False)) and (
            vocabulary.code_name("".join(m.group() for m in run).lower())
        ):
            return n
    return 0


# a code this long or longer (`_ . -` inside) typed with two adjacent letters swapped is a typo of the KB's code;
# a shorter one may be another code (`ab_cd`, `ab_dc`)
SWAP_CHARS = 8
CODE_MARK = re.compile(r"[_.\-]")


def _unswapped(word: str, vocabulary: Vocabulary) -> str | None:
    """A code the KB never writes that one swap of two adjacent letters makes the one code it does write
    (`ERR_TIMEOTU` -> `ERR_TIMEOUT`), as the KB writes it; None for any other word. Read whole it was a name the KB
    never uses, "nothing found", though the dense layer put that code's page first (hostile20c finding 4). Only
    what a lookup searches: the KB's own model (fitted on questions spelt right) never sees it; reading it in
    `Vocabulary.known` changed Helm's self-calibrated model (hit@1 0.867 -> 0.838)."""
    low = word.lower()
    if len(low) < SWAP_CHARS or not CODE_MARK.search(low.strip("_.-")) or vocabulary.known(low):
        return None
    swaps = {low[:i] + low[i + 1] + low[i] + low[i + 2 :] for i in range(len(low) - 1) if low[i] != low[i + 1]}
    written = [v for v in swaps if v in vocabulary.df]
    return vocabulary.spelling(written[0]) if len(written) == 1 else None


# a word of this many dashed parts or more is a slug (a page's file name, `redis-eviction-policy`), not a name
SLUG_PARTS = 3


def _unslugged(word: str, vocabulary: Vocabulary) -> str:
    """A slug the KB never writes, whose parts are all words it writes, as those words (`redis-eviction-policy` ->
    `redis eviction policy`): read whole it is an unknown name of no meaning to the sentence encoder, and a page's
    file name asked as the question found nothing. A two-part name (`cert-manager`) stays one: the KB lacking it
    says the question is not this KB's."""
    parts = word.lower().split("-")
    if (
        len(parts) < SLUG_PARTS
        or vocabulary.known(word.lower())
        or not all(p.isalpha() and p in vocabulary.df for p in parts)
    ):
        return word
    return " ".join(word.split("-"))


def _joins(first: str, second: str, between: str, vocabulary: Vocabulary) -> bool:
    """Whether two words, `between` apart, are one KB term written in two (`Pg Bouncer`)."""
    parts = (first.lower(), second.lower())
    return (
        between.isspace()
        and first.isalpha()
        and second.isalpha()
        and (first + second).lower() in vocabulary.df
        and not set(parts) & FUNCTION_WORDS
        and not all(p in vocabulary.df for p in parts)
    )


# characters that show as nothing and break no word: a soft hyphen (copied from a page a browser hyphenated), a
# zero-width space, a word joiner, a byte-order mark. `Pg\u00adBouncer` was two words the KB never writes and
# "nothing found". ZWJ and ZWNJ stay: they shape emoji and Indic and Persian words.
INVISIBLE = dict.fromkeys(map(ord, "\u00ad\u200b\u2060\ufeff"))


def as_searched(query: str, vocabulary: Vocabulary) -> str:
    """What a lookup of `query` searches before any graph entity is added: the query without invisible characters
    (`INVISIBLE`), unshouted, without noise, and spelt as the KB writes its words."""
    return spelled(without_noise(unmarked(unshouted(query.translate(INVISIBLE)), vocabulary), vocabulary), vocabulary)


def unmarked(query: str, vocabulary: Vocabulary) -> str:
    """The query with its words marked up letter by letter read as their letters: a word with a combining mark on
    half its letters or more (`ŕéd́íś`, a lighter Zalgo than `unstacked` removes), that without them is an ASCII
    word the KB writes and with them is not. The keyword layers fold the marks anyway; the sentence encoder read
    `ŕéd́íś eviction policy` as other words ("nothing found"). Accented words of real languages keep theirs: few
    of their letters carry one (`éléphant`), or the KB writes them so."""
    words = query.split(" ")
    out = []
    for word in words:
        bare = "".join(c for c in unicodedata.normalize("NFD", word) if not unicodedata.combining(c))
        marks = len(unicodedata.normalize("NFD", word)) - len(bare)
        letters = sum(c.isalpha() for c in bare)
        plain = (
            marks >= 2
            and marks * 2 >= letters
            and bare.isascii()
            and bare.lower() in vocabulary.df
            and unicodedata.normalize("NFC", word).lower() not in vocabulary.df
        )
        out.append(bare if plain else word)
    return " ".join(out)


def search_text(known_entities, kb: str, graph: bool, query: str) -> tuple[str, dict]:
    """What a lookup of `query` (as searched: `as_searched`) in `kb` is graded as, and what the log keeps about
    it: the query plus the graph entities it was aligned to that it does not spell out. `graph`: the KB has a
    graph config.

    A KB without a graph, or a graph that cannot be reached, searches the query as written (the lookup
    must not fail because an enhancement's store did; the log says why nothing was added).
    """
    if not graph:
        return query, {}
    try:
        text, added = with_names(query, known_entities.in_text(kb, query))
    except BackendError as exc:
        return query, {"aligned_names": [], "alignment_error": str(exc)}
    return text, {"aligned_names": added}
