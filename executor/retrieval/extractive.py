"""The offline answer: the passages of the evidence that best match the question, quoted with citations."""

from __future__ import annotations

import re

from executor.prompts.executor import NOTHING_FOUND, OFFLINE_NOTE, OFFLINE_SHORT

MAX_DOCS = 3
PASSAGES_PER_DOC = 2
MAX_PASSAGE_CHARS = 400
WORD = re.compile(r"[A-Za-z0-9_]{2,}")
CJK = re.compile(r"[\u3400-\u9fff]")


def terms(text: str) -> set[str]:
    """ASCII words, and Chinese character bigrams (there are no spaces to split on)."""
    lowered = text.casefold()
    out = set(WORD.findall(lowered))
    chars = [c for c in lowered if CJK.match(c)]
    out |= {a + b for a, b in zip(chars, chars[1:])}
    return out


def best_passages(question: str, content: str, n: int = PASSAGES_PER_DOC) -> list[str]:
    wanted = terms(question)
    passages = [p.strip() for p in re.split(r"\n\s*\n", content) if p.strip() and not p.strip().startswith("#")]
    if not passages:
        return []
    scored = sorted(range(len(passages)), key=lambda i: (-len(wanted & terms(passages[i])), i))[:n]
    picked = [passages[i] for i in sorted(scored)]
    return [p if len(p) <= MAX_PASSAGE_CHARS else p[: MAX_PASSAGE_CHARS - 1] + "…" for p in picked]


def pick_documents(evidence: list[dict], parts: list[tuple[str, str | None]], n: int = MAX_DOCS) -> list[dict]:
    """One document per part of the question first: the primary result of its lookup when it sent one,
    else the evidence that best matches its words; then the rest in evidence order."""
    by_key = {d["doc_key"]: d for d in evidence}
    chosen: list[dict] = []
    for query, primary in parts:
        wanted = terms(query)
        best = by_key.get(primary) if primary else None
        if best is None:
            best = max(evidence, key=lambda d: len(wanted & terms(f"{d['title']} {d['content']}")), default=None)
        if best is not None and best not in chosen:
            chosen.append(best)
    chosen += [d for d in evidence if d not in chosen]
    return chosen[: max(n, len(parts))]


# "X 是什么 / what is X": the answer about X opens with the sentence that says what X is
DEFINITION_QUESTIONS = [
    re.compile(r"^(?:什么是|何为)\s*(?P<x>.+?)\W*$"),
    re.compile(r"^(?P<x>.+?)\s*(?:是什么意思|是什么|是啥|指什么)\W*$"),
    re.compile(r"^what\s+does\s+(?P<x>.+?)\s+mean\W*$", re.I),
    re.compile(r"^what(?:'s|\s+is|\s+are)\s+(?:an?\s+|the\s+)?(?P<x>.+?)\W*$", re.I),
]
DEFINING = re.compile(
    r"\s*(?:[（(][^）)]*[）)])?\s*(?:是|表示|指的?是|意味着|代表|(?:is|are|means|refers\s+to|stands\s+for)\b)", re.I
)
SENTENCE_END = re.compile(r"(?<=[。！？!?])|(?<=\.)\s+|\n+")
FACTS = {"zh": "知识图谱：", "en": "From the knowledge graph:"}


def subject_matched(patterns: list[re.Pattern], question: str) -> str | None:
    """The `x` group of the first pattern that matches the whole question (what it asks about)."""
    for pattern in patterns:
        m = pattern.match(question.strip())
        if m and m.group("x").strip():
            return m.group("x").strip()
    return None


def defined_term(question: str) -> str | None:
    return subject_matched(DEFINITION_QUESTIONS, question)


def defining_sentence(term: str, text: str) -> str | None:
    """The first sentence in which `term` is followed by a defining verb (是 / 表示 / is / means ...)."""
    plain = text.replace("`", "").replace("**", "")
    for sentence in SENTENCE_END.split(plain):
        sentence = sentence.strip().lstrip("#>-* ").strip()
        at = sentence.casefold().find(term.casefold())
        if at >= 0 and DEFINING.match(sentence, at + len(term)):
            return sentence
    return None


def _section(doc: dict, question: str, terms: list[str], read_document) -> str | None:
    passages = best_passages(question, doc["content"])
    for term in terms:
        if term.casefold() not in f"{doc['title']} {doc['content']}".casefold():
            continue
        sentence = defining_sentence(term, doc["content"])
        if sentence is None and read_document is not None:  # the chunk sent may not be the one that defines it
            sentence = defining_sentence(term, read_document(doc.get("kb"), doc["doc_key"]))
        if sentence:
            passages = [sentence] + [p for p in passages if sentence not in p.replace("`", "").replace("**", "")]
            break
    if not passages:
        return None
    return f"**{doc['title']}** [{doc['doc_key']}]\n" + "\n\n".join(passages)


def extractive_answer(
    question: str,
    evidence: list[dict],
    lang: str,
    parts: list[tuple[str, str | None]] | None = None,
    graph_facts: list[str] | None = None,
    read_document=None,
) -> str:
    """`parts`: (sub-question, the doc_key its lookup returned first, if any), in the order they were asked;
    `graph_facts`: what graph navigation said this turn; `read_document(kb, doc_key)`: a document's full text,
    where a definition is looked for when the evidence sent lacks it."""
    key = "zh" if lang == "zh" else "en"
    if not evidence and not graph_facts:
        return f"{NOTHING_FOUND[key]}\n{OFFLINE_SHORT[key]}"
    parts = parts or [(question, None)]
    terms = [t for t in dict.fromkeys(defined_term(q) for q, _ in [(question, None), *parts]) if t]
    out = [OFFLINE_NOTE[key]]
    for doc in pick_documents(evidence, parts) if evidence else []:
        section = _section(doc, question, terms, read_document)
        if section:
            out.append(section)
    if graph_facts:
        out.append(FACTS[key] + "\n" + "\n".join(f"- {line}" for fact in graph_facts for line in fact.splitlines()))
    return "\n\n".join(out)


def cited(answer: str, evidence: list[dict]) -> list[dict]:
    """The evidence documents the answer cites by doc_key; all of them if it cites none by name.

    Evidence holds each document once (the nodes add to it only through `add_evidence`)."""
    chosen = [d for d in evidence if d["doc_key"] in answer] or evidence
    return [{"doc_key": d["doc_key"], "title": d["title"], "domain": d["domain"]} for d in chosen]
