"""The README stays a five-minute page, and no relative link in it or in docs/ leads nowhere."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
PAGES = sorted((ROOT / "docs").rglob("*.md"))
README_MAX_LINES = 260

FENCE = re.compile(r"^```.*?^```", re.M | re.S)
CODE_SPAN = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"\[[^\]\n]*\]\(([^)\s]+)\)")


def relative_links(page: Path) -> list[str]:
    """The targets of the page's Markdown links that point into the repository (code is not a link)."""
    text = CODE_SPAN.sub("", FENCE.sub("", page.read_text(encoding="utf-8")))
    targets = (m.group(1) for m in LINK.finditer(text))
    return [t for t in targets if not re.match(r"^([a-z][a-z0-9+.-]*:|#)", t)]


def test_readme_is_a_short_page():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines; move detail into docs/"


def test_readme_links_to_the_docs():
    targets = relative_links(README)
    assert "docs/index.md" in targets
    assert "ARCHITECTURE.md" in targets


@pytest.mark.parametrize("page", [README, *PAGES], ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_points_to_a_file(page):
    # resolved from the folder the page is read in (docs/architecture.md is a link to ARCHITECTURE.md)
    broken = [t for t in relative_links(page) if not (page.parent / t.split("#")[0]).is_file()]
    assert broken == [], f"{page.relative_to(ROOT)} links to missing files: {broken}"
