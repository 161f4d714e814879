"""A heading put into Chinese the way a Chinese user asks about an English page: its common words translated by a
small bundled glossary, its names (`Helm`, `util-linux`, `libblkid`) and the words it lacks kept as they are.

Self-calibration asks half of an English page's headings in Chinese. Asked with the English heading inside
("关于Creating a New Translation有什么说明？"), a question shares the page's words, which a Chinese user's question
("怎么给 systemd 新增一种语言的翻译？") does not: fitted on such questions, the ranker learnt that a Chinese
question is answered by word overlap, and scored a user's Chinese paraphrase near 0 (its page first, "nothing
found"). Word by word is no translation, but it puts the meaning in Chinese and leaves only the names shared, as
a user's question does (where the glossary has the words). Written for this project (no dictionary copied): the
~1,900 words software documentation writes most, in glossary.tsv (its header says how they were chosen).
"""

from __future__ import annotations

import re
from importlib import resources

from executor.retrieval.vocabulary import CJK_RUN, STOPWORDS, cjk_words

# the data lives in glossary.tsv beside this file (package data): `english<TAB>chinese`, read once at import
GLOSSARY_FILE = "glossary.tsv"


def _load(text: str, name: str = GLOSSARY_FILE) -> dict[str, str]:
    """English word -> Chinese word from the TSV's lines; '#' lines are comments. A malformed line or an English word
    given twice is an error naming the line, not a silently dropped or overwritten entry."""
    out: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        en, tab, zh = line.partition("\t")
        if not tab or not en or not zh or en != en.strip().lower() or zh != zh.strip() or "\t" in zh:
            raise ValueError(f"{name}:{number}: expected 'english<TAB>chinese', got {line!r}")
        if en in out:
            raise ValueError(f"{name}:{number}: {en!r} is given twice")
        out[en] = zh
    return out


GLOSSARY: dict[str, str] = _load(
    resources.files("executor.retrieval").joinpath(GLOSSARY_FILE).read_text(encoding="utf-8")
)
WORD = re.compile(r"[A-Za-z][A-Za-z0-9_.\-+#]*|\S")


def _entry(word: str) -> str | None:
    """The glossary's Chinese for an English word, plural or -ing/-ed forms too."""
    low = word.lower()
    for stem in (low, low[:-1] if low.endswith("s") else "", low[:-2] if low.endswith("es") else ""):
        if stem in GLOSSARY:
            return GLOSSARY[stem]
    for suffix in ("ing", "ed"):
        if low.endswith(suffix) and len(low) > len(suffix) + 2:
            base = low[: -len(suffix)]
            for stem in (base, base + "e", base[:-1] if base[-1:] == base[-2:-1] else ""):
                if stem in GLOSSARY:
                    return GLOSSARY[stem]
    return None


def to_chinese(subject: str) -> str | None:
    """`subject` (an English heading) with its glossary words in Chinese and its other words (names, and words the
    glossary lacks) kept; its stop words dropped; None when no word of it is in the glossary."""
    out: list[str] = []
    translated = False
    for word in WORD.findall(subject):
        if not word[0].isalpha() or word.lower() in STOPWORDS:
            continue
        zh = _entry(word)
        if zh is not None:
            if not out or out[-1] != zh:
                out.append(zh)
            translated = True
        else:  # a name, or a word the glossary lacks: kept in English, as a user does who knows no Chinese for it
            out.append(f" {word} ")
    text = re.sub(r"\s+", " ", "".join(out)).strip()
    return text if translated and text else None


# the other way, for matching a Chinese question's words against an English page: each Chinese word with the
# English words (and their plurals) the glossary puts into it (配置: config, configuration, configure)
ENGLISH: dict[str, frozenset[str]] = {
    zh: frozenset(w for en, z in GLOSSARY.items() if z == zh for w in (en, f"{en}s")) for zh in set(GLOSSARY.values())
}


# and each Chinese word's one English word, for asking about a Chinese page in English: the glossary's first
ONE_ENGLISH: dict[str, str] = {}
for _en, _zh in GLOSSARY.items():
    ONE_ENGLISH.setdefault(_zh, _en)


def to_english(subject: str) -> str | None:
    """`subject` (a Chinese heading) in the glossary's English words, its names (`Docker Compose`) kept and the
    Chinese words the glossary lacks dropped (an English user writes none); None when the glossary has fewer than
    half of its Chinese words or it comes to one word. Self-calibration asked an English question on a Chinese
    page only where its subject was a name: the ranker never saw an English question on a Chinese page, which
    shares no word with it (only the dense vectors see across), and put a Chinese page sharing one common word
    above it."""
    out: list[str] = []
    chinese = translated = 0
    for part in re.split(rf"(\s+|{CJK_RUN.pattern})", subject):
        if not part.strip():
            continue
        if CJK_RUN.fullmatch(part):
            for word in cjk_words(part):
                chinese += 1
                en = ONE_ENGLISH.get(word)
                if en is not None:
                    translated += 1
                    if not out or out[-1] != en:
                        out.append(en)
        elif re.search(r"[A-Za-z0-9]", part):
            out.append(part.strip())
    # one word alone ("config" of 配置位置) is no subject a question could be about
    return " ".join(out) if chinese and 2 * translated >= chinese and len(out) >= 2 else None


def equivalents(term: str, page_language: str) -> frozenset[str]:
    """`term` (a question's, as `vocabulary.terms` writes it) and what a page in `page_language` may write for
    it: a Chinese word's glossary English on an English page; any other term stays itself. Only this way round:
    an English question's words put into Chinese made the Chinese page of its answer outrank the English one
    (Helm: best page in the other language for 29 of 105 questions -> 36, HIGHLY_RELEVANT 11 -> 9)."""
    if page_language == "en" and not term.isascii():
        return ENGLISH.get(term, frozenset()) | {term}
    return frozenset({term})
