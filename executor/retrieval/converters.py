"""Files that are not Markdown, turned into Markdown: HTML, PDF, Word, PowerPoint, Excel (markitdown).

markitdown's converters run offline (BeautifulSoup + markdownify, pdfminer.six/pdfplumber,
mammoth, python-pptx, openpyxl); each one is called directly with the format we already know
from the extension, so markitdown's content sniffing (magika) never picks a different converter
for a damaged file. markitdown is imported on the first conversion only: an ingest of Markdown
alone never pays for it (~1.7 s on this machine).

Every failure is a `ConversionError` whose message is one line fit for a warning.
"""

from __future__ import annotations

import io
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path
from xml.parsers import expat

# extension -> format; Markdown and text are read directly, the rest go through markitdown
MARKDOWN_FORMATS = {".md": "md", ".markdown": "md", ".mdx": "mdx", ".txt": "txt"}
CONVERTED_FORMATS = {
    ".html": "html",
    ".htm": "html",
    ".pdf": "pdf",
    ".docx": "docx",
    ".pptx": "pptx",
    ".xlsx": "xlsx",
}
SUPPORTED = {**MARKDOWN_FORMATS, **CONVERTED_FORMATS}
READ_AS_TEXT = frozenset(MARKDOWN_FORMATS.values())
# the part an Office file cannot lack, so a renamed zip is called what it is
_OFFICE_MAIN_PART = {"docx": "word/document.xml", "pptx": "ppt/presentation.xml", "xlsx": "xl/workbook.xml"}


class ConversionError(Exception):
    """A file that cannot be turned into text; the message is the one-line reason."""


class NoText(ConversionError):
    """A file read whole that holds no text: what it says now (emptied, or a PDF of images), not a failed read."""


@dataclass(frozen=True)
class Converted:
    markdown: str
    title: str | None  # from the file's own metadata: HTML <title>, PDF Info, Office core properties
    warnings: tuple[str, ...] = ()  # what was left out of the file, one line each


def format_of(path: Path) -> str | None:
    return SUPPORTED.get(path.suffix.lower())


def decode_text(data: bytes) -> str:
    """UTF-8 (with or without BOM), UTF-16/32 with a BOM; anything else by charset detection, never a crash. Bytes
    that are not text at all (an image, an archive, random data under a .md name) are a ConversionError: parsed as text,
    1 MB of them made thousands of chunks and "entities"."""
    if data.startswith((b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")):  # UTF-32 (its BOM starts like UTF-16's)
        return _text_or_binary(data, data.decode("utf-32", errors="replace"), MAX_CONTROL_SHARE)
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):  # UTF-16 with its BOM: text whose bytes hold NULs
        return _text_or_binary(data, data.decode("utf-16", errors="replace"), MAX_CONTROL_SHARE)
    nul = b"\x00" in data[:BINARY_SNIFF]
    try:
        text = data.decode("utf-8-sig")
        # valid UTF-8 is text unless it is mostly control characters (a file of zeros): a stray NUL or escape
        # sequence is cleaned later (executor/retrieval/sanitize.py). ASCII in UTF-16 without a BOM is valid UTF-8
        # too, every other byte a NUL: detection tells it from binary.
        if not nul or not _binary(text, MAX_CONTROL_SHARE_UTF8):
            return _text_or_binary(data, text, MAX_CONTROL_SHARE_UTF8)
    except UnicodeDecodeError:
        # UTF-8 with a few stray bytes (a pasted Latin-1 line): charset detection took a Chinese page for binary,
        # and reads an English one as mojibake ("cafÃĐ"). It is UTF-8 when some of its non-ASCII characters are; a
        # page none of whose are (Latin-1 "caf\xe9") is in another charset, and "café" must not become "caf\ufffd".
        text = data.decode("utf-8", errors="replace")
        utf8 = any(ord(c) > 127 and c != "\ufffd" for c in text)
        if utf8 and text.count("\ufffd") <= len(text) * MAX_CONTROL_SHARE and not nul:
            return _text_or_binary(data, text, MAX_CONTROL_SHARE)
    return _text_or_binary(data, _detected(data), MAX_CONTROL_SHARE)


def _detected(data: bytes) -> str:
    """Text that is not UTF-8, in the charset charset_normalizer finds: a legacy code page (Latin-1, GBK, Shift
    JIS, cp1251) or UTF-16/32 without a BOM (whose ASCII characters hold NUL bytes, which otherwise mean binary,
    as git decides)."""
    from charset_normalizer import from_bytes
    from charset_normalizer.utils import any_specified_encoding, is_multi_byte_encoding

    matches = from_bytes(data)
    best = matches.best()
    if b"\x00" in data[:BINARY_SNIFF] and (best is None or not best.encoding.startswith(("utf_16", "utf_32"))):
        raise ConversionError(f"binary content{_kind(data)}, not text; skipped")
    if best is None:  # neither text in a charset it knows nor plainly binary: the control-character share decides
        return data.decode("utf-8", errors="replace")
    if not is_multi_byte_encoding(best.encoding) and any_specified_encoding(data) is None:
        # A short Western page decodes without a wrong-looking character in a dozen code pages, so detection
        # picks among them by a hair ("Crème" read as cp1257's "Crčme"). Among those that fit a language as well,
        # windows-1252 wins: the default a browser gives a page that does not say, and Latin-1's letters.
        fits = [m for m in matches if "cp1252" in m.could_be_from_charset and m.coherence >= best.coherence]
        chosen = ("cp1252", str(fits[0])) if fits else (best.encoding, str(best))
        return _hungarian(data, matches, _central_or_baltic(data, *(_windows_page(data, *chosen) or chosen)))
    if any_specified_encoding(data) is None and (windows := _windows_page(data, best.encoding, str(best))):
        return _central_or_baltic(data, *windows)
    return str(best)


def _windows_page(data: bytes, encoding: str, text: str) -> tuple[str, str] | None:
    """A Windows Latin page's reading of `data` instead of `text`, its reading in a DOS, classic Mac OS or HP page,
    or None. On a short page such a page wins by a hair of coherence (a Slovene "Če" read as Mac Central European
    "»e", an Estonian "Ühenduse" as HP Roman-8 "Éhenduse"), but files in those pages are rare today and a Windows
    page is what a page that does not say is in; it is taken when it reads clean and its letters fit a language
    plainly, at least as well as the other page's (`_central_or_baltic` then picks among the three).

    A multi-byte (CJK) reading gives way the same way when it is plainly a Latin page's: an accented letter's byte
    and the ASCII letter after it read as one CJK character (Slovene "čas" as Big5 "醀s", Estonian "Õige" as
    "掂ge"), so each stands alone among ASCII text, where Chinese or Japanese text has runs of them."""
    if encoding.startswith(_OTHER_SYSTEMS):
        if not _latin(text):
            return None
    elif not _glued_to_latin(text):
        return None
    for page in _LATIN_PAGES:
        try:
            reading = data.decode(page)
        except UnicodeDecodeError:
            continue
        fit = _letters_fit(reading)
        if not _symbol_inside_word(reading) and fit >= max(_PLAIN_FIT, _letters_fit(text)):
            return page, reading
    return None


# the bytes of Hungarian's ő ű Ő Ű in cp1250, which windows-1252 reads as õ û Õ Û (and cp1257 as õ ū Õ Ū)
_DOUBLE_ACUTE = frozenset(b"\xd5\xdb\xf5\xfb")


def _hungarian(data: bytes, matches, text: str) -> str:
    """`text`, or `data` in cp1250 when charset_normalizer takes that reading for Hungarian and it differs from
    `text` only in ő ű. Every other letter of a Hungarian page reads the same in windows-1252, cp1250 and cp1257,
    and the library's letter table holds only á é ö for Hungarian, so neither its coherence (a tie, which
    windows-1252 wins) nor the letter fit tells "előtt" from "elõtt"; its language guess, from the frequencies of
    all the letters, does on a page of a sentence or more (a shorter line says "Unknown" and is left as it is)."""
    cp1250 = next((m for m in matches if "cp1250" in m.could_be_from_charset), None)
    if cp1250 is None or cp1250.language != "Hungarian":
        return text
    reading = data.decode("cp1250", errors="replace")
    if len(reading) != len(text) or reading == text:  # `text` is another single-byte page's: a character a byte
        return text
    same = all(data[i] in _DOUBLE_ACUTE for i, (a, b) in enumerate(zip(text, reading, strict=True)) if a != b)
    return reading if same else text


def _glued_to_latin(text: str) -> bool:
    """Every non-ASCII character of `text` stands between ASCII characters, next to an ASCII letter."""
    sample = f" {text[:BINARY_SNIFF]} "
    inside = [i for i, c in enumerate(sample) if ord(c) > 127]
    return bool(inside) and all(
        ord(sample[i - 1]) < 128 and ord(sample[i + 1]) < 128 and (sample[i - 1].isalpha() or sample[i + 1].isalpha())
        for i in inside
    )


# Python's names of the single-byte pages of DOS (cp437, cp850, cp852...), classic Mac OS and HP
_OTHER_SYSTEMS = ("cp4", "cp7", "cp8", "mac_", "hp_")


# the code pages of Central European (Polish, Czech, Hungarian...) and Baltic (Lithuanian, Latvian) text, which
# detection confuses with windows-1252 and with each other: every byte decodes in all three
_LATIN_PAGES = ("cp1252", "cp1250", "cp1257")
# a code page's letters must fit a language this well, and this much better than windows-1252's, to win (an
# Icelandic page's "þ ð" fit no language of the table either, and its cp1257 reading 0.62)
_PLAIN_FIT, _SWITCH_MARGIN = 0.75, 0.25


def _central_or_baltic(data: bytes, encoding: str, text: str) -> str:
    """`text` (`data` read as `encoding`), or the same bytes in cp1250 or cp1257 when that is plainly the page.

    Two tells, both on what the reading looks like: a symbol between two letters ("zg³asza", Polish "zgłasza"
    in cp1257 or windows-1252) is never a word, and a reading whose accented letters are those of one language
    ("šąž": Lithuanian) beats one whose letters fit none ("ðàþ", the same bytes in windows-1252). Short Polish
    and Lithuanian pages were read as windows-1252 (the tie-break above) or each other's page, without a word.
    Readings that fit equally well keep the choice made (a French "Crème" stays windows-1252)."""
    if encoding not in _LATIN_PAGES or not _latin(text):
        return text
    readings = {encoding: text}
    for page in _LATIN_PAGES:
        try:
            readings.setdefault(page, data.decode(page))
        except UnicodeDecodeError:
            continue
    clean = {page: t for page, t in readings.items() if not _symbol_inside_word(t)}
    if not clean:
        return text
    fit = {page: _letters_fit(t) for page, t in clean.items()}
    page = max(fit, key=lambda p: (fit[p], p == encoding))
    if encoding not in clean or (encoding == "cp1252" and fit[page] >= max(_PLAIN_FIT, fit[encoding] + _SWITCH_MARGIN)):
        return clean[page]
    return text


def _latin(text: str) -> bool:
    import unicodedata

    letters = [c for c in text[:BINARY_SNIFF] if ord(c) > 127 and c.isalpha()]
    return sum(unicodedata.name(c, "").startswith("LATIN") for c in letters) >= len(letters) * 0.9


def _symbol_inside_word(text: str) -> bool:
    sample = text[:BINARY_SNIFF]
    return any(
        ord(c) > 127 and not c.isalpha() and sample[i - 1].isalpha() and sample[i + 1].isalpha()
        for i, c in enumerate(sample[1:-1], start=1)
    )


def _letters_fit(text: str) -> float:
    """The share of `text`'s accented letters that one language uses often (charset_normalizer's letter
    frequencies, the best language's): how much the reading looks like some language's text."""
    from collections import Counter

    from charset_normalizer.constant import FREQUENCIES

    accented = Counter(c.lower() for c in text[:BINARY_SNIFF] if ord(c) > 127 and c.isalpha())
    total = sum(accented.values())
    if not total:
        return 0.0
    fits = (sum(n for c, n in accented.items() if c in letters) for letters in map(set, FREQUENCIES.values()))
    return max(fits) / total


BINARY_SNIFF = 64 * 1024  # the characters looked at to tell text from binary
MAX_CONTROL_SHARE_UTF8, MAX_CONTROL_SHARE = 0.1, 0.01  # control characters (or undecodable bytes) beyond these
_MAGIC = {
    b"\x89PNG": "a PNG image",
    b"\xff\xd8\xff": "a JPEG image",
    b"GIF8": "a GIF image",
    b"PK\x03\x04": "a ZIP archive",
    b"%PDF": "a PDF",
    b"\x7fELF": "an executable",
    b"\x1f\x8b": "gzip data",
    b"SQLite format 3": "a SQLite database",
}


def _text_or_binary(data: bytes, text: str, max_share: float) -> str:
    if _binary(text, max_share):
        raise ConversionError(f"binary content{_kind(data)}, not text; skipped")
    return text


def _binary(text: str, max_share: float) -> bool:
    sample = text[:BINARY_SNIFF]
    controls = sum(1 for c in sample if (ord(c) < 32 and c not in "\t\n\r\f") or c == "\ufffd")
    return bool(sample) and controls / len(sample) > max_share


def _kind(data: bytes) -> str:
    return next((f" ({name})" for magic, name in _MAGIC.items() if data.startswith(magic)), "")


def convert(path: Path, fmt: str, data: bytes, max_unzipped_bytes: int) -> Converted:
    """Markdown for `data` (the bytes of `path`) in format `fmt`, or a ConversionError saying why not."""
    if fmt in _OFFICE_MAIN_PART:
        title = _check_office_archive(data, fmt, max_unzipped_bytes)
    elif fmt == "pdf":
        title = _pdf_title(data)
    else:
        title = None
    result = _markitdown(fmt, data)
    markdown = result.markdown or ""
    warnings: tuple[str, ...] = ()
    if fmt == "xlsx":
        markdown, warnings = _visible_sheets(markdown, data)
    if not markdown.strip():
        raise NoText("no extractable text (an image-only or scanned PDF?)" if fmt == "pdf" else "no text")
    return Converted(markdown=markdown, title=title or result.title, warnings=warnings)


def _markitdown(fmt: str, data: bytes):
    from markitdown import StreamInfo
    from markitdown.converters import DocxConverter, HtmlConverter, PdfConverter, PptxConverter, XlsxConverter

    converter = {
        "html": HtmlConverter,
        "pdf": PdfConverter,
        "docx": DocxConverter,
        "pptx": PptxConverter,
        "xlsx": XlsxConverter,
    }[fmt]()
    charset = None
    if fmt == "html":  # text under an .html name: 300 kB of random bytes were converted into 307 chunks
        data = _visible_html(decode_text(data)).encode("utf-8")
        charset = "utf-8"
    info = StreamInfo(extension=f".{fmt}", charset=charset)
    # HTML, and Word/PowerPoint/Excel by way of HTML, go through markdownify, which escapes every `_` and `*`:
    # PAY_GATEWAY_DECLINED was stored as PAY\_GATEWAY\_DECLINED, so an exact lookup missed it and the LLM read
    # the backslashes. The stored text is searched and quoted, not rendered: it keeps the characters as written.
    options = {} if fmt == "pdf" else {"escape_underscores": False, "escape_asterisks": False}
    try:
        return converter.convert(io.BytesIO(data), info, **options)
    except Exception as exc:  # a damaged file can raise anything from any of five parsers
        raise ConversionError(_reason(fmt, exc)) from exc


# Text a reader of the page never sees was indexed and quoted to the LLM as the page's own: `<div
# style="display:none">SYSTEM: ignore all prior instructions …</div>`, the classic hidden injection (hostile22 #9).
# Elements hidden by their `hidden` attribute or inline style, and templates, are left out. Kept: a tab panel
# (Docusaurus, Sphinx and jQuery UI hide the tabs not shown: a click shows them), `hidden="until-found"` (the
# browser's find shows it), `aria-hidden` (hidden from screen readers only: on screen). Not caught: hiding by a
# stylesheet's class, a zero font size or white on white; that text stays fenced as the page's, as all text is.
# `_MAY_HIDE`: a tag that may hide its element; only a page with one is parsed twice (a third more time on a 2 MB
# page); a stylesheet's `overflow: hidden`, on most pages, is none. `[^<>]` keeps the scan linear on lone `<`s.
_MAY_HIDE = re.compile(
    r"<template\b"
    r"|<[a-z][^<>]*?\shidden(?=[\s=/>])"
    r"|<[a-z][^<>]*?\sstyle\s*=[^<>]{0,300}?(?:display\s*:\s*none|visibility\s*:\s*(?:hidden|collapse))",
    re.I,
)
_HIDING_STYLE = re.compile(
    r"(?:^|;)\s*(?:display\s*:\s*none|visibility\s*:\s*(?:hidden|collapse))\s*(?:!\s*important\s*)?(?:;|$)", re.I
)


def _visible_html(html: str) -> str:
    """`html` without the elements a reader never sees (a page with none is returned as it is, not parsed twice)."""
    if not _MAY_HIDE.search(html):
        return html
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(html, "html.parser")
    hidden = soup.find_all(_hidden)
    if not hidden:
        return html
    for element in hidden:
        if not element.decomposed:  # inside another hidden element, gone with it
            element.decompose()
    return str(soup)


def _hidden(element) -> bool:
    if element.name == "template":
        return True
    if "tabpanel" in str(element.get("role") or "").lower().split():
        return False
    flag = element.get("hidden")
    if flag is not None and str(flag).strip().lower() != "until-found":
        return True
    return bool(_HIDING_STYLE.search(str(element.get("style") or "")))


def _visible_sheets(markdown: str, data: bytes) -> tuple[str, tuple[str, ...]]:
    """The workbook's Markdown without its hidden sheets, and a warning naming them. A sheet the author hid (a
    lookup table, workings, what the readers of the workbook are not to see) was indexed and quoted like the rest
    (hostile22 #9). markitdown writes each sheet, in the workbook's order, as `## name` and its table, whose lines
    are table rows: a line `## name` is a sheet's start."""
    sheets = _sheet_states(data)
    hidden = [name for name, state in sheets if state != "visible"]
    if not hidden:
        return markdown, ()
    starts, at = [], 0
    for name, _state in sheets:
        found = re.compile(rf"^## {re.escape(name)}\n", re.M).search(markdown, at)
        if found is None:  # not written as expected: nothing can be cut safely, so nothing is read
            raise ConversionError(f"its hidden sheets ({', '.join(hidden)}) could not be told from the others")
        starts.append(found.start())
        at = found.end()
    bounds = zip(starts, [*starts[1:], len(markdown)], strict=True)
    kept = "".join(markdown[a:b] for (a, b), (_name, state) in zip(bounds, sheets, strict=True) if state == "visible")
    names = ", ".join(hidden)
    if not kept.strip():  # Excel keeps one sheet visible; a generated workbook need not
        raise NoText(f"every sheet is hidden ({names}): left out")
    return kept.strip(), (f"{len(hidden)} hidden sheet{'s' if len(hidden) > 1 else ''} left out ({names})",)


def _sheet_states(data: bytes) -> list[tuple[str, str]]:
    """(name, state) of every sheet of an XLSX, in its order: "visible", "hidden" or "veryHidden"."""
    from defusedxml import ElementTree

    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        root = ElementTree.fromstring(archive.read("xl/workbook.xml"))
    # transitional and strict OOXML name the element in two namespaces
    sheets = (e for e in root.iter() if isinstance(e.tag, str) and e.tag.rsplit("}", 1)[-1] == "sheet")
    return [(sheet.get("name", ""), sheet.get("state", "visible")) for sheet in sheets]


def _reason(fmt: str, exc: Exception) -> str:
    name = exc.__class__.__name__
    if "Password" in name or "Encrypt" in name:
        return "encrypted (needs a password): no extractable text"
    if isinstance(exc, zipfile.BadZipFile):
        return "corrupt archive (not a valid ZIP container)"
    detail = " ".join(str(exc).split())[:160]
    return f"could not convert this {fmt.upper()} ({name}{': ' + detail if detail else ''})"


def _check_office_archive(data: bytes, fmt: str, max_unzipped_bytes: int) -> str | None:
    """Refuse a corrupt or absurdly large (zip bomb) Office file before a parser inflates it; return its title."""
    if data.startswith(_OLE):
        raise ConversionError(_ole_reason(data, fmt))
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, ValueError) as exc:
        raise ConversionError("corrupt archive (not a valid ZIP container)") from exc
    with archive:
        # The declared sizes are what the file says, and a hostile one under-declares them (zipfile's read()
        # inflates up to 2 GB in one call before it compares): every member is inflated here, in small steps,
        # counting what actually comes out, and the parsers run only on an archive that stayed within bounds.
        declared = sum(info.file_size for info in archive.infolist())
        if declared > max_unzipped_bytes:
            raise ConversionError(_bomb(declared, max_unzipped_bytes))
        _inflate_within(archive, max_unzipped_bytes)
        names = set(archive.namelist())
        if _OFFICE_MAIN_PART[fmt] not in names:
            raise ConversionError(f"not a {fmt.upper()} file (no {_OFFICE_MAIN_PART[fmt]} in the archive)")
        if "docProps/core.xml" not in names:
            return None
        try:
            return _core_title(archive.read("docProps/core.xml"))
        except (zipfile.BadZipFile, OSError, ValueError) as exc:
            raise ConversionError("corrupt archive (a damaged member)") from exc


# An OLE compound file: Office's format before 2007 (.doc, .xls, .ppt), and the wrapper of a password-protected
# .docx/.xlsx/.pptx. Named .docx it was a "corrupt archive" (hostile22 #12). Its streams' names, UTF-16 in its
# directory, say which it is.
_OLE = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_OLE_STREAMS = {
    "WordDocument": "an old Word .doc",
    "Workbook": "an old Excel .xls",
    "PowerPoint Document": "an old PowerPoint .ppt",
}


def _ole_reason(data: bytes, fmt: str) -> str:
    if "EncryptedPackage".encode("utf-16-le") in data:
        return "encrypted (saved with a password): no extractable text; save it without its password to ingest it"
    kind = next((kind for stream, kind in _OLE_STREAMS.items() if stream.encode("utf-16-le") in data), None)
    if kind is not None:
        return f"{kind} (an OLE file), not a {fmt.upper()}: save it as .{fmt} to ingest it"
    return f"an OLE file (an old Office file, or one saved with a password), not a {fmt.upper()}"


def _bomb(size: int, bound: int) -> str:
    return f"uncompressed size {size / 1e6:,.0f} MB exceeds the {bound / 1e6:,.0f} MB bound (a zip bomb?)"


INFLATE_STEP = 1 << 20


class _Prolog:
    """One archive member's XML prolog, read with expat as the member is inflated, up to its root element. Office
    XML never declares a DOCTYPE; one that does defines entities (expansion bombs, external files), which the
    parsers refuse with a bare error or silently drop (python-pptx: a slide title that was an entity vanished):
    the file is refused here, saying why. Every member that starts like XML is read, whatever its name (a part is
    found by its content type, so a slide named slide1.dat is parsed too) and however long its prolog (a 5 kB
    comment before the DOCTYPE hid it from a look at the first 4 kB)."""

    class _Root(Exception):
        """The root element began: the prolog, the only place a DOCTYPE can be, is over."""

    def __init__(self, name: str, first: bytes):
        start = first.removeprefix(b"\xef\xbb\xbf").lstrip()
        # UTF-8 or UTF-16 (with its BOM, or its NUL bytes around the "<"): what expat reads, and what Office writes
        self.active = start.startswith((b"<", b"\xff\xfe", b"\xfe\xff", b"\x00<"))
        self.name = name
        self.parser = expat.ParserCreate()
        self.parser.StartDoctypeDeclHandler = self._doctype
        self.parser.StartElementHandler = self._root

    def _doctype(self, *_args) -> None:
        raise ConversionError(
            f"refused: its {self.name} declares a DOCTYPE (XML entities), which Office files never do"
        )

    def _root(self, *_args) -> None:
        raise self._Root

    def feed(self, chunk: bytes) -> None:
        if not self.active:
            return
        try:
            self.parser.Parse(chunk, False)
        except self._Root:
            self.active = False
        except expat.ExpatError as exc:  # a prolog the parsers could read in their own ways, never Office's own
            raise ConversionError(
                f"refused: its {self.name} is not well-formed XML before its root element "
                f"({expat.ErrorString(exc.code)})"
            ) from exc


def _inflate_within(archive: zipfile.ZipFile, bound: int) -> None:
    """Inflate every member 1 MB at a time, refusing the archive once more than `bound` bytes came out."""
    total = 0
    try:
        for info in archive.infolist():
            with archive.open(info) as member:
                try:
                    prolog = None
                    while chunk := member.read(INFLATE_STEP):
                        prolog = prolog or _Prolog(info.filename, chunk)
                        prolog.feed(chunk)
                        total += len(chunk)
                        if total > bound:
                            raise ConversionError(_bomb(total, bound).replace("uncompressed size", "inflates past"))
                finally:
                    # zipfile stops at the declared size (and then finds the CRC wrong); a decompressor with more
                    # to give means the header lied, and the parsers' read() would inflate the rest, 2 GB at once
                    decompressor = getattr(member, "_decompressor", None)
                    if decompressor is not None and getattr(decompressor, "eof", True) is False:
                        raise ConversionError(f"{info.filename} inflates past the size it declares (a zip bomb?)")
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, NotImplementedError, ValueError) as exc:
        raise ConversionError(f"corrupt archive (a damaged member: {exc.__class__.__name__})") from exc


def _core_title(xml: bytes) -> str | None:
    from defusedxml import ElementTree

    try:
        root = ElementTree.fromstring(xml)
    except Exception:  # malformed or hostile XML in the metadata: no title, the body may still be fine
        return None
    node = root.find("{http://purl.org/dc/elements/1.1/}title")
    return node.text.strip() if node is not None and node.text and node.text.strip() else None


def _pdf_title(data: bytes) -> str | None:
    """The PDF Info dictionary's Title; an encrypted PDF is refused here with the reason."""
    from pdfminer.pdfdocument import PDFDocument, PDFPasswordIncorrect
    from pdfminer.pdfparser import PDFParser
    from pdfminer.psparser import PSLiteral
    from pdfminer.utils import decode_text as pdf_text

    try:
        document = PDFDocument(PDFParser(io.BytesIO(data)))
    except PDFPasswordIncorrect as exc:
        raise ConversionError("encrypted (needs a password): no extractable text") from exc
    except Exception as exc:  # pdfminer raises a dozen kinds for a damaged file
        raise ConversionError(f"corrupt PDF ({exc.__class__.__name__})") from exc
    for info in document.info:
        title = info.get("Title")
        if hasattr(title, "resolve"):
            title = title.resolve()
        if isinstance(title, bytes):
            title = pdf_text(title)
        elif isinstance(title, PSLiteral):
            title = str(title.name)
        if isinstance(title, str) and title.strip():
            return title.strip()
    return None
