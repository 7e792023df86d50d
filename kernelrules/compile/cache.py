"""On-disk cache of compile results, shared safely between processes.

A compile takes 0.5 s to minutes; reading its result back takes about a millisecond.
Results are keyed by a sha256 over everything the compile depends on:

* the Triton version (and this cache's format version);
* the kernel's :attr:`~kernelrules.discover.kernelsource.KernelHandle.source_hash` (its source,
  the jit helpers it calls and the module constants it reads, with line numbers) and
  its file's path (both appear in the artifacts' debug locations);
* the signature spec, the specialization Triton derives from it (signature types,
  ``tt.divisibility`` attributes, constexpr-specialized arguments), the constexprs
  and the launch options;
* the target (backend, arch, warp size);
* for an entry with facts, the code that extracts them (:func:`facts_version`: a digest of the
  analyzers' sources), so that an upgraded kernelrules never reads facts an older one extracted;
* ``TRITON_DEBUG`` and ``TRITON_INSTRUMENTATION_MODE`` when set (a launch's options follow them).

Location: ``$KERNELRULES_CACHE_DIR``, else the platform's user cache directory
(``$XDG_CACHE_HOME/kernelrules`` or ``~/.cache/kernelrules`` on Linux,
``~/Library/Caches/kernelrules`` on macOS, ``%LOCALAPPDATA%\\kernelrules\\Cache`` on
Windows); never the user's project unless configured.

One entry is one file, ``<dir>/v1/<key[:2]>/<key>.krc``: a magic line, the result's
fields as JSON, then each artifact (IR text, PTX, cubin) gzip-compressed, with a CRC
that is checked on every read; an artifact is decompressed when first used. The files
are kept by a :class:`kernelrules.compile.diskstore.DiskStore`: writes go to a temporary file in
the same directory followed by ``os.replace``, so readers never see half an entry and
concurrent writers of the same key leave one complete entry. An entry that fails to
parse or to verify is treated as a miss (and overwritten by the next put).
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import os
import struct
import sys
import zlib
from pathlib import Path
from collections.abc import Iterator, MutableMapping
from typing import Any

from .compilejob import CompileJob, CompileResult, json_safe
from .diskstore import DiskStore, analyzer_roots, source_digest, triton_version

#: Bumped whenever the entry layout or the key's contents change.
FORMAT_VERSION = 1

_MAGIC = b"KRC1\n"
_LENGTH = struct.Struct(">Q")

#: Environment variables that change the options a compile gets, as they change a launch's
#: (``compilejob.launch_options``): part of the key when set.
LAUNCH_ENV = ("TRITON_DEBUG", "TRITON_INSTRUMENTATION_MODE")

#: Error kinds that depend on the machine (load, crashes), never cached.
UNCACHED_KINDS = ("timeout", "internal")


def default_cache_dir() -> Path:
    """``$KERNELRULES_CACHE_DIR`` or the platform's per-user cache directory for kernelrules."""
    configured = os.environ.get("KERNELRULES_CACHE_DIR")
    if configured:
        return Path(configured).expanduser()
    home = Path.home()
    if sys.platform == "darwin":
        return home / "Library" / "Caches" / "kernelrules"
    if os.name == "nt":
        base = os.environ.get("LOCALAPPDATA") or str(home / "AppData" / "Local")
        return Path(base) / "kernelrules" / "Cache"
    base = os.environ.get("XDG_CACHE_HOME") or str(home / ".cache")
    return Path(base) / "kernelrules"


def canonical_options(job: CompileJob) -> dict[str, Any]:
    """The job's launch options without those equal to the backend's defaults (``num_stages=3`` on
    NVIDIA): Triton compiles a given default and an absent option alike, so a config that names
    ``num_stages=3`` and one that leaves it out share one compile (a resource-model probe and a
    kernel's own default config, typically)."""
    from ..config import LAUNCH_DEFAULTS

    defaults = LAUNCH_DEFAULTS["amd" if job.target and job.target[0] == "hip" else "nvidia"]
    return {name: value for name, value in job.options.items()
            if name not in defaults or value != defaults[name]}


_FACTS_VERSION: str | None = None


def facts_version() -> str:
    """A digest of the sources that turn a compile's artifacts into facts (the ``analyzers`` package and
    :mod:`kernelrules.compile.compilejob`, which calls them): part of the key of every entry with facts.
    Read once per process (about 0.3 MB of text)."""
    global _FACTS_VERSION
    if _FACTS_VERSION is None:
        files = sorted(path for root in analyzer_roots() for path in root.glob("*.py"))
        _FACTS_VERSION = source_digest(files + [Path(__file__).with_name("compilejob.py")])[:16]
    return _FACTS_VERSION


def cache_key(job: CompileJob, source_hash: str, specialization: Any | None = None, *, twin: bool = False) -> str:
    """sha256 (hex) over everything the compile of ``job`` depends on.

    ``specialization`` is the :class:`kernelrules.compile.specialize.Specialization` of the
    job (or its ``key_data()``); it is a function of the spec, the source and the
    Triton version, and is included so that a change in Triton's rules can never
    return a stale result. ``twin``: the key of the job's stage-twin group instead, the same
    over everything but ``num_stages`` (:mod:`kernelrules.compile.stage_twins`).
    """
    spec_data = specialization.key_data() if hasattr(specialization, "key_data") else specialization
    options = canonical_options(job)
    if twin:
        options = {name: value for name, value in options.items() if name != "num_stages"}
    payload = {
        "format": FORMAT_VERSION,
        "triton": triton_version(),
        "source": source_hash,
        "path": os.path.realpath(job.path),  # artifacts carry the file's path in debug info
        "kernel": job.kernel,
        "signature": json_safe(dict(job.signature)),
        "specialization": json_safe(spec_data),
        "constexprs": json_safe({**job.fixed, **job.constexprs}),
        "options": json_safe(options),
        "target": json_safe(list(job.target)),
        "analyze": bool(getattr(job, "analyze", False)),  # entries with facts differ from bare ones
    }
    if payload["analyze"]:
        payload["facts"] = facts_version()
    launch_env = {name: os.environ[name] for name in LAUNCH_ENV if os.environ.get(name)}
    if launch_env:  # only when set, so that the usual keys stay as they were
        payload["launch_env"] = launch_env
    if twin:
        payload["twin"] = "num_stages"
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), default=repr)
    return hashlib.sha256(text.encode()).hexdigest()


# --------------------------------------------------------------------------- entry format


class LazyArtifacts(MutableMapping):
    """Artifacts read from an entry, each gunzipped on first access.

    A cache hit then costs a file read and a checksum, not the decompression of a
    megabyte of LLVM IR that the caller may never look at.
    """

    def __init__(self, packed: dict[str, tuple[str, bytes]]) -> None:
        self._packed = packed
        self._values: dict[str, str | bytes] = {}

    def __getitem__(self, name: str) -> str | bytes:
        if name not in self._values:
            kind, data = self._packed[name]
            raw = gzip.decompress(data)
            self._values[name] = raw if kind == "bytes" else raw.decode("utf-8")
        return self._values[name]

    def __setitem__(self, name: str, value: str | bytes) -> None:
        self._packed.setdefault(name, ("", b""))
        self._values[name] = value

    def __delitem__(self, name: str) -> None:
        del self._packed[name]
        self._values.pop(name, None)

    def __iter__(self) -> Iterator[str]:
        return iter(self._packed)

    def __len__(self) -> int:
        return len(self._packed)

    def __reduce__(self) -> tuple:
        return dict, (dict(self.items()),)  # pickles as a plain dict


def binary_in(result: CompileResult, triton_cache_dir: str) -> bool:
    """Whether the Triton cache ``triton_cache_dir`` holds the binary a successful compile described: the folder
    Triton names from the compile's hash (base32 of ``metadata["hash"]``, as ``triton.runtime.cache`` does). True
    for a failed compile (no binary to launch) or a result without a hash (nothing to check by).

    A cached result is the compile's facts; the binary stays in the Triton cache the compile wrote. ``tune``'s
    benchmark worker launches from its study's Triton cache, so a result answered from the cache for another study
    left the worker to compile the config itself while the GPU waited (0.08-0.65 s for each problem's first config
    in the warm H200 series at a639a79, where the warm-up run's cache answered)."""
    digest = result.metadata.get("hash") if result.ok else None
    if not isinstance(digest, str):
        return True
    try:
        name = base64.b32encode(bytes.fromhex(digest)).decode("ascii").rstrip("=")
    except ValueError:
        return True
    return os.path.isdir(os.path.join(triton_cache_dir, name))


def _encode(result: CompileResult) -> bytes:
    """One entry: magic, header JSON, then each artifact gzip-compressed; the header has offsets and CRCs."""
    blob = bytearray()
    artifacts = []
    for name, value in result.asm.items():
        data = value if isinstance(value, bytes) else value.encode("utf-8")
        packed = gzip.compress(data, compresslevel=1, mtime=0)
        kind = "bytes" if isinstance(value, bytes) else "text"
        artifacts.append([name, kind, len(blob), len(packed), zlib.crc32(packed)])
        blob.extend(packed)
    header = {"result": json_safe(result.header()), "artifacts": artifacts, "size": len(blob)}
    head = json.dumps(header, separators=(",", ":")).encode()
    return _MAGIC + _LENGTH.pack(len(head)) + head + bytes(blob)


def _decode(data: bytes) -> CompileResult:
    """The result stored in an entry; raises ValueError for anything malformed or truncated."""
    if not data.startswith(_MAGIC):
        raise ValueError("bad magic")
    offset = len(_MAGIC)
    (head_len,) = _LENGTH.unpack_from(data, offset)
    offset += _LENGTH.size
    if offset + head_len > len(data):
        raise ValueError("truncated header")
    header = json.loads(data[offset:offset + head_len])
    body = memoryview(data)[offset + head_len:]
    if len(body) != header["size"]:
        raise ValueError("truncated artifacts")
    packed: dict[str, tuple[str, bytes]] = {}
    for name, kind, start, length, crc in header["artifacts"]:
        chunk = bytes(body[start:start + length])
        if zlib.crc32(chunk) != crc:
            raise ValueError(f"checksum mismatch in {name}")
        packed[name] = (kind, chunk)
    return CompileResult(asm=LazyArtifacts(packed), **header["result"])  # type: ignore[arg-type]


# --------------------------------------------------------------------------- the cache


class ResultCache:
    """Compile results on disk under ``directory`` (default: :func:`default_cache_dir`)."""

    def __init__(self, directory: str | os.PathLike[str] | None = None) -> None:
        self.directory = Path(directory) if directory is not None else default_cache_dir()
        self.root = self.directory / f"v{FORMAT_VERSION}"
        self.store = DiskStore(self.root, ".krc")

    def key(self, job: CompileJob, source_hash: str, specialization: Any | None = None) -> str:
        """The key of ``job`` (see :func:`cache_key`)."""
        return cache_key(job, source_hash, specialization)

    def path(self, key: str) -> Path:
        """Where the entry for ``key`` lives."""
        return self.store.path(key)

    def get(self, key: str) -> CompileResult | None:
        """The cached result (marked ``from_cache``), or None on a miss or a corrupt entry."""
        result = self.store.get(key, _decode)  # corrupt or from an incompatible writer: a miss, then overwritten
        if result is None:
            return None
        result.from_cache = True
        return result

    def put(self, key: str, result: CompileResult) -> bool:
        """Store ``result`` atomically; False when it is not cacheable or the write failed."""
        if result.error_kind in UNCACHED_KINDS:
            return False
        stored = CompileResult(**{**vars(result), "from_cache": False, "asm": dict(result.asm.items())})
        return self.store.put(key, _encode(stored))

    def clear(self) -> None:
        """Delete every entry of this format version."""
        self.store.clear()
