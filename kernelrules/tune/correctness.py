"""Correctness gates: a kernel's outputs against a float64 reference.

* outputs are poisoned (NaN for floats, a sentinel for integers) before every checked
  launch, so an element the kernel never writes is caught;
* the reference is computed in float64 (the inputs converted, the expression
  evaluated), so rounding in the kernel's own precision is told apart from bugs;
* tolerances follow the least precise dtype of the problem (:data:`TOLERANCES`,
  overridable with ``problem.tolerance``): element ``i`` passes when
  ``|out_i - ref_i| <= atol * rms(ref) + rtol * |ref_i|``;
* an element that fails that bound still passes when its error is within twice the
  largest error of the same reference evaluated in the problem's own precision (the
  *rounding floor*: what a correct low-precision implementation gets wrong);
* NaN never passes: a non-finite output where the reference is finite fails, and so
  does any NaN in the output.
"""

from __future__ import annotations

from typing import Any, Mapping

#: dtype -> (rtol, atol); atol is relative to the reference's root mean square.
TOLERANCES = {
    "fp8e4nv": (0.25, 0.25), "fp8e5": (0.25, 0.25), "bf16": (0.04, 0.04), "fp16": (0.01, 0.01),
    "fp32": (0.005, 0.005), "fp64": (1e-9, 1e-9),
}
INTEGER_DTYPES = ("i1", "i8", "i16", "i32", "i64", "u8")


def tolerance_for(dtype: str, override: Mapping[str, float] | None = None) -> tuple[float, float]:
    """(rtol, atol) for a dtype, with the space file's override applied."""
    rtol, atol = TOLERANCES.get(dtype, (0.0, 0.0) if dtype in INTEGER_DTYPES else TOLERANCES["fp32"])
    if override:
        rtol, atol = override.get("rtol", rtol), override.get("atol", atol)
    return rtol, atol


def poison(tensor: Any) -> None:
    """Fill an output buffer with a value a correct kernel never leaves behind."""
    import torch

    if tensor.dtype.is_floating_point:
        tensor.fill_(float("nan"))
    elif tensor.dtype == torch.bool:
        tensor.fill_(True)
    else:
        tensor.fill_(torch.iinfo(tensor.dtype).min)


def poisoned_count(tensor: Any) -> int:
    """How many elements of an output still hold :func:`poison`'s value, or are not finite (NaN or inf in a float
    tensor); 0 for a bool tensor, whose poison a kernel may write."""
    import torch

    if tensor.dtype.is_floating_point:
        return int((~torch.isfinite(tensor)).sum())
    if tensor.dtype == torch.bool:
        return 0
    return int((tensor == torch.iinfo(tensor.dtype).min).sum())


def compare(name: str, out: Any, ref64: Any, *, rtol: float, atol: float, floor: Any = None) -> dict[str, Any]:
    """Compare one output with its float64 reference; a dict with ``ok`` and the evidence."""
    import torch

    if tuple(out.shape) != tuple(ref64.shape):
        return {"ok": False, "output": name,
                "message": f"{name}: shape {tuple(out.shape)} but the reference has {tuple(ref64.shape)}"}
    total = out.numel()
    if not out.dtype.is_floating_point and not ref64.dtype.is_floating_point:
        bad = out.to(torch.int64) != ref64.to(torch.int64)
        count = int(bad.sum())
        if count:
            first = tuple(int(i) for i in torch.nonzero(bad)[0])
            return {"ok": False, "output": name, "bad": count, "total": total, "first_bad": first,
                    "message": f"{name}: {count} of {total} elements differ (first at {first})"}
        return {"ok": True, "output": name, "bad": 0, "total": total, "max_abs_error": 0.0}
    got = out.to(torch.float64)
    ref = ref64.to(torch.float64)
    nan = torch.isnan(got)
    nonfinite = (~torch.isfinite(got) & torch.isfinite(ref)) | nan
    if int(nonfinite.sum()):
        count = int(nonfinite.sum())
        first = tuple(int(i) for i in torch.nonzero(nonfinite)[0])
        return {"ok": False, "output": name, "bad": count, "total": total, "first_bad": first, "nan": True,
                "message": f"{name}: {count} of {total} elements are NaN/Inf (never written: outputs are poisoned "
                           f"with NaN; or overflowed), first at {first}"}
    finite = torch.isfinite(ref)
    err = torch.where(finite, (got - ref).abs(), torch.where(got == ref, 0.0, float("inf")))
    ref_finite = torch.where(finite, ref, 0.0)
    rms = float(ref_finite.pow(2).mean().sqrt()) if total else 0.0
    bound = atol * rms + rtol * ref_finite.abs()
    floor_error = None
    if floor is not None and tuple(floor.shape) == tuple(ref.shape):
        floor_error = float(torch.where(finite, (floor.to(torch.float64) - ref).abs(), 0.0).max()) if total else 0.0
        if floor_error == floor_error:  # not NaN
            bound = torch.maximum(bound, torch.full_like(bound, 2 * floor_error))
        else:
            floor_error = None
    bad = err > bound
    count = int(bad.sum())
    max_abs = float(err.max()) if total else 0.0
    rel = err / ref_finite.abs().clamp_min(max(rms, 1e-30) * 1e-3)
    record = {"output": name, "bad": count, "total": total, "max_abs_error": max_abs,
              "max_rel_error": float(rel.max()) if total else 0.0, "rms_reference": rms, "rtol": rtol, "atol": atol,
              "rounding_floor": floor_error}
    if count:
        first = tuple(int(i) for i in torch.nonzero(bad)[0])
        record.update(ok=False, first_bad=first,
                      message=f"{name}: {count} of {total} elements outside tolerance (max abs error {max_abs:.3g}, "
                              f"rtol {rtol:g}, atol {atol:g} x rms {rms:.3g}), first at {first}: got "
                              f"{float(got[first]):.6g}, expected {float(ref[first]):.6g}")
        return record
    record["ok"] = True
    return record
