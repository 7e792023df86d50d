"""One cross-compile of one kernel config for one target, and its result.

A :class:`CompileJob` names everything a compile depends on: the kernel (file and
function name), the launch signature spec (see :mod:`kernelrules.compile.specialize`), the
config's constexprs and launch options, and the target. It is a plain picklable
value so that :mod:`kernelrules.compile.pool` can send it to a worker process and
:mod:`kernelrules.compile.cache` can key results by it.

:func:`compile_job` runs the compile in the current process: load the kernel without
running its module (:mod:`kernelrules.discover.kernelsource`), specialize it as a launch would,
then ``triton.compile``. Every failure becomes a :class:`CompileResult` with an
``error_kind``; it never raises for a kernel's or a config's fault.

Why over 400 lines: the job, its result and the compile itself are one unit a worker runs; splitting
them would spread one cache key's ingredients over files.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import json
import math
import time
import traceback
import warnings
from dataclasses import dataclass, field, fields
from typing import Any, Callable, Mapping

from ..errors import KernelSourceError, KernelSyntaxError, SignatureSpecError

#: The values of :attr:`CompileResult.error_kind` (None when the compile succeeded).
ERROR_KINDS = ("compile_error", "timeout", "ptxas_error", "spec_error", "internal")

#: Artifacts kept from ``CompiledKernel.asm`` (the rest, such as the Python source, are dropped).
ARTIFACTS = ("ttir", "ttgir", "llir", "ptx", "cubin", "amdgcn", "hsaco")

#: Launch options a CompileJob may carry; any other option is passed on and checked by the backend.
LAUNCH_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg")


@dataclass(frozen=True)
class CompileJob:
    """Everything one cross-compile depends on; picklable and JSON-friendly.

    ``target`` is ``(backend, arch, warp_size)`` as in ``GPUTarget``: ``("cuda", 89, 32)``
    or ``("hip", "gfx942", 64)``. ``timeout`` (seconds) overrides the pool's default.
    ``fixed`` holds constexprs that stay the same across configs (merged under
    ``constexprs``).
    """

    path: str
    kernel: str
    signature: Mapping[str, Any]
    constexprs: Mapping[str, Any] = field(default_factory=dict)
    options: Mapping[str, Any] = field(default_factory=dict)
    target: tuple[str, int | str, int] = ("cuda", 90, 32)
    timeout: float | None = None
    fixed: Mapping[str, Any] = field(default_factory=dict)
    analyze: bool = False
    #: Extra search roots for helpers imported from the kernel's package (``--src``); the
    #: files they resolve to are part of the kernel's source hash, so not of the cache key.
    src: tuple[str, ...] = ()

    def __hash__(self) -> int:
        """Hash by value (the mapping fields make the generated hash unusable)."""
        return hash(json.dumps(json_safe(vars(self)), sort_keys=True, default=repr))

    def gpu_target(self) -> Any:
        """The ``triton.backends.compiler.GPUTarget`` this job compiles for."""
        from triton.backends.compiler import GPUTarget

        backend, arch, warp_size = self.target
        return GPUTarget(backend, arch, warp_size)

    def describe(self) -> str:
        """A short human-readable label: kernel, constexprs, options and arch."""
        values = {**self.fixed, **self.constexprs, **self.options}
        config = ", ".join(f"{k}={v}" for k, v in values.items())
        backend, arch, _ = self.target
        arch_name = f"sm_{arch}" if backend == "cuda" else str(arch)
        return f"{self.kernel}[{config}] on {arch_name}"


@dataclass
class CompileResult:
    """The outcome of one compile: artifacts and metadata, or a classified error.

    ``message`` is a one-line summary and ``details`` the full text (the compiler's
    message with its source excerpt, or a traceback for ``internal`` errors).
    ``error_path``/``error_line`` locate the error in the user's file when known.
    ``asm`` holds the text artifacts (``ttir``, ``ttgir``, ``llir``, ``ptx``) and the
    ``cubin`` bytes; ``metadata`` is Triton's kernel metadata made JSON-friendly.
    """

    ok: bool
    error_kind: str | None = None
    message: str = ""
    details: str = ""
    error_path: str | None = None
    error_line: int | None = None
    asm: dict[str, str | bytes] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)
    specialization: dict[str, Any] = field(default_factory=dict)
    compile_seconds: float = 0.0
    from_cache: bool = False
    log: str = ""
    facts: dict[str, Any] = field(default_factory=dict)
    analysis_seconds: float = 0.0

    @classmethod
    def failure(cls, kind: str, message: str, details: str = "", **extra: Any) -> "CompileResult":
        """A failed result of ``kind`` with a one-line ``message``."""
        assert kind in ERROR_KINDS, kind
        summary = message.strip().splitlines()[0] if message.strip() else kind
        return cls(ok=False, error_kind=kind, message=summary, details=details or message, **extra)

    def header(self) -> dict[str, Any]:
        """Every field but the artifacts, JSON-friendly (for the cache and reports)."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "asm"}


# --------------------------------------------------------------------------- helpers


def json_safe(value: Any) -> Any:
    """``value`` with tuples, GPUTargets, sets and other objects turned into JSON types."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, Mapping):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        items = sorted(value, key=repr) if isinstance(value, (set, frozenset)) else value
        return [json_safe(v) for v in items]
    if type(value).__name__ == "GPUTarget":
        return {"backend": value.backend, "arch": value.arch, "warp_size": value.warp_size}
    inner = getattr(value, "value", None)
    if type(value).__name__ == "constexpr":
        return json_safe(inner)
    return repr(value)


def _metadata_dict(kernel: Any) -> dict[str, Any]:
    """Triton's ``KernelMetadata`` named tuple as a JSON-friendly dict."""
    meta = kernel.metadata
    raw = meta._asdict() if hasattr(meta, "_asdict") else dict(vars(meta))
    return json_safe(raw)


def _artifacts(kernel: Any) -> dict[str, str | bytes]:
    """The IR, assembly and binary artifacts of a compiled kernel."""
    return {k: v for k, v in kernel.asm.items() if k in ARTIFACTS}


def check_options(target: Any, options: Mapping[str, Any]) -> dict[str, Any]:
    """The options a launch would accept, or ValueError/KeyError/AssertionError as the launch raises.

    ``triton.compile`` silently drops options its backend does not know (AMD's
    ``waves_per_eu`` on CUDA), but a launch raises ``KeyError`` for them. kernelrules
    reports what the launch would do. ``None`` values mean "Triton's default".
    """
    from triton.compiler.compiler import make_backend

    given = {k: v for k, v in options.items() if v is not None}
    parsed = make_backend(target).parse_options(dict(given))  # asserts num_warps, num_ctas
    for key in given:
        if key not in parsed.__dict__:
            raise KeyError(f"Keyword argument {key} was specified but unrecognised")
    return given


def launch_options(fn: Any, options: Mapping[str, Any]) -> dict[str, Any]:
    """``options`` with what ``JITFunction.run`` adds to every launch's options.

    A launch compiles with ``debug`` from the config, else the kernel's
    ``@triton.jit(debug=...)``, or'ed with ``TRITON_DEBUG``, and with
    ``instrumentation_mode`` from ``TRITON_INSTRUMENTATION_MODE`` (whatever the config
    says). Both are part of Triton's compile cache key and change the code, so a
    compile that leaves them out is never found by the launch. They are added only
    where they differ from the backend's defaults (``False`` and ``""``).
    """
    from triton import knobs

    merged = dict(options)
    given = merged.pop("debug", None)
    debug = (given if given is not None else getattr(fn, "debug", None)) or getattr(knobs.runtime, "debug", False)
    if debug:
        merged["debug"] = True
    merged.pop("instrumentation_mode", None)
    mode = getattr(getattr(knobs, "compilation", None), "instrumentation_mode", "")
    if mode:
        merged["instrumentation_mode"] = mode
    return merged


def _def_line(jit_fn: Any) -> tuple[str, int]:
    """File and line of the ``def`` of a jit function (after its decorators)."""
    import inspect

    func = jit_fn.fn
    lines, first = inspect.getsourcelines(func)
    for offset, text in enumerate(lines):
        if text.lstrip().startswith(("def ", "async def ")):
            return func.__code__.co_filename, first + offset
    return func.__code__.co_filename, first


def _error_location(exc: BaseException, fn: Any) -> tuple[str | None, int | None]:
    """File and line of a ``CompilationError`` in the user's file, when Triton gives one.

    Triton numbers the line from the ``def`` of the jit function whose source the
    error carries; that function may be a helper the kernel calls.
    """
    from triton.runtime.jit import JITFunction

    node_line = getattr(getattr(exc, "node", None), "lineno", None)
    src = getattr(exc, "src", None)
    if node_line is None:
        return None, None
    owner = fn
    for value in getattr(fn, "__globals__", {}).values():
        if isinstance(value, JITFunction) and src is not None and value.src == src:
            owner = value
            break
    try:
        path, def_line = _def_line(owner)
    except (OSError, TypeError):
        return None, None
    return path, def_line + node_line - 1


def _innermost_compilation_error(exc: BaseException) -> BaseException:
    """The deepest ``CompilationError`` in the cause chain.

    An error inside a jit helper reaches the caller wrapped in a CompilationError at
    the call site (with no message); the inner one has the message and the line.
    """
    from triton.compiler.errors import CompilationError

    inner, current = exc, exc.__cause__
    while current is not None:
        if isinstance(current, CompilationError):
            inner = current
        current = current.__cause__
    return inner


def _compilation_failure(exc: BaseException, fn: Any) -> CompileResult:
    """A ``compile_error`` result for a Triton ``CompilationError``, with its location."""
    inner = _innermost_compilation_error(exc)
    reason = getattr(inner, "error_message", None) or str(inner.__cause__ or "") or str(inner)
    path, line = _error_location(inner, fn)
    return CompileResult.failure(
        "compile_error", f"{type(inner).__name__}: {reason}", str(exc), error_path=path, error_line=line
    )


def _ptxas_summary(text: str) -> str:
    """The first ``ptxas fatal``/``error`` line of a PTXASError (Triton's first line is generic)."""
    for line in text.splitlines():
        if line.startswith("ptxas") and ("fatal" in line or "error" in line):
            return "ptxas: " + line.split(":", 1)[-1].strip()
    return text


def _ptxas_log(output: str) -> str:
    """The ``ptxas info``/``warning`` lines (registers, spills, shared) from captured output."""
    return "".join(line for line in output.splitlines(keepends=True) if line.startswith("ptxas"))


@contextlib.contextmanager
def _quiet_compile(use_triton_cache: bool) -> Any:
    """Silence Python warnings and capture prints; ask Triton to print ptxas' ``-v`` log.

    Triton prints the whole PTX to stdout when ptxas fails and, with
    ``dump_ptxas_log``, the register/spill report; both end up in the yielded buffer.
    Unless ``use_triton_cache``, Triton's cache is bypassed (``always_compile``) so the
    compile is cold and ptxas runs, as in a pool worker.
    """
    from triton import knobs

    buffer = io.StringIO()
    nvidia = getattr(knobs, "nvidia", None)
    dump_log = nvidia is not None and hasattr(nvidia, "dump_ptxas_log")
    with contextlib.ExitStack() as stack:
        stack.enter_context(warnings.catch_warnings())
        warnings.simplefilter("ignore")
        stack.enter_context(contextlib.redirect_stdout(buffer))
        stack.enter_context(contextlib.redirect_stderr(buffer))
        if dump_log:
            stack.enter_context(nvidia.scope())
            nvidia.dump_ptxas_log = True
        if not use_triton_cache:
            stack.enter_context(knobs.compilation.scope())
            knobs.compilation.always_compile = True
        yield buffer


def _classify_exception(exc: BaseException, fn: Any) -> CompileResult:
    """Map an exception from ``triton.compile`` to a result kind."""
    from triton.compiler.errors import CompilationError
    from triton.runtime.errors import PTXASError

    if isinstance(exc, CompilationError):
        return _compilation_failure(exc, fn)
    if isinstance(exc, PTXASError):
        return CompileResult.failure("ptxas_error", _ptxas_summary(str(exc)), str(exc))
    if isinstance(exc, (AssertionError, ValueError, KeyError, RuntimeError)):
        # Option checks (num_warps not a power of two, num_ctas > 1 before sm_90,
        # unknown options) and MLIR pass failures: the config does not compile.
        text = f"{type(exc).__name__}: {exc}"
        return CompileResult.failure("compile_error", text, text + "\n" + traceback.format_exc())
    text = f"{type(exc).__name__}: {exc}"
    return CompileResult.failure("internal", text, traceback.format_exc())


# --------------------------------------------------------------------------- compile


def prepare(job: CompileJob) -> tuple[Any, Any]:
    """``(KernelHandle, Specialization)`` for a job; raises KernelSourceError/SignatureSpecError."""
    from ..discover.kernelsource import load_kernel

    handle = load_kernel(job.path, job.kernel, tuple(getattr(job, "src", ())))
    return handle, specialize_job(handle.fn, job)


def specialize_job(fn: Any, job: CompileJob) -> Any:
    """The Specialization ``job`` compiles ``fn`` (its kernel, loaded) with; raises SignatureSpecError."""
    from .specialize import specialize

    constexprs = {**option_parameters(fn, job), **job.constexprs}
    return specialize(fn, job.signature, constexprs, target=job.gpu_target(), fixed=job.fixed)


def option_parameters(fn: Any, job: CompileJob) -> dict[str, Any]:
    """Values of constexpr parameters named like a launch option (``num_stages: tl.constexpr``).

    ``kernel[grid](..., num_stages=2)`` binds the keyword to the parameter and to the
    compile option alike (``JITFunction.run`` passes its keywords to both), so the
    parameter holds the option's value: the config's, else the backend's default.
    """
    wanted = [p.name for p in fn.params if p.name in LAUNCH_OPTIONS and p.is_constexpr
              and p.default is inspect.Parameter.empty and p.name not in job.fixed]
    if not wanted:
        return {}
    from triton.compiler.compiler import make_backend

    parsed = make_backend(job.gpu_target()).parse_options({k: v for k, v in job.options.items() if k in LAUNCH_OPTIONS})
    return {name: job.options.get(name, getattr(parsed, name, None)) for name in wanted}


def prepare_failure(exc: Exception) -> CompileResult:
    """The result for a job whose kernel or spec cannot be used (``prepare`` raised ``exc``): a located
    ``compile_error`` for a syntax error, else a ``spec_error``; the pool answers such jobs without a worker."""
    line = getattr(exc, "line", None)
    path = getattr(exc, "path", None)
    kind = "compile_error" if isinstance(exc, KernelSyntaxError) else "spec_error"
    return CompileResult.failure(kind, str(exc), str(exc), error_path=path, error_line=line)


def compile_job(job: CompileJob, *, use_triton_cache: bool = False,
                on_compiled: Callable[[Any], None] | None = None,
                on_source: Callable[[Any, str], None] | None = None) -> CompileResult:
    """Compile ``job`` in this process (no time limit) and classify the outcome.

    By default Triton's cache is bypassed, so the compile is cold and every artifact
    (the ptxas log included) is produced; pool workers also compile into a private,
    emptied cache directory. ``use_triton_cache=True`` lets Triton's cache answer.
    ``on_compiled`` gets Triton's compiled kernel after a successful compile, and ``on_source``
    Triton's source of the kernel and the target's backend as the compile starts (a compile worker
    builds the launching process's host modules: :mod:`kernelrules.compile.host_prebuild`).
    """
    start = time.perf_counter()
    try:
        handle, spec = prepare(job)
    except (KernelSourceError, SignatureSpecError) as exc:
        return _finish(prepare_failure(exc), start)
    except Exception as exc:  # noqa: BLE001 - a bug of ours or Triton's; report, do not raise
        return _finish(CompileResult.failure("internal", f"{type(exc).__name__}: {exc}", traceback.format_exc()), start)
    import triton

    target = job.gpu_target()
    with _quiet_compile(use_triton_cache) as output:
        try:
            options = check_options(target, launch_options(handle.fn, job.options))
            source = spec.ast_source(handle.fn)
            if on_source is not None:
                on_source(source, target.backend)
            kernel = triton.compile(source, target=target, options=options)
            result = CompileResult(ok=True, asm=_artifacts(kernel), metadata=_metadata_dict(kernel))
        except Exception as exc:  # noqa: BLE001 - classified below
            result = _classify_exception(exc, handle.fn)
    log = _ptxas_log(output.getvalue())
    if result.ok and log:
        result.asm["ptxas_log"] = log
    result.log = output.getvalue()[-20000:] if not result.ok else ""
    result.specialization = json_safe(spec.key_data())
    _finish(result, start)
    if result.ok and on_compiled is not None:
        on_compiled(kernel)
    if job.analyze and result.ok:
        analyze(result)
    return result


def analyze(result: CompileResult) -> None:
    """Read the artifacts into facts where the compile ran (in parallel workers), so the
    facts are computed once and cached with the result."""
    from ..analyzers.facts_extract import extract

    start = time.perf_counter()
    try:
        result.facts = json_safe(extract(result.asm, result.metadata))
    except Exception as exc:  # noqa: BLE001 - analysis must never lose the compile result
        result.facts = {"analysis_errors": [f"{type(exc).__name__}: {exc}"]}
    result.analysis_seconds = time.perf_counter() - start


def _finish(result: CompileResult, start: float) -> CompileResult:
    """Stamp the elapsed time on a result."""
    result.compile_seconds = time.perf_counter() - start
    return result
