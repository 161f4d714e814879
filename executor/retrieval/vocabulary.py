"""What a knowledge base talks about: its terms and how many documents use each.

Grading needs two facts the vectors cannot give: whether a query's distinctive
terms (product names, identifiers) occur in the KB at all, and whether a
keyword is specific to a few documents or named by half of them (a glossary
heading like "chart" or "and"). Both come from document frequencies over the
KB's own text, built once per KB version and cached under EXECUTOR_HOME.

Terms are ASCII words (dots and hyphens kept inside, so `cert-manager` and
`chart.yaml` stay whole) and, for Chinese, jieba's words of two or more
characters. Common English function words are left out: they carry no topic.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Sequence, Set
from dataclasses import dataclass, field
from functools import cache, lru_cache
from pathlib import Path

from executor.core.fs import private_dir, private_file
from executor.retrieval.keywords import TOKEN, normalize
from executor.stores.embedders import use_words

COMPOUND_PARTS = re.compile(r"[.\-]")
# what the cache holds; raised when what is counted changes (2: subjects gained defined list terms and file names;
# 3: Chinese stop words; 4: spellings)
CACHE_FORMAT = 4
FILE_WORDS = re.compile(r"[_.\-]")
ASCII_TERM = re.compile(r"[a-z0-9_]+(?:[.\-][a-z0-9_]+)*")
RAW_ASCII_TERM = re.compile(r"[A-Za-z0-9_]+(?:[.\-][A-Za-z0-9_]+)*")
CJK_RUN = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]+")
STOPWORDS = frozenset(
    "a an the and or of to in on for with by at from is are was were be been do does did how what when where "
    "which who why can could should would i my me we our you your it its this that these those there as if not "
    "no into than then so about after before up out over only just also any all each such very will shall may "
    "might must have has had get gets using use".split()
    # and the same words in Chinese (jieba's words): with no Chinese stop word, 怎么 and 怎么办 weighed as much as
    # 磁盘 in a Chinese question, so its KB coverage fell to 0.2 on the page that answers it, and a page that
    # happens to write 怎么 shared a "term" with every Chinese question
    + "怎么 怎么办 怎么样 怎样 如何 什么 什么样 为什么 为何 哪些 哪个 哪里 哪儿 是否 能否 能不能 可以 可不可以 "
    "应该 需要 有没有 是不是 会不会 我们 你们 他们 它们 这个 那个 这些 那些 这样 那样 一下 时候 的话 还是 或者 "
    "以及 并且 而且 如果 那么 然后 因为 所以 已经 就是 只是 还有 没有 一个 一些 请问 大家 自己 现在 之后 之前".split()
)


@cache
def _jieba():
    import jieba  # ~1 s to load its dictionary: only when Chinese text is seen

    jieba.setLogLevel(60)
    return jieba


def load_segmenter() -> None:
    """Load jieba's dictionary now (~0.4 s from its cache), e.g. on a thread while a command opens its stores."""
    _jieba().initialize()


def cjk_words(run: str) -> list[str]:
    """jieba's words of two or more characters in a run of CJK characters."""
    return list(_cut(run))


@lru_cache(maxsize=1 << 16)
def _cut(run: str) -> tuple[str, ...]:
    # the vocabulary, the text profiles and self-calibration's questions segment the same runs again (headings
    # repeat on every chunk): on Helm 60% of the characters segmented at ingest were segmented before
    return tuple(w for w in _jieba().cut(run) if len(w) >= 2)


# a word written as a name, whatever case it is typed in: an identifier (`ERR_TIMEOUT`, `HTTP2`) or a capital after a
# small letter (`PgBouncer`, `maxSurge`); not a capitalised word or one in capitals (a heading's `Keep`, SQL's
# `UPDATE`): the KB writing `Keep` only says nothing about how a question's `keep` should be read
NAME_SPELLING = re.compile(r"[_\d]|[a-z][A-Z]")
CODE_NAME = re.compile(r"[a-z]+(?:[A-Z][a-z0-9]*)+")


def spelt(text: str) -> list[str]:
    """A text's ASCII terms as written (NFKC, case kept): `ERR_TIMEOUT`, `PgBouncer`, `cert-manager`."""
    return RAW_ASCII_TERM.findall(unicodedata.normalize("NFKC", text))


def terms(text: str) -> set[str]:
    norm = normalize(text)
    out = {w for w in ASCII_TERM.findall(norm) if w not in STOPWORDS}
    for run in CJK_RUN.findall(norm):
        out.update(w for w in cjk_words(run) if w not in STOPWORDS)
    return out


# what a page is about is written in its titles, headings, keywords and code; a name found only elsewhere (a list
# of other frameworks, a link, a release note) is mentioned in passing
CODE = re.compile(r"```.*?(?:```|\Z)|`[^`\n]+`", re.S)


# the term a list item opens with, followed by what it is, is what the item defines ("- MedInc  median income in block
# group", "* **timeout**: seconds"), as a heading would; a bare item (`- NetworkPolicy` in a list of kinds) only
# enumerates, and an item opening with a link names another site's product (`- [Django](…) - a web framework`):
# both stay mentions
DEFINED = re.compile(r"^[ \t]*(?:[-*+]|\d+[.)])[ \t]+(?:\*\*|__)?([A-Za-z][\w.\-]*)(?:\*\*|__)?[ \t:,]+\S", re.M)


def subject_texts(chunk: str) -> list[str]:
    """The parts of a chunk's text (`heading path\\nbody`, as ingest stores it) that name what it documents: its
    heading path, its code, fenced or inline, and the terms its list items define (`DEFINED`)."""
    return [chunk.split("\n", 1)[0], *CODE.findall(chunk), *DEFINED.findall(CODE.sub(" ", chunk))]


# one token with `_`, `.` or `-` inside and a final `s` (`err_timeouts`)
CODE_PLURAL = re.compile(r"[a-z0-9]+(?:[_.\-][a-z0-9]+)+s")


@dataclass
class Vocabulary:
    """Document frequencies of a KB's terms; `documents` is the number of documents counted; `subjects`: the terms
    its titles, headings, keywords and code use (`subject_texts`), what its pages document rather than mention;
    `spellings`: every way its text writes a term it writes as a name (`NAME_SPELLING`: `ERR_TIMEOUT`,
    `PgBouncer`), the most frequent first."""

    documents: int
    df: dict[str, int]
    subjects: frozenset[str] = frozenset()
    spellings: dict[str, tuple[str, ...]] = field(default_factory=dict)
    _compounds: list[str] = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        # `delete-policy` is known when the KB writes `hook-delete-policy`
        self._compounds = [t for t in self.df if "-" in t or "." in t]
        # the words the KB writes at the head of a compound (`flask` in `flask-wtf`): used, as a part of a name; a
        # tail is the head's own part (`timesyncd` in `systemd-timesyncd`, which a page about systemd documents)
        self._heads = frozenset(COMPOUND_PARTS.split(t)[0] for t in self._compounds)
        # what `documented` looks a term up in: the subjects and the parts of their compounds, joined once
        self._documented = self.subjects | {p for t in self.subjects for p in COMPOUND_PARTS.split(t)}
        # whether the KB is written in Chinese at all (an English KB's vocabulary cannot say whether it knows a
        # Chinese question's words: `query_terms` then does not count them)
        self.chinese = sum(1 for t in self.df if CJK_RUN.search(t)) >= max(20, 0.02 * len(self.df))

    @classmethod
    def build(cls, documents: Iterable[tuple[str, str]], subjects: Iterable[str] = ()) -> Vocabulary:
        """From (doc_key, text) pairs; a document may come in several pieces (its chunks). `subjects`: the texts
        that name what the pages document (titles, headings, keywords, code); with them, each page's file name's
        words as well (`util-linux-col.md` documents `col`: a plain-text page has no heading, and its first line
        may be no title)."""
        per_doc: dict[str, set[str]] = {}
        written: dict[str, Counter[str]] = {}
        for doc_key, text in documents:
            per_doc.setdefault(doc_key, set()).update(terms(text))
            for word in spelt(text):
                written.setdefault(word.lower(), Counter())[word] += 1
        named = {t for text in subjects for t in terms(text)}
        if named:
            named |= {
                t for key in per_doc for t in terms(FILE_WORDS.sub(" ", key.rpartition("/")[2].rpartition(".")[0]))
            }
        spellings = {
            low: tuple(sorted(ways, key=lambda w: (-ways[w], w)))
            for low, ways in written.items()
            if low.upper() != low and any(NAME_SPELLING.search(w) for w in ways)  # a number has no case
        }
        df = dict(Counter(t for ts in per_doc.values() for t in ts))
        return cls(len(per_doc), df, frozenset(named), spellings)

    def known(self, term: str) -> bool:
        return (
            term in self.df
            or (term.isascii() and any(term in c for c in self._compounds))
            # an error code or key in the plural ("we see ERR_TIMEOUTS"): the code the KB writes, not an unknown name
            # (hostile19 finding 14). Codes only: the plural of a plain word read as its singular cost pip and Linux
            or (CODE_PLURAL.fullmatch(term) is not None and term[:-1] in self.df)
        )

    def used(self, term: str) -> bool:
        """Whether the KB writes `term` as a word of its own or at the head of a compound (`Flask` in `Flask-WTF`)."""
        return term in self.df or term in self._heads

    def documented(self, term: str) -> bool:
        """Whether a title, heading, keyword or code of the KB names `term` (as written, or its plural or singular:
        "ConfigMaps" in prose, `ConfigMap` in code; or as a part of a compound there: `flask` in `flask-login`)."""
        return bool({term, f"{term}s", term.removesuffix("s")} & self._documented)

    def spelling(self, word: str) -> str:
        """How the KB writes `word` (ASCII, NFKC) if it writes it as a name: as typed when its text writes it so,
        else the way its text writes it most (`Err_Timeout` -> `ERR_TIMEOUT`, `pgbouncer` -> `PgBouncer`); any
        other word as typed."""
        ways = self.spellings.get(word.lower(), ())
        return ways[0] if ways and word not in ways else word

    def code_name(self, term: str) -> bool:
        """Whether the KB writes `term` as a name in code: in lower camel case (`leakDetectionThreshold`,
        `maximumPoolSize`), a config key or a field, as an error code or a flag is one with `_` or `-`. A word in
        upper camel case (`PgBouncer`, `GitHub`) is a product's name, which one page may mention in passing."""
        ways = self.spellings.get(term, ())
        return bool(ways) and CODE_NAME.fullmatch(ways[0]) is not None

    def idf(self, term: str) -> float:
        return math.log((self.documents + 1) / (self.df.get(term, 0) + 0.5))

    def document_frequency(self, phrase: str) -> int:
        """At most how many documents hold every term of `phrase` (the rarest term's count)."""
        counts = [self.df.get(t, 0) for t in terms(phrase)]
        return min(counts) if counts else self.documents

    def specific(self, phrase: str) -> bool:
        """A keyword is specific when few documents use it: at most 3, or 1% of a large KB."""
        return self.document_frequency(phrase) <= max(3, math.ceil(0.01 * self.documents))

    # -- cache ----------------------------------------------------------------
    def save(self, path: Path, version: str) -> None:
        private_dir(path.parent)
        tmp = private_file(path.with_suffix(".tmp"))  # under EXECUTOR_HOME: 0600, like every data file
        tmp.write_text(
            json.dumps(
                {
                    "version": version,
                    "format": CACHE_FORMAT,
                    "documents": self.documents,
                    "df": self.df,
                    "subjects": sorted(self.subjects),
                    "spellings": self.spellings,
                },
                ensure_ascii=False,
            ),
            encoding="utf-8",
        )
        tmp.replace(path)

    @classmethod
    def load(cls, path: Path, version: str) -> Vocabulary | None:
        """The cached vocabulary if it was built for this KB version; None when stale, missing or unreadable."""
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or data.get("version") != version or data.get("format") != CACHE_FORMAT:
            return None  # stale, or cached by code that read the subjects otherwise
        return cls(
            int(data["documents"]),
            {str(k): int(v) for k, v in data["df"].items()},
            frozenset(data["subjects"]),
            {str(k): tuple(map(str, v)) for k, v in data["spellings"].items()},
        )


@dataclass(frozen=True)
class QueryTerms:
    """A query's terms against a KB: their IDF weights, how much of that weight the KB knows,
    the name-like terms it has never seen, and those it only mentions in passing."""

    weights: dict[str, float]
    coverage: float
    unknown_names: list[str]
    language: str = "en"
    passing_names: list[str] = field(default_factory=list)
    # of `unknown_names`, those that name another product or file (`unknown_products`)
    unknown_products: list[str] = field(default_factory=list)
    words: int = 0  # the query's words as written, stopwords too ("my service restarts over and over": 6)
    kb_chinese: bool = False  # the KB writes Chinese text (`Vocabulary.chinese`)
    # a query of `QUOTE_WORDS` words or fewer (three at least), as its tokens joined: a page whose text holds it
    # word for word is quoted by the query (`phrase`); "" for any other query
    phrase: str = ""
    own_names: list[str] = field(default_factory=list)  # the user's own names (`own_names`), weighed as none

    def coverage_of(self, text_terms: Set[str], spellings: Callable[[str], Set[str]] | None = None) -> float:
        """The IDF-weighted share of the query's terms a text writes; `spellings(term)`: the ways a text may write
        a term (`glossary.equivalents`), the term itself by default."""
        total = sum(self.weights.values())
        if spellings is None:
            held = sum(w for t, w in self.weights.items() if t in text_terms)
        else:
            held = sum(w for t, w in self.weights.items() if not text_terms.isdisjoint(spellings(t)))
        return held / total if total else 0.0


UNKNOWN_COVERAGE = 0.5  # a Chinese question on a KB with no Chinese page: its vocabulary cannot tell


def _knows(vocabulary: Vocabulary, term: str, english: Callable[[str], Set[str]] | None) -> bool:
    return vocabulary.known(term) or (
        english is not None and CJK_RUN.search(term) is not None and any(map(vocabulary.known, english(term)))
    )


def query_terms(query: str, vocabulary: Vocabulary, english: Callable[[str], Set[str]] | None = None) -> QueryTerms:
    """`english(term)`: the English words a Chinese term may be written as (`glossary.equivalents`): in a KB that
    writes both languages, a Chinese word the KB writes only in English (磁盘 on an English page on disks) is a
    word it knows. Without them every Chinese question on an English page of a bilingual KB looked half off-topic
    to the answerability model (sample KB, "机器磁盘满了怎么清理？": KB coverage 0.2, "nothing found")."""
    # the user's own names (`own_names`) say which of their things the question is about, not what it asks: it is
    # weighed as if it named none
    own = own_names(query, vocabulary)
    weights = {t: vocabulary.idf(t) for t in terms(query) - {t for word in own for t in terms(word)}}
    # in a KB with no Chinese text, a Chinese word unknown to it says nothing about whether a page answers (the
    # dense vectors see across languages): coverage is counted on the question's other words, if it has any
    counted = weights if vocabulary.chinese else {t: w for t, w in weights.items() if not CJK_RUN.search(t)}
    total = sum(counted.values())
    if not total:
        coverage = 1.0 if not weights else UNKNOWN_COVERAGE
    else:
        coverage = sum(w for t, w in counted.items() if _knows(vocabulary, t, english)) / total
    unknown = unknown_names(query, vocabulary, own)
    return QueryTerms(
        weights,
        coverage,
        unknown,
        "zh" if CJK_RUN.search(query) else "en",
        passing_names(query, vocabulary),
        [word for word in unknown if product_or_file(word)],
        len(query.split()),
        vocabulary.chinese,
        phrase(query) if 3 <= len(query.split()) <= QUOTE_WORDS else "",
        own,
    )


# a command or phrase copied from a page (`kubectl rollout undo`) is a few words: a longer question holding a page's
# sentence word for word is rare, and not what this is for
QUOTE_WORDS = 6


def phrase(text: str) -> str:
    """The text's tokens, normalised and space-joined: a query's `phrase`, or a page's text to find it in."""
    return " ".join(TOKEN.findall(normalize(text)))


# capitalised as every date is, and no product: a month or weekday (and its short form) is never a name
CALENDAR = frozenset(
    "january february march april may june july august september october november december "
    "jan feb mar apr jun jul aug sep sept oct nov dec "
    "monday tuesday wednesday thursday friday saturday sunday mon tue tues wed thu thur thurs fri sat sun".split()
)
SENTENCE_END = re.compile(r"(?:^|[.!?:;。！？：；\n])[\s\"'(\[“‘]*$")


def names(text: str) -> list[tuple[str, str]]:
    """The name-like words of a text, each as written and normalised: a word with a digit, dash or underscore
    (`k8s`, `cert-manager`), an inner capital (`FastAPI`), any Latin word inside a Chinese sentence (there, Latin
    script is a name), or a capitalised word mid-sentence (a sentence's first word is capitalised anyway) that is
    neither a common English word (USE's vocabulary: "Which", "Bonus") nor a month or weekday ("since January")."""
    chinese = bool(CJK_RUN.search(text))
    found = []
    for match in RAW_ASCII_TERM.finditer(text):
        word = match.group()
        low = normalize(word)
        if low in STOPWORDS:
            continue
        capitalised = (
            word[0].isupper()
            and not SENTENCE_END.search(text[: match.start()])
            and low not in CALENDAR
            and low not in use_words()
        )
        if chinese or identifier_like(word) or file_like(word) or capitalised or any(ch.isupper() for ch in word[1:]):
            found.append((word, low))
    return found


# a file or host name: a dotted word whose parts are two characters or more (`poetry.lock`, `environment.yml`,
# `Node.js`, `api.example.org`; not `e.g`): a file the KB never mentions is a name it lacks, like an identifier (on
# pip's docs "How do I add a dependency with Poetry and refresh poetry.lock?" knew every word but the file's)
FILE_NAME = re.compile(r"[A-Za-z0-9_\-]{2,}(?:\.[A-Za-z0-9_\-]{2,})+")


def file_like(word: str) -> bool:
    return bool(FILE_NAME.fullmatch(word)) and any(ch.isalpha() for ch in word.rpartition(".")[2])


def identifier_like(word: str) -> bool:
    return (any(ch.isdigit() for ch in word) or "-" in word or "_" in word) and not derived(word)


# English prefixes written with a dash: "non-interactively", "re-signs", "self-hosted" are words, not names (on pip's
# docs each of those sent an answerable question to "nothing found" as a name the KB never uses)
PREFIXES = frozenset("non re pre un co sub self multi semi anti post de inter over under cross mis out".split())


def derived(word: str) -> bool:
    """An English word made with a dashed prefix: the prefix, a dash, and a lower-case word of letters."""
    prefix, dash, rest = word.partition("-")
    return bool(dash) and prefix.lower() in PREFIXES and rest.isalpha() and rest.islower()


ACRONYM = re.compile(r"[A-Z]+s?")


def product_like(word: str) -> bool:
    """A name that may be a product's (`Django`, `FastAPI`): no identifier, file name nor acronym (`IP`, `PVCs`,
    `OK` name concepts every field shares)."""
    return not identifier_like(word) and "." not in word and not ACRONYM.fullmatch(word)


def unknown_names(query: str, vocabulary: Vocabulary, own: Sequence[str] | None = None) -> list[str]:
    """Name-like words of the query (`names`) that the KB never uses: `Terraform`, `cert-manager`, `k8s`,
    `max_conn`, or any Latin word inside a Chinese question. Not the user's own names (`own_names`; `own`, when the
    caller has them)."""
    mine = set(own_names(query, vocabulary) if own is None else own)
    return [
        word
        for word, low in names(query)
        if not vocabulary.known(low)
        and word not in mine
        and not of_known_acronym(word, vocabulary)
        and not VERSION.fullmatch(word)
    ]


# a version or number the question gives as an example (`1.x`, `v1.2.3`, `release-1.2.3`, `2.0.0-rc1`, `8080`): a
# value, no name of anything; counted as a name the KB never uses, it sent bump-my-version's "How do I keep a
# floating v1 tag that always points at the newest 1.x release?" to "nothing found" with its page first
VERSION = re.compile(r"v?\d+(?:\.(?:\d+|x))*(?:-\w+)?|[A-Za-z]+-v?\d+(?:\.(?:\d+|x))+(?:-\w+)?")


# an acronym in the plural, as English writes it: `IDs`, `URLs`, `PVCs`
ACRONYM_PLURAL = re.compile(r"[A-Z]{2,}s")


def of_known_acronym(word: str, vocabulary: Vocabulary) -> bool:
    """`IDs` where the KB writes `ID`: the plural of an acronym it knows, no name of its own (structlog, "attach
    the current trace and span IDs to every log entry" was "nothing found" with the page that answers it first,
    `IDs` counted as a name the KB never uses). Acronyms only: a plain word's plural read as its singular cost pip
    and Linux questions (`Vocabulary.known`)."""
    return ACRONYM_PLURAL.fullmatch(word) is not None and vocabulary.known(normalize(word[:-1]))


# "the OrdersApi release", "my payments-svc chart", "我们的 OrdersApi release": a determiner or possessive, a name, then
# a word a title or heading of the KB names
OWNER = re.compile(r"(?:\b(?:the|my|our|your|their|this|that)|我的|我们的|咱们的|这个|那个)\s*$", re.I)
NEXT_WORD = re.compile(r"\s*([A-Za-z][\w\-]*|[\u3400-\u9fff\uf900-\ufaff]+)")


# a part of a compound name: a capitalised or lower-case run (`Orders`, `svc`), or an acronym (`DB`, `MQ`, `CI`)
NAME_PART = re.compile(r"[A-Z][a-z0-9]+|[a-z][a-z0-9]*|[A-Z]{2,}(?![a-z])|[A-Z](?![a-z])")


def compound_name(word: str) -> bool:
    """A name made of two parts or more, none an acronym: `OrdersApi`, `payments-svc`, `BillingService`, as teams
    name their services. Not one word (`Istio`, `Jenkins`, `Kafka`) nor a word and an acronym (`MongoDB`,
    `RabbitMQ`, `PostgreSQL`): the shapes of the products of other stacks."""
    parts = [p for chunk in re.split(r"[-_]", word) if chunk for p in NAME_PART.findall(chunk)]
    return len(parts) >= 2 and not any(len(p) >= 2 and p.isupper() for p in parts)


def own_names(query: str, vocabulary: Vocabulary) -> list[str]:
    """Names the KB never uses that name the user's own instance of something it documents: a determiner or
    possessive before the name and a word of the KB's titles or headings after it ("roll back the OrdersApi
    release", "my payments-svc chart keeps failing lint"). A team asks about its own services and releases by
    name, and no KB can know those names: counted as unknown names, they sent such questions on Helm's docs to
    "nothing found" as if they named another product. "How do I configure Kafka consumer groups?" or "How do I
    handle chart hooks with Terraform?" name a product as a tool or subject, not as an instance, and stay unknown;
    so does "the Istio gateway": a product's one-word name (`compound_name`) is no team's service name."""
    if not vocabulary.subjects:
        return []  # built without them: cannot tell
    named = {word for word, low in names(query) if not vocabulary.known(low)}
    own = []
    for match in RAW_ASCII_TERM.finditer(query):
        if match.group() not in named or not compound_name(match.group()) or not OWNER.search(query[: match.start()]):
            continue
        after = NEXT_WORD.match(query, match.end())
        # the word after it: an English word whole (`payments-svc chart`), of Chinese text its first word
        following = after and (cjk_words(after.group(1))[:1] if CJK_RUN.match(after.group(1)) else [after.group(1)])
        if following and vocabulary.documented(normalize(following[0])):
            own.append(match.group())
    return own


def product_or_file(word: str) -> bool:
    """A name that is another product's or a file's (`Pulumi`, `RabbitMQ`, `poetry.lock`): a file name, or a product's
    kind of name written with a capital. Not a value (`b1.2`), a dashed English compound (`dial-in`, `pure-Python`) nor
    a command of the KB's own family (`systemd-run`): a user's answerable question carries those too, and a KB that
    never writes them can still answer it (session 27: one weight for all of them sent those to "nothing found")."""
    return file_like(word) or (product_like(word) and any(ch.isupper() for ch in word))


def passing_names(query: str, vocabulary: Vocabulary) -> list[str]:
    """Product-like names of the query (`names`, `product_like`) that the KB uses (as a word, or at the head of a
    compound: `Flask` in `Flask-WTF`) but only in passing: never in a title, heading, keyword or code
    (`Vocabulary.documented`). Starlette's docs name Django in a list of ORMs and a
    quoted endorsement, and document nothing of it; "How do I write a Django data migration?" is not theirs to
    answer, though every word of it is known there."""
    if not vocabulary.subjects:
        return []  # built without them: cannot tell
    return [
        word
        for word, low in names(query)
        if product_like(word) and vocabulary.used(low) and not vocabulary.documented(low)
    ]
