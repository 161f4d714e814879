"""One calibrated relevance score per (query, document), from several signals.

The dense similarity alone does not separate relevant from irrelevant pages on
real documentation (USE puts a right and a wrong page within a few hundredths),
and an exact keyword alone crowns whichever glossary names the term. So each
candidate document is described by a few features and a logistic model, fitted
by `executor calibrate` on labelled questions, turns them into the probability
that the document answers the query. Levels are thresholds on that probability;
whether the KB answers at all is, once calibrated with off-topic labels, a second
model's call over the whole result (`core.relevance.answer_features`).

Features (all in [0, 1] or small integers, so weights stay comparable):
- `similarity`: the document's best dense cosine (the absolute level still separates off-topic
  questions that share no meaning with the KB);
- `lift`: the document's best dense cosine minus the query's background (the mean cosine
  of its 4th to 10th dense hits). Raw cosines sit at different heights in different KBs
  (0.15-0.5 on the sample KB, 0.3-0.65 on the Helm docs) and with different wordings; how far
  a document stands out from the crowd transfers across both, the raw value does not;
- `gap`: how far the document's cosine is below the query's best document (1st place gets 0);
- `lexical`: the document's best BM25 score over the query's best BM25 score;
- `coverage`: the IDF-weighted share of the query's terms found in the document's retrieved text;
- `kb_coverage`: the same share over the whole KB's vocabulary (the query is about this KB at all);
- `unknown_names`: name-like query words the KB never uses (capped at 2);
- `passing_names`: name-like query words the KB only mentions in passing (`vocabulary.passing_names`, capped
  at 2); like the two above it describes the query, and only the answerability model uses it;
- `unknown_products`: of `unknown_names`, those naming another product or file (`vocabulary.product_or_file`,
  capped at 2); only the answerability model uses it;
- `specific_keyword`: the document matched a specific L0 keyword (few documents use it);
- `other_language`: the document is written in another language than the query. Word overlap cannot
  see a Chinese page answering an English question (and bilingual KBs are full of those), so the
  model needs to know when missing overlap means nothing;
- `coverage_same_language`, `lexical_same_language`: `coverage` and `lexical` where the languages
  match, 0 otherwise, so overlap counts fully only where it can happen at all;
- `similarity_other_language`, `lift_other_language`: `similarity` and `lift` where the languages differ,
  0 otherwise. The dense vectors are the only layer that sees across languages, so for such a page
  they must carry the decision; with `other_language` alone the model could only add a flat bonus, which
  put any page of the other language (no shared word, middling similarity) above a same-language page
  with every query term (Helm: for "helm install --dry-run 渲染通过了..." the English install page, sharing no
  word with it, ranked first and the Chinese page that answers 4th).
- `coverage_other_language`: on a page in another language, the share of the query's terms it writes, a Chinese
  word counting when the page writes its glossary English (`glossary.equivalents`); 0 where the languages match,
  and on a KB with no Chinese text. `coverage` of a Chinese question on an English page sees only its Latin names,
  which most pages of the product share, so the model gave any other-language page a flat bonus instead (Helm,
  label-free: hit@1 0.83 -> 0.86, a relevant page returned 0.92 -> 0.94). On a KB with no Chinese text every page
  is in the other language for a Chinese question, so the feature no longer sets a page apart from the pages
  around it, and self-calibration's Chinese questions are the glossary's own words (`glossary.to_chinese`): it
  learnt the generator (held out, pip: answerable "nothing found" 2% -> 5%; Starlette + Black: a relevant page
  returned 0.84 -> 0.80). There it stays 0, and the fit is the one without it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from executor.core.relevance import document_language, page_key
from executor.core.settings import RANKER_FEATURES as FEATURES  # noqa: F401 - FEATURES: read here by calibration
from executor.core.settings import Ranker
from executor.retrieval.glossary import equivalents
from executor.retrieval.vocabulary import QueryTerms, derived, phrase, terms
from executor.stores.vector_hits import ChunkHit

BACKGROUND_RANKS = slice(3, 10)
# a lookup of this many words and terms or fewer is a keyword lookup ("rollback", "eviction policy"; not "my service
# restarts over and over", two terms in six words): a short text's embedding is far from every page's (on the
# sample KB "pagination" is 0.24 from its own page, below REFERENCE)
KEYWORD_TERMS = 2
COMPOUND = re.compile(r"[_.\-]")
IDENTIFIER = re.compile(r"[a-z0-9]*(?:[_.\-][a-z0-9]+|[0-9])[a-z0-9_.\-]*")  # one token with `_ . -` or a digit


@dataclass
class Candidate:
    """A document some layer found for the query, with the chunks that came back for it."""

    doc_key: str
    title: str
    domain: str
    chunks: dict[int, ChunkHit] = field(default_factory=dict)
    lexical: float = 0.0  # best BM25 (or lexical-weight) score of its chunks; 0 when the lexical layer missed it
    l0_terms: list[str] = field(default_factory=list)
    specific: bool = False  # one of its L0 terms is specific
    specific_name: bool = False  # ... and written as a name (`Vocabulary.spellings`: `PgBouncer`, `ERR_TIMEOUT`)
    # one of its L0 terms is an identifier (an error code, config key, flag: `_`, `.`, `-` or a digit inside one
    # token) that no page but this one and its translations uses anywhere: the exact name decides (PRECISE),
    # whatever the dense similarity of a bare code string says
    decisive: bool = False
    # the query names this page alone: a title or heading of two words or more that no other page has, or a rare
    # identifier of the query (`_ . -` or a digit inside) that its text uses and no other page does
    named: bool = False
    # of those, a name that is the page's own: its title, or a rare identifier (a heading names a section, and
    # another page may answer better: a sync how-to over the repository page holding a "Google Cloud Storage" heading)
    titled: bool = False
    # the query is a bare keyword lookup (`KEYWORD_TERMS` words and terms at most), or a few words around one of this
    # page's specific keywords, and this page's text uses every term, as a word or inside a compound (`spells`); or
    # the query is a few words this page's text holds word for word (`quoted`): whatever the dense similarity of a
    # few words says, the KB holds a page on it (never "nothing")
    spelled: bool = False
    # a specific keyword of this page the query names is a name in code (an error code, a config key such as
    # `leakDetectionThreshold`): the page is spelled by the query whatever words are around the name
    coded: bool = False
    # the whole query is one of this page's specific keywords (front matter, or its headings and error codes when it
    # has none): its author named the page for it, whether or not its text spells it the same way (`CVE` on a page
    # writing "CVEs"; "Sunset header" on one writing `Sunset:`), so the page is spelled by the query
    own_keyword: bool = False
    # a keyword lookup (`KEYWORD_TERMS` words at most) one of whose terms this page uses and no other page does
    # (`MaxRAMPercentage`, in `-XX:MaxRAMPercentage=75`; `X-Signature header`, on the page writing `X-Signature:`
    # and never "header"): the one page that writes the name, which spells the query as far as the KB can
    sole_speller: bool = False
    similarity: float = 0.0
    features: dict[str, float] = field(default_factory=dict)
    score: float = 0.0
    copy_of: str = ""  # the first document of the same text (`grading.copies`); empty: none but itself

    @property
    def group(self) -> str:
        """The page: the document with its translations and its copies (identical pages are one answer)."""
        return page_key(self.copy_of or self.doc_key)

    def add(self, hit: ChunkHit, lexical: float | None = None) -> None:
        self.chunks.setdefault(hit.chunk_index, hit)
        if lexical is not None:
            self.lexical = max(self.lexical, lexical)


def background(similarities: list[float]) -> float:
    """The mean cosine of the 4th to 10th best dense hits: what any document of the KB scores for this query."""
    ranked = sorted(similarities, reverse=True)
    tail = ranked[BACKGROUND_RANKS] or ranked[-1:]
    return sum(tail) / len(tail) if tail else 0.0


# (texts) -> the terms and the language of the texts joined by newlines
Profile = Callable[[list[str]], tuple[frozenset[str], str]]


def joined_profile(texts: list[str]) -> tuple[frozenset[str], str]:
    """The profile of the texts joined, segmented now: what a profile means. Grading reads the same from the
    KB's `TextProfiles` (segmenting is most of a feature's cost), so this one is not cached."""
    text = "\n".join(texts)
    return frozenset(terms(text)), document_language(text)


def features(
    c: Candidate,
    top_similarity: float,
    floor: float,
    top_lexical: float,
    q: QueryTerms,
    profile: Profile = joined_profile,
    rare: frozenset[str] = frozenset(),
) -> dict[str, float]:
    """`profile`: how the candidate's title and chunks get their terms and language (see `joined_profile`);
    `rare`: the query's terms at most one page uses (the candidate is `named` when its text uses one that is an
    identifier)."""
    text_terms, language = profile([c.title, *(h.text for h in c.chunks.values())])
    held = rare & text_terms
    # (not an English word written with a dashed prefix: "multi-line", which one structlog page writes, named
    # its Twisted page in a question on rendering exceptions, PRECISE)
    if any(IDENTIFIER.fullmatch(t) and not derived(t) for t in held):
        c.named = c.titled = True
    # a keyword lookup, or a question of a few words around a specific keyword of this page ("What does
    # leakDetectionThreshold do?"): the words around it ask nothing the keyword does not
    lookup = q.words <= KEYWORD_TERMS or c.specific
    c.spelled = (
        (lookup and 0 < len(q.weights) <= KEYWORD_TERMS and spells(text_terms, q.weights))
        or quoted(c, q)
        or c.coded
        or c.own_keyword
    )
    # (Latin terms: a Chinese question is one "word" by its spaces, and a character few pages use names nothing)
    c.sole_speller = any(t.isascii() for t in held) and q.words <= KEYWORD_TERMS and len(q.weights) <= KEYWORD_TERMS
    c.spelled = c.spelled or c.sole_speller
    coverage = q.coverage_of(text_terms)
    lexical = c.lexical / top_lexical if top_lexical > 0 else 0.0
    same = 0.0 if language != q.language else 1.0
    return {
        "similarity": c.similarity,
        "lift": c.similarity - floor,
        "gap": max(0.0, top_similarity - c.similarity),
        "lexical": lexical,
        "coverage": coverage,
        "kb_coverage": q.coverage,
        "unknown_names": float(min(len(q.unknown_names), 2)),
        "passing_names": float(min(len(q.passing_names), 2)),
        "unknown_products": float(min(len(q.unknown_products), 2)),
        "specific_keyword": 1.0 if c.specific else 0.0,
        "other_language": 1.0 - same,
        "coverage_same_language": coverage * same,
        "lexical_same_language": lexical * same,
        "similarity_other_language": c.similarity * (1.0 - same),
        "lift_other_language": (c.similarity - floor) * (1.0 - same),
        "coverage_other_language": (
            q.coverage_of(text_terms, lambda t: equivalents(t, language)) if q.kb_chinese and not same else 0.0
        ),
    }


def quoted(c: Candidate, q: QueryTerms) -> bool:
    """Whether the query is a few words this page's text holds word for word (`QueryTerms.phrase`): a command
    copied from it (`kubectl rollout undo`, which the sample KB's rollback page gives, was "nothing found")."""
    return bool(q.phrase) and any(f" {q.phrase} " in f" {phrase(h.text)} " for h in c.chunks.values())


def spells(text_terms: frozenset[str], words: Iterable[str]) -> bool:
    """Whether a text uses every word, as a term of its own or as a part of a compound one (`disk` and `full`
    in `err_disk_full`: the page spells them out)."""
    missing = [w for w in words if w not in text_terms]
    if not missing:
        return True
    parts = {p for t in text_terms if COMPOUND.search(t) for p in COMPOUND.split(t)}
    return all(w in parts for w in missing)


def describe(
    candidates: list[Candidate],
    q: QueryTerms,
    floor: float,
    profile: Profile = joined_profile,
    rare: frozenset[str] = frozenset(),
) -> None:
    """Compute each candidate's features (similarities must be set); `floor` is the query's `background`."""
    top_similarity = max((c.similarity for c in candidates), default=0.0)
    top_lexical = max((c.lexical for c in candidates), default=0.0)
    for c in candidates:
        c.features = features(c, top_similarity, floor, top_lexical, q, profile, rare)


def rank(candidates: list[Candidate], ranker: Ranker | None) -> list[Candidate]:
    """Score every candidate (the ranker's probability, or the bare similarity without a ranker); best first."""
    for c in candidates:
        c.score = ranker.probability(c.features) if ranker is not None else c.similarity
    return sorted(candidates, key=lambda c: (-c.score, -c.similarity))
