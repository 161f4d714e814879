"""Which files of a KB folder become documents, read safely, converted, and bounded in size.

Only regular files inside the KB root are read: every path is checked after resolving, a
symbolic link is never followed (`docs/passwd.md -> /etc/passwd` is a warning, not a document),
and files are opened with O_NOFOLLOW so a link swapped in after the walk is refused too. A
file that cannot be read or converted is one warning line and the rest are ingested; an
extension nobody converts is counted once in the summary.

A re-ingest reads only what changed. Each file read is recorded with its state
(`file_stat`: parser version, size, mtime and ctime in ns) and the SHA-256 of its
bytes. Next time a file whose state is the recorded one is not opened at all; one
whose state moved is read and hashed, and converted only when its bytes differ
(a `touch`, a checkout or a copy of the folder cost a read, not a conversion). A
file changed without its size, mtime or ctime moving goes unseen: ctime cannot be
set by a program (only by the clock), so that takes a change of the system
clock; `--rebuild` reads everything. A state within `RACY_NS` of the moment the
file was read is not trusted (a write in the same clock tick would keep it, as
git's "racily clean" entries): it is recorded as unknown and the file is read
and hashed again next time.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import stat
import time
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from executor.core.errors import InputError
from executor.retrieval import documents as parser  # its PARSER_VERSION read at each use, not copied at import
from executor.retrieval.conversion_worker import BoundedConverter
from executor.retrieval.converters import (
    READ_AS_TEXT,
    SUPPORTED,
    ConversionError,
    NoText,
    convert,
    decode_text,
    format_of,
)
from executor.retrieval.documents import Document, check_doc_key, clean_text, parse_clean_text

MB = 1_000_000
RACY_NS = 2_000_000_000  # FAT and some network file systems keep mtimes to 2 s


@dataclass(frozen=True)
class SourceLimits:
    max_file_bytes: int = 64 * MB  # read at most this much of one file
    max_document_bytes: int = 4 * MB  # of text, after conversion
    max_unzipped_bytes: int = 256 * MB  # an Office file inflated: the zip-bomb bound
    # one conversion (PDF, Office, HTML): its time and memory, in a worker process
    # (executor/retrieval/conversion_worker.py)
    convert_timeout_s: float = 120.0
    convert_memory_bytes: int = 2048 * MB


@dataclass(frozen=True)
class SourceFile:
    path: Path
    doc_key: str
    format: str
    size: int
    mtime_ns: int = 0
    ctime_ns: int = 0

    @property
    def converted(self) -> bool:
        return self.format not in READ_AS_TEXT

    @property
    def file_stat(self) -> str:
        """What says the file is the one read before, without opening it (and the parser that read it)."""
        return f"{parser.PARSER_VERSION}:{self.size}:{self.mtime_ns}:{self.ctime_ns}"

    def trusted_stat(self, read_at_ns: int) -> str | None:
        """`file_stat`, or None when the file was modified too close to `read_at_ns` for its mtime to tell."""
        return None if self.mtime_ns >= read_at_ns - RACY_NS else self.file_stat


@dataclass(frozen=True)
class Known:
    """What the catalog recorded of a document's file when it was last read."""

    file_stat: str | None
    file_hash: str | None


@dataclass(frozen=True)
class FileState:
    """What to record of a file read this time: its trusted state (or None) and the hash of its bytes."""

    file_stat: str | None
    file_hash: str


@dataclass
class Discovery:
    root: Path
    files: list[SourceFile] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (name, reason)
    unsupported: Counter = field(default_factory=Counter)  # extension -> files
    names: dict[str, str] = field(default_factory=dict)  # doc key -> the file's own name, for two files of one key

    def unsupported_summary(self) -> str | None:
        if not self.unsupported:
            return None
        return f"unsupported file types skipped: {most_common_types(self.unsupported)}"


SHOWN_TYPES = 10  # `ingest / --dry-run` listed 3,000 extensions on one line of 60,000 characters (hostile24b #9)


def most_common_types(counts: dict[str, int]) -> str:
    """The most common unsupported file types with their counts, and how many others (`--json` has them all)."""
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    shown = ", ".join(f"{ext} ({n:,})" for ext, n in ranked[:SHOWN_TYPES])
    rest = len(ranked) - SHOWN_TYPES
    return shown + (f" and {rest:,} other type{'s' if rest > 1 else ''}" if rest > 0 else "")


@dataclass
class Loaded:
    documents: list[Document]
    warnings: list[str]
    formats: dict[str, int]  # format -> documents ingested
    skipped: int  # files refused (links, limits, conversion failures), each with a warning
    unsupported: dict[str, int]
    failed: set[str] = field(default_factory=set)  # doc keys present but unreadable now: their last version stays
    # files not converted because they are the ones recorded (`known`): unchanged, by state or by hash
    unchanged: set[str] = field(default_factory=set)
    states: dict[str, FileState] = field(default_factory=dict)  # doc key -> state, for every file read this time
    bytes_read: int = 0  # of file content
    order: list[str] = field(default_factory=list)  # every document's key, read or unchanged, in the walk's order


def _printable(name: str) -> str:
    """A file name fit for a one-line message: undecodable bytes and control characters shown escaped."""
    text = os.fsencode(name).decode("utf-8", errors="backslashreplace")
    text = re.sub(r"[\x00-\x1f\x7f-\x9f]", lambda m: f"\\x{ord(m.group()):02x}", text)
    # invisible characters that reorder or hide the name (a right-to-left override, a zero-width space) shown
    return "".join(f"\\u{ord(ch):04x}" if _hides(ch) else ch for ch in text)


def _hides(ch: str) -> bool:
    return unicodedata.category(ch) == "Cf" and ch not in "\u200c\u200d"


def check_root(root: Path) -> Path:
    try:
        str(root).encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InputError(f"{_printable(str(root))}: the folder name is not valid UTF-8; rename it") from exc
    if root.exists() and not root.is_dir():  # ingest reads folders only: say what to pass instead
        raise InputError(
            f"{root}: is a file, not a folder; ingest reads a folder of documents: pass the folder that holds it "
            f"({root.parent}), or a folder of its own"
        )
    if not root.is_dir():
        raise InputError(f"{root}: no such folder")
    return root.resolve()


def discover(root: Path, limits: SourceLimits = SourceLimits()) -> Discovery:
    """Every file under `root` sorted into: to read, skipped with a reason, or unsupported."""
    base = check_root(root)
    found = Discovery(root=base)

    def unreadable(exc: OSError) -> None:  # a folder we may not list is a warning, not a silent gap
        name = Path(exc.filename).relative_to(base).as_posix() if exc.filename else "?"
        found.skipped.append((_printable(name) + "/", _os_reason(exc)))

    for dirpath, dirnames, filenames in os.walk(base, onerror=unreadable, followlinks=False):
        here = Path(dirpath)
        for name in sorted(dirnames):
            rel = _printable((here / name).relative_to(base).as_posix())
            if name.startswith("."):
                dirnames.remove(name)
            elif (here / name).is_symlink():
                found.skipped.append((rel + "/", "a symbolic link; not followed"))
        dirnames.sort()
        for name in sorted(filenames):
            if name.startswith("."):
                continue
            try:
                _classify(here / name, base, limits, found)
            except OSError as exc:  # removed (or made unreadable) between the listing and its lstat
                found.skipped.append((_printable((here / name).relative_to(base).as_posix()), _os_reason(exc)))
    return found


def _classify(path: Path, base: Path, limits: SourceLimits, found: Discovery) -> None:
    rel = path.relative_to(base).as_posix()
    shown = _printable(rel)
    info = os.lstat(path)
    if stat.S_ISLNK(info.st_mode):
        found.skipped.append((shown, "a symbolic link; not followed"))
        return
    if not stat.S_ISREG(info.st_mode):
        found.skipped.append((shown, "not a regular file"))
        return
    if not path.resolve().is_relative_to(base):  # belt and braces: a path that escapes is never read
        found.skipped.append((shown, "outside the knowledge base folder"))
        return
    fmt = format_of(path)
    if fmt is None:
        found.unsupported[_printable(path.suffix.lower()) or "(no extension)"] += 1
        return
    try:
        rel.encode("utf-8")
        # the doc key is the name in its composed form (NFC): macOS and files copied from it spell `crème.md` with
        # a separate accent (NFD), which a label file, a link or a person types composed
        key = check_doc_key(unicodedata.normalize("NFC", rel))
    except UnicodeEncodeError:
        found.skipped.append((shown, "the file name is not valid UTF-8; rename it"))
        return
    except InputError as exc:
        found.skipped.append((shown, str(exc).split(": ", 1)[-1]))
        return
    if info.st_size > limits.max_file_bytes:
        found.skipped.append(
            (shown, f"{info.st_size / MB:,.1f} MB, over the {limits.max_file_bytes / MB:,.0f} MB file limit")
        )
        return
    if key in found.names:  # `café.md` twice, composed and not: one document key, so one file is read, the
        # one whose name is written as its key is (composed)
        other = found.names[key]
        kept, dropped = (rel, other) if rel == key else (other, rel)
        if kept == rel:
            found.files = [f for f in found.files if f.doc_key != key]
        found.skipped.append(
            (
                _printable(dropped),
                f"its name is {_printable(kept)}'s with the accents written apart (NFD), so both would be one "
                "document; rename or remove one",
            )
        )
        if kept == other:
            return
    found.names[key] = rel
    found.files.append(
        SourceFile(
            path=path, doc_key=key, format=fmt, size=info.st_size, mtime_ns=info.st_mtime_ns, ctime_ns=info.st_ctime_ns
        )
    )


def read_regular_file(path: Path, max_bytes: int) -> bytes:
    """The bytes of a regular file, refusing a symbolic link even if one replaced the file, or a folder on its
    path, since the walk."""
    fd = _open_without_links(path)
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise OSError("not a regular file")
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise OSError(f"grew over the {max_bytes / MB:,.0f} MB file limit while being read")
    return data


def _open_without_links(path: Path) -> int:
    """`path` opened for reading one component at a time, following no symbolic link anywhere on it. O_NOFOLLOW
    guards the last component only: a folder swapped for a link once the walk had listed it (another user of a
    shared docs folder, during a long ingest) was followed out of the KB folder (hostile18b finding 3). The paths
    read are under the resolved root, so a link on one is always such a swap."""
    # O_PATH: a folder this user may cross but not list is crossed as `open` crosses it
    walk = getattr(os, "O_PATH", os.O_RDONLY) | os.O_DIRECTORY
    parts = path.parts
    fd = os.open(parts[0], walk)
    try:
        for depth, part in enumerate(parts[1:-1], start=2):
            try:
                step = os.open(part, walk | os.O_NOFOLLOW, dir_fd=fd)
            except OSError as exc:  # O_PATH | O_NOFOLLOW on a link: "not a folder"
                if exc.errno in (errno.ENOTDIR, errno.ELOOP) and Path(*parts[:depth]).is_symlink():
                    raise OSError(errno.ELOOP, "a folder on its path is a symbolic link", str(path)) from exc
                raise
            os.close(fd)
            fd = step
        return os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0), dir_fd=fd)
    finally:
        os.close(fd)


def file_hash(data: bytes) -> str:
    """The bytes' SHA-256, with the parser version: a new parser reads every file again."""
    return hashlib.sha256(parser.PARSER_VERSION.encode() + b"\0" + data).hexdigest()


def load_source(source: SourceFile, limits: SourceLimits) -> Document:
    """One file as a Document; ConversionError or OSError (one-line messages) when it cannot be."""
    return parse_source(source, read_regular_file(source.path, limits.max_file_bytes), limits)


def parse_source(source: SourceFile, data: bytes, limits: SourceLimits, converter=None) -> Document:
    """The bytes of `source` as a Document (converted first when the format needs it: by `converter`, a
    `BoundedConverter`, when given, else in this process)."""
    left_out: tuple[str, ...] = ()
    if not source.converted:
        text, meta_title = decode_text(data), None
    else:
        converted = (converter.convert if converter is not None else convert)(
            source.path, source.format, data, limits.max_unzipped_bytes
        )
        text, meta_title, left_out = converted.markdown, converted.title, converted.warnings
    text = clean_text(text)  # a page's pasted images are not its text: nor count against its size
    size = len(text.encode("utf-8"))
    if size > limits.max_document_bytes:
        raise ConversionError(
            f"{size / MB:,.1f} MB of text, over the {limits.max_document_bytes / MB:,.1f} MB per-document limit "
            f"(EXECUTOR_MAX_DOCUMENT_MB)"
        )
    if not text.strip():
        raise NoText("no text")
    doc = parse_clean_text(source.doc_key, text, source.format, meta_title)
    doc.warnings[:0] = left_out
    return doc


def load_documents(
    root: Path, limits: SourceLimits = SourceLimits(), known: dict[str, Known] | None = None, progress: bool = False
) -> Loaded:
    """Every readable document under `root`, with one warning per file that was not.

    With `known` (doc key -> what was recorded when it was last read), a file whose state is the recorded
    one is not opened, and one whose bytes hash as recorded is not converted: both are `unchanged`, not in
    `documents` (their warnings are the caller's to repeat)."""
    found = discover(root, limits)
    converter = BoundedConverter(limits.convert_timeout_s, limits.convert_memory_bytes)
    try:
        return _load(found, limits, known or {}, converter, progress)
    except BaseException:
        # stopped (Ctrl-C, SIGTERM) or failed: the conversion in flight is killed, not waited for (it held a
        # SIGTERM'd ingest 19-26 s, up to EXECUTOR_CONVERT_TIMEOUT_S; hostile22 #6)
        converter.close(kill=True)
        raise
    finally:
        converter.close()


def _load(found: Discovery, limits: SourceLimits, known: dict[str, Known], converter, progress: bool) -> Loaded:
    from tqdm import tqdm

    warnings = [f"{name}: {reason}" for name, reason in found.skipped]
    docs: list[Document] = []
    failed: set[str] = set()
    empty = 0  # files read whole with no text: skipped, and not kept from before
    unchanged: set[str] = set()
    states: dict[str, FileState] = {}
    bytes_read = 0
    for source in tqdm(found.files, desc="reading", unit="file", disable=not progress, leave=False):
        before = known.get(source.doc_key)
        if before is not None and before.file_stat == source.file_stat:
            unchanged.add(source.doc_key)
            continue
        try:
            read_at = time.time_ns()
            data = read_regular_file(source.path, limits.max_file_bytes)
            bytes_read += len(data)
            digest = file_hash(data)
            if before is not None and before.file_hash == digest:
                unchanged.add(source.doc_key)
            else:
                doc = parse_source(source, data, limits, converter)
        except NoText as exc:
            # read whole, and empty now: the page is gone (an author emptying a file to take its text out must
            # not find the old text still answering); a read that failed keeps the version ingested before
            gone = "; the version ingested before is removed" if before is not None else ""
            warnings.append(f"{source.doc_key}: {exc}{gone}")
            empty += 1
            continue
        except (ConversionError, OSError) as exc:
            warnings.append(f"{source.doc_key}: {exc if isinstance(exc, ConversionError) else _os_reason(exc)}")
            failed.add(source.doc_key)
            continue
        states[source.doc_key] = FileState(source.trusted_stat(read_at), digest)
        if source.doc_key in unchanged:
            continue
        warnings += [f"{doc.doc_key}: {w}" for w in doc.warnings]
        docs.append(doc)
    if (summary := found.unsupported_summary()) is not None:
        warnings.append(summary)
    if not docs and not unchanged:
        kinds = ", ".join(sorted(SUPPORTED))
        detail = f" ({len(warnings)} warnings: {warnings[0]}{' …' if len(warnings) > 1 else ''})" if warnings else ""
        raise InputError(f"{found.root}: no documents to ingest (supported: {kinds}){detail}")
    kept = [f.format for f in found.files if f.doc_key in unchanged]
    return Loaded(
        documents=docs,
        warnings=warnings,
        formats=dict(Counter([d.source_format for d in docs] + kept)),
        skipped=len(found.skipped) + len(failed) + empty,
        unsupported=dict(found.unsupported),
        failed=failed,
        unchanged=unchanged,
        states=states,
        bytes_read=bytes_read,
        order=[f.doc_key for f in found.files if f.doc_key in unchanged or f.doc_key in states],
    )


def plan(root: Path, limits: SourceLimits = SourceLimits()) -> dict:
    """What an ingest of `root` would read, convert and skip, without reading a byte of content."""
    found = discover(root, limits)
    files = [
        {"doc_key": f.doc_key, "format": f.format, "action": "convert" if f.converted else "read", "bytes": f.size}
        for f in found.files
    ]
    return {
        "root": str(found.root),
        "files": files,
        "skipped": [{"name": name, "reason": reason} for name, reason in found.skipped],
        "formats": dict(sorted(Counter(f.format for f in found.files).items())),
        "unsupported": dict(sorted(found.unsupported.items())),
        "counts": {
            "read": sum(f["action"] == "read" for f in files),
            "convert": sum(f["action"] == "convert" for f in files),
            "skipped": len(found.skipped),
            "unsupported": sum(found.unsupported.values()),
        },
    }


def _os_reason(exc: OSError) -> str:
    if exc.errno == errno.ELOOP:  # O_NOFOLLOW met a link
        return "a symbolic link; not followed"
    if exc.errno == errno.ENOENT:  # listed, then removed before it was read
        return "removed while the folder was being read; skipped"
    return f"cannot be read ({exc.strerror or exc})"
