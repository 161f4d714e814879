"""Which English words to put in `executor/retrieval/glossary.tsv`: the words software documentation writes most,
counted on documentation Executor is never measured on.

The glossary's Chinese is written by hand; this only chooses the English. A word counts by how many *packages*
(top-level folders of a root: /usr/share/doc/<package>, an unpacked sdist) write it, not by its raw count, so a
single long manual does not crown its own words. Licence texts and Debian packaging changelogs are skipped (their
words are the licence's and the packager's), as are the held-out evaluation corpora (never pass
executor/kb/sample, /work/shared/corpora, or the docs of pip, hatch, starlette, black, helm).

    python -m evals.build_glossary_words /usr/share/doc /tmp/sdists/Django-5.2/docs --top 4000 > words.tsv

prints `word<TAB>packages<TAB>count`, most packages first, plurals and -ing/-ed forms folded into a base form the
same text also writes.
"""

from __future__ import annotations

import argparse
import gzip
import html
import re
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from executor.retrieval.vocabulary import STOPWORDS

# prose words: lower-case, or capitalised at a sentence or heading start; ALLCAPS and camelCase are identifiers
WORD = re.compile(r"(?<![\w./\-])([A-Z]?[a-z]{2,})(?![\w/\-]|\.\w)")
TAG = re.compile(r"<[^>]+>")
SKIPPED = re.compile(r"^(copyright|changelog\.debian|news\.debian|authors|thanks|license|licence|copying)", re.I)
DOC = re.compile(
    r"^(readme|news|faq|todo|changelog|changes|install|usage|hacking|contributing)|\.(md|txt|rst|html?)$", re.I
)


def documents(root: Path) -> Iterator[tuple[str, str]]:
    """(package, text) for each documentation file under `root`; a file's package is its top folder."""
    for path in sorted(root.rglob("*")):
        if not path.is_file() or path.is_symlink():
            continue
        name = path.name[:-3] if path.name.endswith(".gz") else path.name
        if SKIPPED.match(name) or not DOC.search(name):
            continue
        raw = gzip.open(path).read() if path.name.endswith(".gz") else path.read_bytes()
        if b"\0" in raw[:4096]:
            continue
        text = raw.decode("utf-8", "replace")
        if name.lower().endswith((".html", ".htm")):
            text = html.unescape(TAG.sub(" ", text))
        rel = path.relative_to(root).parts
        yield (f"{root}/{rel[0]}" if len(rel) > 1 else str(root)), text


def count(roots: list[Path]) -> tuple[dict[str, set[str]], Counter[str]]:
    """Per word: the packages that write it, and how many times it is written."""
    packages: dict[str, set[str]] = {}
    total: Counter[str] = Counter()
    for root in roots:
        for package, text in documents(root):
            for match in WORD.finditer(text):
                word = match.group(1).lower()
                if word not in STOPWORDS:
                    total[word] += 1
                    packages.setdefault(word, set()).add(package)
    return packages, total


def base(word: str, seen: Counter[str]) -> str:
    """The form the glossary keys `word` under when the text also writes it: configs, configuring -> config."""
    for suffix, add in (("ies", "y"), ("es", ""), ("s", ""), ("ing", ""), ("ing", "e"), ("ed", ""), ("ed", "e")):
        if word.endswith(suffix) and len(word) > len(suffix) + 2 and not word.endswith("ss"):
            stem = word[: -len(suffix)] + add
            if seen[stem] > seen[word] / 4:
                return stem
    return word


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Count the words of documentation folders, by package.")
    parser.add_argument("roots", nargs="+", type=Path, help="folders of documentation, one package per top folder")
    parser.add_argument("--top", type=int, default=4000, help="how many words to print")
    args = parser.parse_args(argv)
    missing = [str(r) for r in args.roots if not r.is_dir()]
    if missing:
        print(f"build_glossary_words: not a folder: {', '.join(missing)}", file=sys.stderr)
        return 2
    packages, total = count(args.roots)
    folded_packages: dict[str, set[str]] = {}
    folded_total: Counter[str] = Counter()
    for word in total:
        key = base(word, total)
        folded_packages.setdefault(key, set()).update(packages[word])
        folded_total[key] += total[word]
    ranked = sorted(folded_packages, key=lambda w: (-len(folded_packages[w]), -folded_total[w], w))
    for word in ranked[: args.top]:
        print(f"{word}\t{len(folded_packages[word])}\t{folded_total[word]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
