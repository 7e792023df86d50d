"""The specify step: what a discovered kernel is launched with, from its strongest source.

``lint`` and ``check-config`` both ask :func:`resolve` for a kernel's launch signature, the
constexpr values its configs lack (from a spec, a launch literal or a labelled guess), and
the configs to judge once the kernel's own launch-time code (``@triton.heuristics``,
``early_config_prune``) has run on them. The sources, strongest first: a spec file
(``--spec``), the module's sidecar ``<module>.kernelrules.yaml``, a launch trace
(``--trace``), Inductor's ``triton_meta``, then launch call sites, dataflow and naming
(:mod:`kernelrules.specify.signatures`). Everything here reads the source; nothing runs the user's
module. Spec files and traces arrive loaded (:func:`kernelrules.specify.signatures.load_spec_file`,
:func:`kernelrules.specify.trace.load_trace`), so a run reads each once however many kernels it has.
"""

from __future__ import annotations

import ast
import itertools
import math
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Optional, Sequence

from ..config import LAUNCH_OPTIONS, KernelConfig
from ..errors import KernelrulesError
from ..compile.target import KernelTarget

#: One config to judge with the line and (1-based) column of the ``triton.Config`` that made it.
Site = tuple[KernelConfig, Optional[int], Optional[int]]


@dataclass(frozen=True)
class ResolvedKernel:
    """A kernel's launch as the specify step resolved it.

    ``signature`` is the :class:`~kernelrules.specify.signatures.InferredSignature` (its ``complete``,
    ``missing`` and ``descriptors`` say why a kernel cannot be judged); ``provenance`` names the
    source of every argument and constexpr (``spec``, ``trace``, ``inductor``, ``call-site``,
    ``heuristics``, ``default`` ...); ``guessed`` holds the constexpr values nobody gave;
    ``notes`` are clauses for the kernel's report (configs taken from Inductor size hints, what
    ``early_config_prune`` kept). When the signature is incomplete, ``sites`` are the configs as
    found and nothing was guessed. ``name_guesses``: for each constexpr a launcher derives
    (:mod:`kernelrules.specify.launch_relations`), the guess by its name it replaced (the guess
    search tries those first when the first config does not compile).
    """

    source: str
    signature: Any
    sites: tuple[Site, ...]
    fixed: Mapping[str, Any]
    provenance: Mapping[str, str]
    guessed: Mapping[str, Any]
    notes: tuple[str, ...] = ()
    name_guesses: Mapping[str, Any] = field(default_factory=dict)

    def target(self, kernel: Any, src: Iterable[str] = ()) -> KernelTarget:
        """The compile target of ``kernel`` with the resolved signature and fixed constexprs."""
        return KernelTarget.for_signature(kernel.path, kernel.name, self.signature.spec, self.fixed, src=src)


def resolve(kernel: Any, *, spec: Mapping[str, Mapping[str, Any]] | None = None,
            trace: Mapping[tuple[str, str], list] | None = None, sites: Sequence[Site] | None = None,
            at_launch: bool = True) -> ResolvedKernel:
    """Resolve ``kernel``'s launch signature, constexpr values and configs to judge.

    ``spec``: a loaded spec file (kernel name → signature); ``trace``: a loaded launch trace.
    ``sites``: the configs to judge (default: the kernel's autotune configs, or for an Inductor
    kernel the candidates of its size hints). ``at_launch``: also run the kernel's
    ``@triton.heuristics`` and ``early_config_prune`` on them, as a launch would (check-config
    judges its one config as given). Raises :class:`KernelrulesError` when a spec or the
    kernel's signature cannot be read.
    """
    from .descriptors import guessed_note as guessed_descriptors
    from .signatures import infer_signature

    explicit, source = _explicit_spec(kernel, spec, trace)
    constexpr_names = {p.name for p in kernel.params if p.constexpr}
    runtime_spec = {k: v for k, v in (explicit or {}).items() if k not in constexpr_names}
    signature = infer_signature(kernel, spec=runtime_spec or None, use_sidecar=False)
    if source != "spec":
        signature.provenance = {k: source if v == "spec" else v for k, v in signature.provenance.items()}
    notes: list[str] = []
    if sites is None:
        sites = _configs_of(kernel)
        found = inductor_configs(kernel) if source == "inductor" and getattr(kernel, "autotune", None) is None else None
        if found is not None:
            sites, note = found
            notes.append(note)
    name_guesses: dict[str, Any] = {}
    fixed, constexpr_provenance = _constexpr_values(kernel, explicit, sites[0][0], _call_literals(kernel), source,
                                                    name_guesses)
    if not signature.complete:
        return ResolvedKernel(source, signature, tuple(sites), fixed, {**signature.provenance, **constexpr_provenance},
                              {}, tuple(notes))
    descriptor_note = guessed_descriptors(signature.spec, signature.descriptor_sources)
    notes += [descriptor_note] if descriptor_note else []
    completed = [(c.replace(fixed), line, col) for c, line, col in sites]
    if at_launch:
        completed, note = _run_launch_code(kernel, completed, signature.spec, constexpr_provenance)
        notes += [note] if note else []
    if completed:  # a pointer only in a branch these constexprs do not take is a scalar at this launch
        from .livebranch import retype_dead_branch_pointers

        retype_dead_branch_pointers(kernel, signature, completed[0][0].constexprs)
    guessed = {k: completed[0][0].constexprs.get(k, fixed.get(k)) for k, how in constexpr_provenance.items()
               if how == "default"}
    return ResolvedKernel(source, signature, tuple(completed), fixed,
                          {**signature.provenance, **constexpr_provenance}, guessed, tuple(notes),
                          {k: v for k, v in name_guesses.items() if k in guessed})


def _run_launch_code(kernel: Any, sites: list[Site], signature: Mapping[str, Any],
                     provenance: dict[str, str]) -> tuple[list[Site], str | None]:
    """Apply the kernel's heuristics, then its ``early_config_prune``, to ``sites``; relabel in
    ``provenance`` the constexprs a heuristic sets (``heuristics``, or ``default`` where it could not run)."""
    for name in getattr(kernel, "heuristics", None) or {}:  # set at launch: no guess, no spec needed
        if provenance.get(name) == "default":
            provenance[name] = "heuristics"
    completed = []
    for config, line, col in sites:
        config, failed = apply_heuristics(kernel, config, signature)
        for name in failed:
            provenance[name] = "default"
        completed.append((config, line, col))
    return apply_early_prune(kernel, completed, signature)


def _explicit_spec(kernel: Any, spec: Mapping[str, Mapping[str, Any]] | None = None,
                  trace: Mapping[tuple[str, str], list] | None = None) -> tuple[Mapping[str, Any] | None, str]:
    """The kernel's signature from the strongest explicit source, and that source's name.

    The loaded spec file first, then the module's sidecar ``<module>.kernelrules.yaml``, then
    the launch trace, then Inductor's ``triton_meta`` in the file itself.
    """
    from .inductor import inductor_signature
    from .signatures import spec_for

    found = spec.get(kernel.name) if spec is not None else None
    if found is not None:
        return found, "spec"
    found = spec_for(kernel)
    if found is not None:
        return found, "spec"
    if trace is not None:
        from .trace import launches_for, trace_signature

        launches = launches_for(trace, kernel.path, kernel.name)
        def_name = getattr(kernel, "def_name", None)
        if not launches and def_name and def_name != kernel.name:  # `kernel = triton.jit(_impl)`: traced as _impl
            launches = launches_for(trace, kernel.path, def_name)
        if launches:
            return trace_signature(launches[0]), "trace"
    found = inductor_signature(kernel.path, kernel.name)
    if found:
        return found, "inductor"
    return None, "spec"


def _configs_of(kernel: Any) -> list[Site]:
    """The kernel's autotune configs with the line and column of the ``triton.Config`` that made each."""
    autotune = getattr(kernel, "autotune", None)
    if autotune is None or not autotune.configs:
        return [(KernelConfig(), None, None)]
    return [(site.config, site.line, site.column + 1) for site in autotune.configs]  # ast columns are 0-based


def guess_constexpr(name: str, flag: bool = False) -> Any:
    """A labelled guess for a constexpr nobody gave: flags False, dtypes tl.float32, block sizes 128, other ints 16.

    The guesses only let the kernel be judged; findings on a guessed kernel carry the
    signature provenance ``default`` in the JSON report, and a spec replaces them.
    ``flag``: the kernel uses it as a condition (:mod:`kernelrules.specify.constexpr_guess`).
    """
    from .constexpr_guess import guess

    return guess(name, flag=flag)


def kernel_function(kernel: Any) -> ast.FunctionDef | None:
    """The kernel's ``ast.FunctionDef`` (None when its source cannot be read)."""
    from ..discover.kernels import ParsedModule, cached_module

    module = cached_module(kernel.path)
    return module.jit_functions.get(kernel.name) if isinstance(module, ParsedModule) else None


def _constexpr_values(kernel: Any, spec: Mapping[str, Any] | None, config: KernelConfig,
                     literals: Mapping[str, Any], source: str = "spec",
                     name_guesses: dict[str, Any] | None = None) -> tuple[dict[str, Any], dict[str, str]]:
    """Constexpr values a config lacks: from the spec, then a launch literal, then a guess.

    Returns the values and each one's provenance (``source``, ``call-site`` or ``default``);
    ``name_guesses`` receives the guesses by name that values a launcher derives replaced.
    """
    from .constexpr_guess import condition_names, is_flag, string_names

    values: dict[str, Any] = {}
    provenance: dict[str, str] = {}
    func = kernel_function(kernel)
    conditions = condition_names(func) if func is not None else set()
    strings = string_names(func) if func is not None else {}
    for param in kernel.params:
        if not param.constexpr or param.name in config.constexprs or param.has_default:
            continue
        if param.name in LAUNCH_OPTIONS and not (spec and param.name in spec):
            continue  # bound to the config's launch option at compile (compilejob.option_parameters)
        if spec and param.name in spec:
            values[param.name], provenance[param.name] = spec[param.name], source
        elif param.name in literals:
            values[param.name], provenance[param.name] = literals[param.name], "call-site"
        elif param.name in strings:
            values[param.name], provenance[param.name] = strings[param.name], "default"
        else:
            flag = is_flag(param.name, param.annotation, conditions)
            values[param.name], provenance[param.name] = guess_constexpr(param.name, flag), "default"
    replaced = _launch_derived(kernel, config, values, provenance)
    if name_guesses is not None:
        name_guesses.update(replaced)
    return values, provenance


def _launch_derived(kernel: Any, config: KernelConfig, values: dict[str, Any],
                    provenance: dict[str, str]) -> dict[str, Any]:
    """Replace guesses that a launch derives from its other arguments (``BK = next_power_of_2(K)``,
    :mod:`kernelrules.specify.launch_relations`); the value stays a guess (``default``) when it rests on one,
    else it is the launch's (``call-site``). Returns the guesses replaced, by name."""
    from ..discover.kernels import ParsedModule, cached_module
    from .launch_relations import derived_values

    guessed = [name for name, how in provenance.items() if how == "default"]
    module = cached_module(kernel.path) if guessed else None
    if not isinstance(module, ParsedModule):
        return {}
    known = {**config.constexprs, **values}
    try:
        derived = derived_values(kernel, module, known, guessed)
    except (RecursionError, MemoryError, ValueError, TypeError, AttributeError):  # absurd launcher source: name guesses
        return {}
    replaced = {name: values[name] for name in derived if values.get(name) != derived[name][0]}
    for name, (value, read) in derived.items():
        values[name] = value
        provenance[name] = "default" if any(provenance.get(r) == "default" for r in read) else "call-site"
    return replaced


def apply_heuristics(kernel: Any, config: KernelConfig, signature: Mapping[str, Any]) -> tuple[KernelConfig, list[str]]:
    """Set the constexprs ``@triton.heuristics`` computes, where its lambda evaluates statically.

    Each lambda gets ``args`` holding the signature's integer values and the config's
    constexprs, as at launch, and runs in the same safe interpreter as autotune lists.
    Returns the config with the values set and the names that could not be evaluated.
    """
    from ..discover.autotune_eval import ConfigEvaluator, Unsupported
    from ..discover.kernels import ParsedModule, cached_module

    heuristics = getattr(kernel, "heuristics", None) or {}
    if not heuristics:
        return config, []
    module = cached_module(kernel.path)
    if not isinstance(module, ParsedModule):
        return config, list(heuristics)
    evaluator = ConfigEvaluator(module.scope())
    args = {k: v for k, v in signature.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    args.update(config.constexprs)
    values, failed = {}, []
    for name, source in heuristics.items():
        try:
            node = ast.parse(source.strip(), mode="eval").body
            if not isinstance(node, ast.Lambda) or len(node.args.args) != 1:
                raise Unsupported("not a one-argument lambda")
            values[name] = evaluator.eval(node.body, {node.args.args[0].arg: dict(args)})
        except (Unsupported, SyntaxError, KeyError, TypeError, ValueError, ZeroDivisionError, RecursionError):
            failed.append(name)
    return config.replace(values), failed


def apply_early_prune(kernel: Any, sites: list[Site], signature: Mapping[str, Any]) -> tuple[list[Site], str | None]:
    """Keep only the configs the kernel's own ``early_config_prune`` keeps, when it is pure.

    ``prune_configs_by={"early_config_prune": fn, ...}`` names a module-level function
    ``fn(configs, named_args, **kwargs)``; it runs in the safe interpreter with the
    configs and the signature's values. Returns the kept sites and a note for the report
    (None when there is no pruner, the reason when it could not be applied).
    """
    from ..discover.autotune_eval import ConfigEvaluator, ConfigSite, Unsupported
    from ..discover.kernels import ParsedModule, cached_module

    text = getattr(getattr(kernel, "autotune", None), "prune_configs_by", None)
    if not text:
        return sites, None
    try:
        node = ast.parse(text.strip(), mode="eval").body
        prune = next(v for k, v in zip(node.keys, node.values)
                     if isinstance(k, ast.Constant) and k.value == "early_config_prune")
    except (SyntaxError, AttributeError, StopIteration):
        return sites, f"prune_configs_by is reported, not applied: {text.strip()[:80]}"
    module = cached_module(kernel.path)
    if not isinstance(module, ParsedModule) or not isinstance(prune, ast.Name) \
            or prune.id not in module.plain_functions:
        return sites, "early_config_prune is not a module-level function of this file; not applied"
    evaluator = ConfigEvaluator(module.scope())
    named_args = {k: v for k, v in signature.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    configs = [ConfigSite(config, line, col) for config, line, col in sites]
    try:
        kept = evaluator.call(module.plain_functions[prune.id], [configs, named_args], {}, prune)
        keys = {site.config.key() for site in kept}
    except (Unsupported, AttributeError, TypeError, KeyError, ValueError):
        return sites, f"{prune.id} is not pure enough to evaluate statically; all configs judged"
    return [s for s in sites if s[0].key() in keys], f"{prune.id} kept {len(keys)} of {len(sites)} configs"


#: Block-size candidates per Inductor size-hint prefix (x, y: pointwise tiles; r0_/r: reduction).
_INDUCTOR_BLOCKS = {"pointwise": (128, 256, 512, 1024), "reduction_x": (1, 8, 64), "reduction_r": (64, 512, 2048)}


def inductor_configs(kernel: Any) -> tuple[list[Site], str] | None:
    """Candidate configs of an Inductor kernel from its ``size_hints``, as its heuristics would try.

    Inductor picks a kernel's block sizes at run time from ``size_hints``; lint judges a
    small set of the candidates the heuristics choose between (capped at the next power
    of two of each hint): pointwise XBLOCK/YBLOCK of 128 to 1024, reduction XBLOCK of
    1 to 64 with R0_BLOCK of 64 to 2048. An approximation, said so in the report.
    """
    from .inductor import inductor_kernel_info

    try:
        info = inductor_kernel_info(kernel.path, kernel.name)
    except KernelrulesError:
        return None
    if info is None or not info.size_hints:
        return None
    params = {p.name for p in kernel.params if p.constexpr}
    axes: dict[str, tuple[int, ...]] = {}
    for prefix, hint in info.size_hints.items():
        cap = 1 << max(int(hint) - 1, 0).bit_length()
        if prefix.startswith("r"):
            name = next((n for n in ("R0_BLOCK", "RBLOCK") if n in params), None)
            choices = _INDUCTOR_BLOCKS["reduction_r"]
        else:
            name = f"{prefix.upper()}BLOCK" if f"{prefix.upper()}BLOCK" in params else None
            choices = _INDUCTOR_BLOCKS["reduction_x" if "reduction" in info.kernel_type else "pointwise"]
        if name:
            axes[name] = tuple(sorted({min(c, cap) for c in choices}))
    if not axes:
        return None
    line = getattr(kernel, "decorator_line", kernel.line)
    sites: list[Site] = []
    for values in itertools.product(*axes.values()):
        block = dict(zip(axes, values))
        warps = 8 if math.prod(values) >= 2048 else 4
        sites.append((KernelConfig.from_dict({**block, "num_warps": warps}), line, 1))
    return sites, f"configs from Inductor size hints {dict(info.size_hints)} ({info.kernel_type})"


def _call_literals(kernel: Any) -> dict[str, Any]:
    """Literal arguments of the kernel's launches in its own file (the first launch that gives one wins)."""
    from .signatures import find_call_sites

    literals: dict[str, Any] = {}
    for site in find_call_sites(kernel):
        for name, value in site.literals.items():
            literals.setdefault(name, value)
    return literals


def uses_dot(kernel: Any) -> bool:
    """Whether the kernel or one of its jit helpers calls ``tl.dot``: only then is a resource
    model worth its probe compiles. Unknown (unreadable source) counts as yes."""
    from ..discover.kernels import ParsedModule, cached_module

    module = cached_module(kernel.path)
    if not isinstance(module, ParsedModule):
        return True
    names = {kernel.name, *getattr(kernel, "helpers", ())}
    jit = getattr(module, "jit_functions", {})
    functions = [jit[n] for n in names if n in jit and getattr(jit[n], "name", None) == n]  # no walk of the module
    if len(functions) < len(names):
        functions = [n for n in ast.walk(module.tree) if isinstance(n, ast.FunctionDef) and n.name in names]
    if len(functions) < len(names):
        return True  # a helper from another module: assume it may hold the dot
    return any(isinstance(node, ast.Attribute) and node.attr in ("dot", "dot_scaled")
               for function in functions for node in ast.walk(function))
