"""Valid base inputs the hostile cases start from or sit beside: a small kernel (no ``tl.dot``,
so ``lint --stage config`` and ``prune`` judge it without compiling), its space file, a spec,
a trace, a pinned table and an architecture profile."""

from __future__ import annotations

import json

KERNEL = '''\
import triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({"BLOCK": 64}, num_warps=2), triton.Config({"BLOCK": 128}, num_warps=4)],
                 key=["n"])
@triton.jit
def k(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)
'''

#: A kernel whose autotune list is ``CONFIGS`` (a Python expression) and whose header is ``HEADER``.
KERNEL_WITH_CONFIGS = '''\
import triton
import triton.language as tl
{header}

@triton.autotune(configs={configs}, key=["n"])
@triton.jit
def k(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)
'''

SPACE = '''\
kernel: k.py:k
signature:
  x_ptr: "*fp32"
  y_ptr: "*fp32"
  n: 4096
space:
  BLOCK: [64, 128, 256]
  num_warps: [2, 4]
'''

#: A tune file: the space plus the problem section that says how to run it.
TUNE = SPACE + '''\
problem:
  n: 4096
  dtype: fp32
  inputs:
    x: [n]
  outputs:
    y: [n]
  args:
    x_ptr: x
    y_ptr: y
  grid: cdiv(n, BLOCK)
  reference: x * 2
'''

SPEC = '''\
kernels:
  k:
    signature:
      x_ptr: "*fp32"
      y_ptr: "*fp32"
      n: 4096
'''

TRACE_HEADER = {"format": "kernelrules-trace", "schema_version": 1}
TRACE_RECORD = {"kernel": "k", "path": "k.py", "line": 7, "args": {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": 4096},
                "constexprs": {"BLOCK": 64}, "options": {"num_warps": 2, "num_stages": 3}}
TRACE = json.dumps(TRACE_HEADER) + "\n" + json.dumps(TRACE_RECORD) + "\n"


def pinned_table(**config) -> dict:
    return {"format": "kernelrules-pinned", "version": 1, "kernel": {"name": "k", "key": ["n"]},
            "entries": [{"arch": "hopper", "key": {"n": 4096}, "dtypes": {"x_ptr": "fp32", "y_ptr": "fp32"},
                         "config": config or {"BLOCK": 64, "num_warps": 2}}]}


PINNED = json.dumps(pinned_table(), indent=2) + "\n"

PROFILE = '''\
family: orin
vendor: nvidia
sources:
  ME: "my own notes"
architectures:
  sm_87:
    compute_capability: "8.7"
    aliases: [orin]
    limits:
      warp_size: {value: 32, source: "ME my notes"}
      max_warps_per_sm: {value: 48, source: "ME my notes"}
      max_threads_per_sm: {value: 1536, source: "ME my notes"}
      max_blocks_per_sm: {value: 16, source: "ME my notes"}
      max_threads_per_block: {value: 1024, source: "ME my notes"}
      registers_per_sm: {value: 65536, source: "ME my notes"}
      registers_per_block: {value: 65536, source: "ME my notes"}
      max_registers_per_thread: {value: 255, source: "ME my notes"}
      register_allocation_unit: {value: 256, source: "ME my notes"}
      register_allocation_granularity: {value: warp, source: "ME my notes"}
      register_sub_partitions: {value: 4, source: "ME my notes"}
      shared_memory_per_sm: {value: 167936, source: "ME my notes"}
      shared_memory_per_block: {value: 49152, source: "ME my notes"}
      shared_memory_per_block_optin: {value: 166912, source: "ME my notes"}
      reserved_shared_memory_per_block: {value: 1024, source: "ME my notes"}
      shared_memory_allocation_granularity: {value: 128, source: "ME my notes"}
      shared_memory_carveout_steps: {value: [0, 8192, 16384, 32768, 65536, 102400, 135168, 167936], source: "ME my notes"}
      shared_memory_banks: {value: 32, source: "ME my notes"}
      bank_width_bytes: {value: 4, source: "ME my notes"}
    features:
      triton_target: {value: sm_87, source: "ME my notes"}
      mma_sync_shapes: {value: [m16n8k16], source: "ME my notes"}
      wgmma: {value: false, source: "ME my notes"}
      fp8_dtypes: {value: [fp8e4b15, fp8e5], source: "ME my notes"}
      fp8_mma_dtypes: {value: [], source: "ME my notes"}
      fp8_tensor_cores: {value: false, source: "ME my notes"}
      tf32: {value: true, source: "ME my notes"}
      bf16: {value: true, source: "ME my notes"}
      cp_async: {value: true, source: "ME my notes"}
      tma: {value: false, source: "ME my notes"}
      clusters: {value: false, source: "ME my notes"}
      max_num_ctas: {value: 1, source: "ME my notes"}
      waves_per_eu_supported: {value: false, source: "ME my notes"}
'''
