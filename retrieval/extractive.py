"""The offline answer: the passages of the evidence that best match the question, quoted with citations."""

from __future__ import annotations

import re

from prompts.executor import NOTHING_FOUND, OFFLINE_NOTE, OFFLINE_SHORT

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


def extractive_answer(question: str, evidence: list[dict], lang: str,
                      parts: list[tuple[str, str | None]] | None = None) -> str:
    """`parts`: (sub-question, the doc_key its lookup returned first, if any), in the order they were asked."""
    key = "zh" if lang == "zh" else "en"
    if not evidence:
        return f"{NOTHING_FOUND[key]}\n{OFFLINE_SHORT[key]}"
    out = [OFFLINE_NOTE[key]]
    for doc in pick_documents(evidence, parts or [(question, None)]):
        passages = best_passages(question, doc["content"])
        if passages:
            out.append(f"**{doc['title']}** [{doc['doc_key']}]\n" + "\n\n".join(passages))
    return "\n\n".join(out)


def cited(answer: str, evidence: list[dict]) -> list[dict]:
    """The evidence documents the answer cites by doc_key; all of them if it cites none by name.

    Evidence holds each document once (the nodes add to it only through `add_evidence`)."""
    chosen = [d for d in evidence if d["doc_key"] in answer] or evidence
    return [{"doc_key": d["doc_key"], "title": d["title"], "domain": d["domain"]} for d in chosen]
