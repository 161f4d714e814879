"""A KB fits its own grading model from its own documents, with no human label (run at ingest).

The shared preset was fitted on other KBs' questions, and each KB's scores sit at their own height, so a KB
nobody labelled was graded on someone else's scale. Here the KB supplies its own evidence:

- **generated questions**, each labelled with the document it came from (and that document's translation, when
  the KB keeps one under a language folder: `en/x.md` and `zh/x.md`). They are built by templates from what names
  a page's subject: its title, its section headings, and the identifiers only it uses (error codes, config keys,
  commands and flags in inline code, identifier-like front-matter keywords). Only that name enters the question,
  never the sentence around it, so a question is no copy of the text that answers it; and half of them are asked
  in the other language (a Chinese question about an English page, and the reverse where the subject is a name),
  since that is how a bilingual team asks;
- **the bundled null pool** (`retrieval.off_topic`): off-topic questions in both languages, far from any team's
  documentation and near it, scored against this KB, so "nothing found" is placed on this KB's own scale. A pool
  question whose words the KB names (an L0 match on a title or keyword) is left out: this KB may answer it;
- **questions on the products the KB only mentions** (`mentioned`: links to, or names in its prose), asked about
  the subject of the page naming them: off-topic, and evidence for the answerability model alone
  (`Observed.gate_only`);
- **questions naming another stack's tool or file** the KB never writes (`near_named`: `Cargo.lock`, `Pulumi`) on a
  page's title: off-topic and `gate_only` likewise; they teach the weight of `unknown_products`.

Then exactly what `executor calibrate --for KB` does (`retrieval.calibration.fit`: the ranker, the thresholds, the
answerability model), with 5-fold held-out figures on the generated questions, stored as the KB's own model
(`KbModel`, `calibrated_by="self"`). A model fitted on human labels (`calibrate --write`) is never replaced here.

Cost: one batch embedding of the questions and one grading each; the number of questions is capped
(`MAX_GENERATED`), so the extra ingest time is bounded whatever the KB's size, and it is reported.
"""

from __future__ import annotations

import random
import re
import time
from collections import defaultdict
from dataclasses import dataclass, replace
from datetime import UTC

from tqdm import tqdm

from executor.core.relevance import document_language, language_of, page_key
from executor.core.settings import KbModel, Thresholds
from executor.retrieval.calibration import FOLDS, Bars, Label, Observed, cross_validate, fit
from executor.retrieval.chunking import PATH_SEPARATOR
from executor.retrieval.documents import Document
from executor.retrieval.glossary import to_chinese, to_english
from executor.retrieval.grading import catalog_hashes, copies
from executor.retrieval.keywords import TOKEN, normalize
from executor.retrieval.off_topic import POOL
from executor.retrieval.quality import measure
from executor.retrieval.vocabulary import (
    CODE,
    RAW_ASCII_TERM,
    UNKNOWN_COVERAGE,
    Vocabulary,
    passing_names,
    product_like,
    query_terms,
)
from executor.stores.catalog import version
from executor.stores.embedders import use_words

MAX_GENERATED = 160  # answerable questions at most: bounds the extra ingest time (about 40 ms each)
MIN_DOCUMENTS = 5  # fewer documents than this: too little evidence, the KB keeps the shared preset
REFIT_SHARE = 0.1  # a re-ingest refits when at least this share of the documents was added, changed or removed
SEED = 2026
SEARCH_BATCH = 32  # questions per store request: one request each was a third of the time; 32 keeps replies small
# HIGHLY_RELEVANT at 95% on generated questions (92% for human labels): a generated question names its page's
# subject and is easier to place than a user's, so its precision overstates a user's (on the sample KB, whose
# labelled questions are vaguer: HR precision 0.71 at 92%, 0.78 at 95%)
# and a weak-REFERENCE band down to where 10% of the pool would still get a document (an off-topic question in
# it gets a hedged REFERENCE, never a confident grade)
# The ranker leaves out the two features the generated questions settle by construction: built from the KB's own
# titles, headings and identifiers, every one is fully covered by its vocabulary and names nothing it lacks (on
# the dev set evals/labels/linux-docs.yaml: coverage 0.97, never an unknown name; the pool's 0.37 and 42%). The
# ranker then learns "a query in the KB's own words" instead of "this page answers", and scores every page low
# for a user's paraphrase in other words ("怎么快速跳到合并冲突的位置？": its page first, score 0.01, "nothing
# found"). Whether the KB answers at all stays the answerability model's call, which keeps them.
BY_CONSTRUCTION = ("kb_coverage", "unknown_names")
# It also leaves out BM25 counted across languages (`lexical`; `lexical_same_language` stays): a generated Chinese
# question on an English page keeps the page's names and identifiers (`遇到 --target-version 怎么办？`), so the
# ranker learnt that BM25 on a Chinese question's few Latin words finds its page; a user's Chinese question names
# a product every page mentions (`Black 的配置应该写在哪个文件里？`: the page that answers first by the dense layer,
# 7th by the ranker, behind the pages richest in "Black"). Held out (Starlette/Black, zh): hit@1 0.33 -> 0.60.
ACROSS_LANGUAGES = ("lexical",)
SELF_BARS = Bars(hr_min_precision=0.95, weak_max_rate=0.1, ranker_without=BY_CONSTRUCTION + ACROSS_LANGUAGES)

# an identifier: a code, key, flag or command word with something no prose word has (`_`, a dot or dash inside,
# an inner capital, a digit, a leading `--`)
IDENTIFIER = re.compile(r"^(?:--?[a-z][\w\-]*|[A-Za-z][\w]*(?:[._\-][\w]+)+|[a-z]+[A-Z]\w*|[A-Z]{2,}[_0-9]\w*)$")
INLINE_CODE = re.compile(r"`([^`\n]{3,40})`")
GENERIC_HEADINGS = frozenset(
    {
        "overview",
        "introduction",
        "summary",
        "example",
        "examples",
        "usage",
        "see also",
        "prerequisites",
        "next steps",
        "notes",
        "note",
        "faq",
        "references",
        "installation",
        "configuration",
        "概述",
        "简介",
        "示例",
        "总结",
        "参考",
        "说明",
        "前提条件",
        "下一步",
    }
)

# subject templates: (language of the question, template); {s} is the subject, a title or heading
SUBJECT_EN = ("How does {s} work?", "Where is {s} explained?", "I need help with {s}.", "what should I know about {s}")
SUBJECT_ZH = ("{s}是怎么回事？", "关于{s}有什么说明？", "想了解一下{s}", "{s}要注意什么？")
IDENT_EN = ("What does {s} mean?", "what is {s} for", "{s}", "How do I use {s}?")
IDENT_ZH = ("{s} 是什么意思？", "{s} 怎么用？", "遇到 {s} 怎么办？", "{s} 是干什么的")
# content templates: {s} is a sentence of the page, asked with the chunk it came from held out
CONTENT_EN = ("{s} - how do I handle that?", "The docs say something like: {s}. Where is that?", "{s}?")
CONTENT_ZH = ("{s}，这个怎么处理？", "有没有讲这个的：{s}", "{s}？")
MARKUP = re.compile(r"[*`>#|\[\]]|\(http[^)]*\)")
# near-field off-topic questions on a product the KB names only in passing (`vocabulary.passing_names`): the pool's
# near-field questions name products this KB never uses, so without these the answerability model never saw a
# question about a product it merely lists (Django in Starlette's list of ORMs) and took it for its own subject
MAX_MENTIONED = 24
# and on the subject of the page that mentions it: a near-field question shares the KB's words (Django and data
# migrations, on a page about databases that lists Django), so its dense similarity and scores alone are a user's
MENTIONED_EN = ("How does {n} handle {s}?", "{s} in {n}: how do I set it up?", "What does {n} offer for {s}?")
MENTIONED_ZH = ("{n} 里的{s}怎么配置？", "{n} 的{s}怎么用？", "用 {n} 的话，{s}要怎么做？")
# near-field off-topic questions on a page's subject naming another stack's tool or file, one this KB never uses
# (`vocabulary.product_or_file`): what teaches the answerability model the weight of `unknown_products`. A user's
# answerable question never names a product the KB lacks; it may carry a value or a compound the KB never writes
# (`b1.2`, `dial-in`), which `unknown_names` counts too and these questions do not. Names written for this, none
# taken from a measured corpus (nor the file of `tests/integration/test_off_topic_near_field.py`).
MAX_NEAR_NAMED = 24
OTHER_STACKS = (
    "Cargo.lock",
    "go.sum",
    "pom.xml",
    "build.gradle",
    "Gemfile.lock",
    "composer.json",
    "yarn.lock",
    "mix.exs",
    "Podfile.lock",
    "Vagrantfile",
    "Pulumi",
    "Bazel",
    "CircleCI",
    "Traefik",
    "RabbitMQ",
    "Keycloak",
    "MongoDB",
    "Elasticsearch",
    "Kustomize",
    "Webpack",
    "Laravel",
    "Symfony",
    "Xcode",
    "TeamCity",
    "DynamoDB",
    "Firebase",
    "GraphQL",
    "Memcached",
    "OpenShift",
    "PowerShell",
    "SvelteKit",
    "WordPress",
)
NEAR_EN = ("How do I handle {s} with {n}?", "{s}: how do I update {n}?", "Where does {n} fit into {s}?")
NEAR_ZH = ("{n} 里的{s}怎么配置？", "{s}的时候 {n} 要怎么改？", "用 {n} 做{s}要注意什么？")
EXTERNAL_LINK = re.compile(r"\[([^\]\n]{2,60})\]\(\s*(?:https?:)?//")  # a link's text, to another site
# a Latin word next to a non-ASCII letter is a piece of a word (`Sebasti` of "Sebastián"), no name
NON_ASCII_NEIGHBOUR = re.compile(r"[^\x00-\x7f]")
COMPOUND_TAIL = re.compile(r"(?<=[A-Za-z])(?:-[A-Za-z]\w*)+")
COMPOUND_HEAD = re.compile(r"(?<![\w\-])([A-Za-z]\w*)(?=-[A-Za-z])")
LINK_TARGET = re.compile(r"(?<=\])\([^)]*\)")
LIST_MARKER = re.compile(r"^\s*(?:[-+]|\d+[.)])\s+")


def _around(line: str, word: str) -> tuple[int, int]:
    """The span of the characters just before and after `word`'s first occurrence in `line`."""
    at = line.find(word)
    return max(at - 1, 0), at + len(word) + 1


@dataclass(frozen=True)
class Source:
    """What question generation reads of one document."""

    doc_key: str
    title: str
    keywords: list[str]
    error_codes: list[str]
    body: str
    # (chunk id, lines) per chunk as ingest stored them (the first line is the heading path); None: parse `body`
    chunks: tuple[tuple[str, tuple[str, ...]], ...] | None = None
    # the first document of the same text (`grading.copies`: a copy under another name); None: itself
    copy_of: str | None = None


def _identifiers(source: Source) -> list[str]:
    found = [*source.error_codes, *(k for k in source.keywords if IDENTIFIER.match(k))]
    found += [m.strip() for m in INLINE_CODE.findall(source.body) if IDENTIFIER.match(m.strip())]
    return list(dict.fromkeys(found))


def _subject(text: str, rng: random.Random) -> str:
    """A heading as a subject; a long English one loses a word, so the question does not repeat it whole."""
    words = text.split()
    if language_of(text) == "en" and len(words) > 4:
        del words[rng.randrange(1, len(words))]
    return " ".join(words).rstrip(":.?")


def _ask(
    subject: str,
    templates_same: tuple[str, ...],
    templates_other: tuple[str, ...],
    page_language: str,
    other: bool,
    rng: random.Random,
) -> str:
    """One question about `subject` in the page's language, or (`other`) in the other one."""
    en, zh = (templates_same, templates_other) if page_language == "en" else (templates_other, templates_same)
    asked_in = ("zh" if page_language == "en" else "en") if other else page_language
    if asked_in == "zh" and page_language == "en" and templates_same is SUBJECT_EN:
        # a heading asked in Chinese: in Chinese words where the glossary has them, as a Chinese user asks
        subject = to_chinese(subject) or subject
    elif asked_in == "en" and page_language == "zh" and templates_same is SUBJECT_ZH:
        subject = to_english(subject) or subject  # `generate` asks it in English only where the glossary has it
    return rng.choice(en if asked_in == "en" else zh).format(s=subject)


def _chunks(source: Source) -> list[tuple[str, tuple[str, ...]]]:
    """(chunk id, lines) per chunk of the page as ingest made them (the first line is the heading path): the
    stored ones when given, since parsing the Markdown again was a quarter of self-calibration's time."""
    if source.chunks is not None:
        return list(source.chunks)
    doc = Document(
        doc_key=source.doc_key, title=source.title, domain="general", keywords=source.keywords, body=source.body
    )
    return [(c.chunk_id, tuple(c.text.split("\n"))) for c in doc.chunks()]


def _headings(chunks: list[tuple[str, tuple[str, ...]]]) -> list[str]:
    """The section headings, from the chunks' heading paths (`Title › Heading › Subheading`)."""
    return list(dict.fromkeys(h for _, lines in chunks for h in lines[0].split(PATH_SEPARATOR)[1:]))


def _sentence(chunks: list[tuple[str, tuple[str, ...]]], rng: random.Random) -> tuple[str, str] | None:
    """A prose sentence of the page and the id of the chunk it is in (held out when the question is graded)."""
    found = []
    for chunk_id, lines in chunks:
        for line in lines[1:]:
            line = MARKUP.sub("", line).strip(" -:")
            # its longest sentence (a numbered item's "1." is no sentence)
            line = max(re.split(r"(?<=[.!?。！？；;])\s+|(?<=[。！？；])", line), key=len).strip().rstrip(".。;；")
            cjk = language_of(line) == "zh"
            if (
                (12 if cjk else 30) <= len(line) <= (60 if cjk else 140)
                and not line.startswith(("$", "{", "<"))
                and (cjk or len(line.split()) >= 6)
            ):
                found.append((line, chunk_id))
    return rng.choice(found) if found else None


def pages(sources: list[Source]) -> dict[str, str]:
    """Each document's page: one key for a page, its translations (`page_key`) and its copies (`Source.copy_of`,
    the same text under another name), which all answer the same questions. A question whose page has copies
    labelled with the page alone counted every copy the grader put first as a miss (5 copies of one page and one
    other page: held-out hit@1 0.23)."""
    parent = {s.doc_key: s.doc_key for s in sources}

    def root(key: str) -> str:
        while parent[key] != key:
            key = parent[key]
        return key

    first: dict[str, str] = {}
    for s in sources:
        for same in (f"page:{page_key(s.doc_key)}", f"copy:{s.copy_of or s.doc_key}"):
            if same in first:
                parent[root(s.doc_key)] = root(first[same])
            else:
                first[same] = s.doc_key
    return {s.doc_key: root(s.doc_key) for s in sources}


def generate(sources: list[Source], limit: int = MAX_GENERATED, seed: int = SEED) -> list[tuple[Label, str | None]]:
    """Questions labelled with the documents that answer them, at most `limit`, spread over the documents; each
    with the chunk to hold out when it is graded (None: none, the question names the subject only)."""
    rng = random.Random(seed)
    page = pages(sources)
    twins: dict[str, list[str]] = defaultdict(list)
    for s in sources:
        twins[page[s.doc_key]].append(s.doc_key)
    # in how many pages (a page, its translations and its copies counted once) each identifier appears
    spread: dict[str, set[str]] = defaultdict(set)
    idents = {s.doc_key: _identifiers(s) for s in sources}
    # a page uses an identifier when its text holds it as a token (the L0 layer's tokens: `err_x`, `a.b-c`)
    tokens = {s.doc_key: set(TOKEN.findall(normalize(f"{s.title}\n{s.body}"))) for s in sources}
    for ident in {i for found in idents.values() for i in found}:
        parts = TOKEN.findall(normalize(ident))
        for key, used in tokens.items():
            if parts and all(p in used for p in parts):
                spread[ident].add(page[key])

    per_doc: list[list[tuple[Label, str | None]]] = []
    for s in sources:
        language = document_language((s.body or s.title)[:4000])  # the opening says the language, cheaply
        relevant = twins[page[s.doc_key]]
        asked: list[Label] = []
        held: list[tuple[Label, str]] = []
        title_other = rng.random() < 0.5
        # a Chinese page with no English version is asked in English too (in the glossary's words): an English
        # user has only it to find. One with an English version is asked through that page's own headings
        alone = len(relevant) == 1
        if s.title.strip():
            asked.append(
                Label(
                    query=_ask(
                        _subject(s.title, rng),
                        SUBJECT_EN if language == "en" else SUBJECT_ZH,
                        SUBJECT_ZH if language == "en" else SUBJECT_EN,
                        language,
                        title_other and (language == "en" or (alone and to_english(s.title) is not None)),
                        rng,
                    ),
                    relevant=relevant,
                )
            )
        chunks = _chunks(s)
        sentence = _sentence(chunks, rng)
        if sentence is not None:
            text, chunk = sentence
            templates = CONTENT_ZH if language_of(text) == "zh" else CONTENT_EN
            held.append((Label(query=rng.choice(templates).format(s=text), relevant=relevant), chunk))
        sections = [
            h
            for h in _headings(chunks)
            if h.strip()
            and h.casefold() != s.title.casefold()
            and h.strip().casefold() not in GENERIC_HEADINGS
            and len(h) <= 60
        ]
        for h in rng.sample(sections, min(2, len(sections))):
            other = rng.random() < 0.5 and (
                language == "en" or language_of(h) == "en" or (alone and to_english(h) is not None)
            )
            asked.append(
                Label(
                    query=_ask(
                        _subject(h, rng),
                        SUBJECT_EN if language == "en" else SUBJECT_ZH,
                        SUBJECT_ZH if language == "en" else SUBJECT_EN,
                        language,
                        other,
                        rng,
                    ),
                    relevant=relevant,
                )
            )
        unique = [i for i in idents[s.doc_key] if len(spread[i]) == 1]
        for ident in rng.sample(unique, min(2, len(unique))):
            asked.append(
                Label(
                    query=_ask(
                        ident,
                        IDENT_EN if language == "en" else IDENT_ZH,
                        IDENT_ZH if language == "en" else IDENT_EN,
                        language,
                        rng.random() < 0.5,
                        rng,
                    ),
                    relevant=relevant,
                )
            )
        both: list[tuple[Label, str | None]] = [(a, None) for a in asked]
        both += held
        rng.shuffle(both)
        per_doc.append(both)
    out: list[tuple[Label, str | None]] = []
    for round_ in range(max((len(a) for a in per_doc), default=0)):  # round robin: every page before a second one
        out += [a[round_] for a in per_doc if round_ < len(a)]
    seen: set[str] = set()
    return [(q, c) for q, c in out if not (q.query in seen or seen.add(q.query))][:limit]


def mentioned(sources: list[Source], vocabulary: Vocabulary, limit: int = MAX_MENTIONED, seed: int = SEED) -> list[str]:
    """Off-topic questions, each on a product the KB names and no title, heading, keyword or code of it names
    (`vocabulary.passing_names`), asked about the subject of a page naming it, at most `limit`, in English and
    Chinese. A product is first the one capitalised word of a link's text that is no common English word
    (`[Django](…)`, `[SQLAlchemy](…)`; not `[Deployment](…)`, nor a person's `[Carl Meyer](…)`) and no identifier
    or acronym; then, up to `limit`, a name of the prose that `passing_names` would count in a question (`Flask` in
    "modelled on Flask-Login"): a KB that links to nothing gave the answerability model no such question, and it
    learnt nothing of what a passing name means there (weight 0)."""
    linked: dict[str, tuple[str, str]] = {}  # name -> (the name as written, the title of a page naming it)
    prose: dict[str, tuple[str, str]] = {}
    for s in sources:
        body = CODE.sub(" ", s.body)
        for text in EXTERNAL_LINK.findall(body):
            words = RAW_ASCII_TERM.findall(text)
            for word in words[:1] if len(words) == 1 else ():  # a link named by one word: a product's, not a person's
                low = normalize(word)
                if (
                    word[0].isupper()
                    and (low not in use_words() or any(ch.isupper() for ch in word[1:]))
                    and product_like(word)
                    and low in vocabulary.df
                    and not vocabulary.documented(low)
                ):
                    linked.setdefault(low, (word, s.title))
        for line in body.split("\n"):
            # English prose only (in a Chinese sentence every Latin word is a name), and only a product's kind of
            # name: the head of a dashed compound (`Flask` where the page wrote `Flask-Login`, as a question names
            # it) or a word with an inner capital (`SQLModel`); a capitalised word alone is as often a person or a
            # place (a dataset's citations: "Cleveland", "Rumsfeld"). A link's target is no prose, a list item's
            # or bold text's first word starts its sentence, and a line's first name is what the line defines
            # ("- MedInc  median income"), not a name in passing
            heads = set(COMPOUND_HEAD.findall(line))
            line = LIST_MARKER.sub("", MARKUP.sub("", COMPOUND_TAIL.sub("", LINK_TARGET.sub(" ", line)))).strip()
            if language_of(line) == "en":
                for word in passing_names(line, vocabulary):
                    if (
                        (word in heads or any(ch.isupper() for ch in word[1:]))
                        and word[0].isupper()
                        and not line.startswith(word)
                        and not NON_ASCII_NEIGHBOUR.search(line, *_around(line, word))
                    ):
                        prose.setdefault(normalize(word), (word, s.title))
    rng = random.Random(seed)
    products = rng.sample(sorted(linked.values()), min(limit, len(linked)))
    rest = sorted(v for k, v in prose.items() if k not in linked)
    products += rng.sample(rest, min(limit - len(products), len(rest)))
    # every name once in English and once in Chinese, then again in the other templates, up to `limit`: a KB that
    # links to few products still gives the answerability model enough of them to learn from
    asked = [
        ((MENTIONED_EN, MENTIONED_ZH)[(round_ + j) % 2][round_ // 2], n)
        for round_ in range(2 * len(MENTIONED_EN))
        for j, n in enumerate(products)
    ]
    out = []
    for template, (name, title) in asked[:limit]:
        subject = _subject(title, rng)
        if template in MENTIONED_ZH:  # the page's subject in Chinese words where the glossary has them
            subject = to_chinese(subject) or subject
        out.append(template.format(n=name, s=subject))
    return out


def near_named(
    sources: list[Source], vocabulary: Vocabulary, limit: int = MAX_NEAR_NAMED, seed: int = SEED
) -> list[str]:
    """Off-topic questions, each on the title of a page and naming another stack's tool or file (`OTHER_STACKS`) the
    KB never uses, at most `limit`, in English and Chinese in turn: a question `unknown_products` counts a name in."""
    rng = random.Random(seed)
    titles = sorted({s.title for s in sources if s.title})
    names = [n for n in OTHER_STACKS if not vocabulary.known(normalize(n))]
    if not titles or not names:
        return []
    out: list[str] = []
    for i, name in enumerate(rng.sample(names, len(names)) * 2):
        if len(out) >= limit:
            break
        templates = NEAR_ZH if i % 2 else NEAR_EN
        subject = _subject(rng.choice(titles), rng)
        # the page's subject in the template's language where the glossary has its words
        subject = (to_chinese(subject) if templates is NEAR_ZH else to_english(subject)) or subject
        question = rng.choice(templates).format(n=name, s=subject)
        if name in query_terms(question, vocabulary).unknown_products:
            out.append(question)
    return out


@dataclass
class SelfCalibration:
    """What `kb show` and the ingest report say about a self-calibration."""

    generated: int
    off_topic: int
    seconds: float
    held_out: dict
    model: KbModel | None
    skipped: str = ""  # why no model was fitted


def sources_of(catalog, rows: list, kb: str) -> list[Source]:
    """The KB's documents, each with its stored chunks (`rows`: the vector store's `texts`)."""
    docs = catalog.documents(kb)
    bodies = catalog.stored_bodies(kb, set(docs))
    same = copies(catalog_hashes(catalog, kb))
    stored: dict[str, dict[int, tuple[str, tuple[str, ...]]]] = defaultdict(dict)
    for chunk_id, doc_key, _, text in rows:
        stored[doc_key][int(chunk_id.rpartition("#")[2])] = (chunk_id, tuple(text.split("\n")))
    return [
        Source(
            k,
            d.title,
            list(d.keywords or []),
            list(d.error_codes or []),
            bodies.get(k, ""),
            tuple(c for _, c in sorted(stored[k].items())) if k in stored else None,
            same[k] if same[k] != k else None,
        )
        for k, d in docs.items()
    ]


def observe_all(
    grader, catalog, embedder, kb: str, questions: list[tuple[Label, str | None]], t: Thresholds, progress: bool = False
) -> list[Observed]:
    """Grade every question once, as lookup would (the queries embedded in one batch, the store searched in
    batches of `SEARCH_BATCH`), each without the chunk it holds out."""
    at = version(catalog.require(kb))
    same = grader.copies(kb, at)

    def held_out(label: Label, held: str | None) -> frozenset[str]:
        """The chunk a sentence question came from, and the same chunk of each copy of its page: a copy's identical
        sentence would find it as surely as the sentence itself."""
        if held is None:
            return frozenset()
        key, _, index = held.rpartition("#")
        return frozenset([held, *(f"{k}#{index}" for k in label.relevant if same.get(k, k) == same.get(key, key))])

    vectors = list(embedder.embed_documents([label.query for label, _ in questions])) if questions else []
    observed: list[Observed] = []
    with tqdm(
        total=len(questions), desc=f"self-calibrating {kb}", unit="question", disable=not progress, leave=False
    ) as bar:
        for start in range(0, len(questions), SEARCH_BATCH):
            batch = questions[start : start + SEARCH_BATCH]
            graded = grader.grade_many(
                kb,
                at,
                [label.query for label, _ in batch],
                vectors[start : start + SEARCH_BATCH],
                t,
                [held_out(label, held) for label, held in batch],
            )
            observed += [Observed(label, kb, g) for (label, _), g in zip(batch, graded, strict=True)]
            bar.update(len(batch))
    return observed


def evidence(
    grader, catalog, embedder, kb: str, t: Thresholds, limit: int = MAX_GENERATED, progress: bool = False
) -> list[Observed]:
    """The KB's generated questions, the null pool's questions it does not name, and questions on the names it only
    mentions (`mentioned`) or never writes (`near_named`), graded once."""
    rows = list(grader.vectors.texts(kb))  # read once: the sources and (when not cached) the vocabulary
    sources = sources_of(catalog, rows, kb)
    generated = generate(sources, limit)
    vocabulary = grader.vocabulary(kb, version(catalog.require(kb)), rows)
    near = mentioned(sources, vocabulary) + near_named(sources, vocabulary)
    questions = generated + [(Label(query=q), None) for q in (*POOL, *near)]
    observed = observe_all(grader, catalog, embedder, kb, questions, t, progress)
    if not vocabulary.chinese:
        # a Chinese question on a KB with no Chinese text: its vocabulary cannot tell (`UNKNOWN_COVERAGE`), but a
        # generated one names its subject in the page's English words, which a Chinese user mostly does not; so
        # the answerability model saw "cannot tell" only on the pool's questions, and sent a Chinese paraphrase
        # ("怎么只跑一部分回归测试？", its page first) to "nothing found". Counted as a user's would be.
        for o in observed:
            if o.label.relevant and language_of(o.label.query) == "zh":
                for c in o.graded.candidates:
                    c.features["kb_coverage"] = UNKNOWN_COVERAGE
    # a pool question naming a title or keyword of this KB may be answered here: it is no off-topic evidence; a
    # question on a product the KB only mentions or never writes names the KB's subject on purpose, and says only
    # whether the KB answers at all (`Observed.gate_only`)
    asked = set(near)
    return [
        replace(o, gate_only=True) if o.label.query in asked else o
        for o in observed
        if o.label.relevant or not o.graded.l0 or o.label.query in asked
    ]


def calibrate_kb(
    grader,
    catalog,
    embedder,
    kb: str,
    t: Thresholds,
    fitted_at: str,
    limit: int = MAX_GENERATED,
    bars: Bars = SELF_BARS,
    progress: bool = False,
) -> SelfCalibration:
    """Fit the KB's own model on its generated questions and the null pool (`t`: the grading in force, for the
    levels of the first pass; the ranker is refitted from the features)."""
    started = time.perf_counter()
    if len(catalog.documents(kb)) < MIN_DOCUMENTS:
        return SelfCalibration(0, 0, 0.0, {}, None, f"fewer than {MIN_DOCUMENTS} documents")
    observed = evidence(grader, catalog, embedder, kb, t, limit, progress)
    return fit_kb(observed, embedder.name, kb, t.max_l2_distance, fitted_at, started, bars)


def fit_kb(
    observed: list[Observed],
    embedder: str,
    kb: str,
    max_l2: float,
    fitted_at: str,
    started: float,
    bars: Bars = SELF_BARS,
) -> SelfCalibration:
    """The model and its held-out figures from the KB's graded evidence."""
    answerable = sum(1 for o in observed if o.label.relevant)
    off = len(observed) - answerable
    if answerable < 2 * FOLDS or off < FOLDS:
        return SelfCalibration(
            answerable, off, round(time.perf_counter() - started, 2), {}, None, "too few questions could be generated"
        )
    final = fit(observed, max_l2, kb, bars)
    held = measure(cross_validate(observed, max_l2, FOLDS, kb, bars=bars)).by_kb[kb]["all"].model_dump()
    model = KbModel(
        embedder=embedder,
        thresholds=final,
        fitted_at=fitted_at,
        held_out=held,
        labels={"generated from the KB's documents": answerable, "bundled off-topic pool": off},
        calibrated_by="self",
    )
    return SelfCalibration(answerable, off, round(time.perf_counter() - started, 2), held, model)


def needs_refit(row, documents: int, moved: int) -> bool:
    """Whether an ingest should (re)fit the KB's own model: it is graded by the ranker, no human-labelled model
    stands, and it has no self-calibrated model yet, or the documents moved since the fit (`moved` by this ingest,
    and what the ingests since the fit added, changed or removed) are enough of it, or an ingest since the fit
    never said what it moved: it was stopped after its documents were recorded and before the model was (kill -9
    during the self-calibration), so the model was fitted on documents the KB no longer has (hostile21 finding 9).
    `row`: the KB as this ingest left it (its revision one past the one the last ingest left)."""
    stored = row.grading_model or {}
    if stored.get("calibrated_by", "labels") == "labels" and stored:
        return False  # fitted on a team's own labels: only `calibrate` replaces it
    if not stored:
        return True
    lost = stored.get("revision") is not None and stored["revision"] != row.revision - 1
    return lost or stored.get("moved", 0) + moved >= max(1, REFIT_SHARE * documents)


def after_ingest(rt, kb: str, moved: int, progress: bool) -> dict | None:
    """The ingest's hook: (re)fit and store the KB's own model when `needs_refit`; what was done, for the ingest
    report (None: nothing to do). `moved`: documents this ingest added, changed or removed."""
    from datetime import datetime

    row = rt.catalog.require(kb)
    documents = len(rt.catalog.documents(kb))
    if not rt.settings.self_calibrate or rt.settings.grading_of(row.grading) != "ranker":
        return None
    if not needs_refit(row, documents, moved):
        stored = row.grading_model or {}
        if stored.get("calibrated_by") == "self":  # carried: this ingest is accounted for
            moved_since = stored.get("moved", 0) + moved
            rt.catalog.set_grading_model(kb, {**stored, "revision": row.revision, "moved": moved_since})
        return None
    result = calibrate_kb(
        rt.grader,
        rt.catalog,
        rt.embedder,
        kb,
        rt.settings.thresholds(rt.embedder.name, "ranker"),
        datetime.now(UTC).isoformat(timespec="seconds"),
        progress=progress,
    )
    if result.model is not None:
        model = result.model.model_copy(update={"revision": row.revision, "moved": 0})
        rt.catalog.set_grading_model(kb, model.model_dump(mode="json", by_alias=False))
    return {
        "generated": result.generated,
        "off_topic": result.off_topic,
        "seconds": result.seconds,
        "held_out": result.held_out,
        "stored": result.model is not None,
        "skipped": result.skipped,
    }
