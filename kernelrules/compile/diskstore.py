"""One on-disk store under both caches: the compile results and the lint judgements.

Both caches keep one file per key, shared between processes that may write the same key
at once or be killed mid-write, on a disk that may hold entries of an older or damaged
writer. :class:`DiskStore` is that part, once:

* **sharding**: ``<root>/<key[:2]>/<prefix><key><suffix>``, so no directory holds more than
  a few thousand files;
* **atomic writes**: a temporary file beside the entry renamed over it
  (:func:`kernelrules.atomicio.write_bytes_atomic`, not synced: a crash may lose an entry,
  never half of one), so readers and concurrent writers see one whole entry;
* **versioning**: each cache names its folder (``v1``, ``lint``) and puts its format
  version and :func:`triton_version` in its keys, so an entry of another format or Triton
  is never found;
* **integrity**: bytes are handed to the cache's decoder, and anything it rejects is a
  miss (then recomputed and overwritten); JSON entries get a checked envelope
  (:meth:`DiskStore.get_json`) that holds their key and a SHA-256 of their content.

Keys and file layouts are exactly those the two caches used before they shared this code.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import struct
from importlib import metadata
from pathlib import Path
from typing import Any, Callable, TypeVar

from ..atomicio import write_bytes_atomic

T = TypeVar("T")

#: What a decoder raises for an entry that is truncated, edited or of another writer: a miss.
CORRUPT = (ValueError, KeyError, TypeError, struct.error)


@functools.lru_cache(maxsize=None)
def triton_version(*, import_if_unlisted: bool = True) -> str:
    """The installed Triton's version from its package metadata, without importing Triton.

    A source checkout of Triton has no metadata: then ``import_if_unlisted`` imports Triton
    for its ``__version__`` (the compile cache, which imports Triton anyway), or the
    version is ``"unknown"`` (the judgement cache, whose point is to answer without it).
    """
    try:
        return metadata.version("triton")
    except Exception:  # noqa: BLE001 - no metadata (a source checkout), or broken metadata
        if not import_if_unlisted:
            return "unknown"
    import triton

    return triton.__version__


def source_digest(paths: list[Path]) -> str:
    """SHA-256 (hex) over the names and bytes of source files, in the order given: the version of the code
    that made a cache entry (an edited or upgraded install must not replay an older one's entries). A file
    that cannot be read counts by its name alone."""
    digest = hashlib.sha256()
    for path in paths:
        digest.update(path.name.encode() + b"\0")
        try:
            digest.update(path.read_bytes())
        except OSError:
            pass
    return digest.hexdigest()


def analyzer_roots() -> list[Path]:
    """The folders of the ``kernelrules.analyzers`` package, found without running it."""
    import importlib.util

    spec = importlib.util.find_spec("kernelrules.analyzers")
    return [Path(p).resolve() for p in (spec.submodule_search_locations or [])] if spec else []


def content_digest(data: Any) -> str:
    """SHA-256 (hex) of ``data`` as canonical JSON: the checksum of a JSON entry's content."""
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


class DiskStore:
    """Entries under ``root``, one file per key, sharded by the key's first two characters.

    ``suffix`` is the entries' file extension. A ``prefix`` (``outcome-``, say) files a
    second kind of entry under the same key, in the key's shard.
    """

    def __init__(self, root: str | os.PathLike[str], suffix: str) -> None:
        self.root = Path(root)
        self.suffix = suffix

    def path(self, key: str, prefix: str = "") -> Path:
        """Where the entry for ``key`` (of kind ``prefix``) lives."""
        return self.root / key[:2] / f"{prefix}{key}{self.suffix}"

    def get(self, key: str, decode: Callable[[bytes], T], prefix: str = "") -> T | None:
        """``decode`` of the entry's bytes; None when it is missing, unreadable or rejected as corrupt."""
        try:
            data = self.path(key, prefix).read_bytes()
        except OSError:
            return None
        try:
            return decode(data)
        except CORRUPT:
            return None

    def put(self, key: str, data: bytes, prefix: str = "") -> bool:
        """Store ``data`` atomically; False when the write failed (a cache that cannot be written only costs time)."""
        path = self.path(key, prefix)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_bytes_atomic(path, data, durable=False)
        except OSError:
            return False
        return True

    def get_json(self, key: str, prefix: str = "") -> dict[str, Any] | None:
        """The object stored by :meth:`put_json`; None unless the envelope names this entry and its checksum holds."""
        return self.get(key, functools.partial(_open_envelope, f"{prefix}{key}"), prefix)

    def put_json(self, key: str, data: dict[str, Any], prefix: str = "") -> bool:
        """Store ``data`` in an envelope with the entry's name and :func:`content_digest`; False if not stored."""
        name = f"{prefix}{key}"
        try:
            text = json.dumps({"key": name, "sha256": content_digest(data), "data": data})
        except (TypeError, ValueError):
            return False
        return self.put(key, text.encode("utf-8"), prefix)

    def clear(self) -> None:
        """Delete every entry (the whole ``root``)."""
        import shutil

        shutil.rmtree(self.root, ignore_errors=True)


def _open_envelope(name: str, raw: bytes) -> dict[str, Any] | None:
    """The content of a JSON envelope filed as ``name``; None when it names another entry or fails its checksum."""
    entry = json.loads(raw.decode("utf-8"))
    if not isinstance(entry, dict) or entry.get("key") != name or not isinstance(entry.get("data"), dict):
        return None
    if entry.get("sha256") != content_digest(entry["data"]):
        return None
    return entry["data"]
