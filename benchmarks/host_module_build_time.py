"""How long Triton takes to build its host modules with the C compiler on this machine.

    python benchmarks/host_module_build_time.py [--runs 3]

Before a process launches its first kernel, Triton (NVIDIA backend) compiles its CUDA helper
module (``driver.c``) and, for each kernel signature, a launcher (``make_launcher``), each with
``gcc -O3 -shared`` (``triton.runtime.build._build``), unless ``TRITON_CACHE_DIR`` holds them
already; ``kernelrules tune`` keeps them between studies for that reason
(``kernelrules/tune/host_modules.py``). This times those two builds as Triton runs them. On a
machine without the NVIDIA driver it links against an empty stand-in ``libcuda.so`` (the
modules are then built, not loaded), which leaves the compile itself unchanged. Prints the
median of ``--runs`` builds of each.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time


def stand_in_libcuda(folder: str) -> list[str]:
    """Library folders to link with: the driver's where Triton finds it, else an empty stand-in in ``folder``."""
    from triton.backends.nvidia import driver

    try:
        return driver.library_dirs()
    except Exception:  # noqa: BLE001 - no NVIDIA driver here: link against an empty libcuda
        library = os.path.join(folder, "libcuda.so.1")
        subprocess.run(["gcc", "-shared", "-fPIC", "-o", library, "-x", "c", os.devnull], check=True)
        os.symlink(library, os.path.join(folder, "libcuda.so"))
        return [folder]


def build_seconds(name: str, source: str, library_dirs: list[str]) -> float:
    """One build of ``source`` as Triton builds a host module, in a fresh folder."""
    from triton.backends.nvidia import driver
    from triton.runtime import build

    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "main.c")
        with open(path, "w") as f:
            f.write(source)
        began = time.perf_counter()
        build._build(name, path, folder, library_dirs, driver.include_dirs, driver.libraries, [])
        return time.perf_counter() - began


def main(argv: list[str] | None = None) -> int:
    from triton.backends.nvidia import driver

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    helper = open(os.path.join(os.path.dirname(driver.__file__), "driver.c")).read()
    launcher = driver.make_launcher({}, {0: "*fp16", 1: "*fp16", 2: "*fp16", 3: "i32", 4: "constexpr"}, None)
    with tempfile.TemporaryDirectory() as libs:
        dirs = stand_in_libcuda(libs)
        for name, source in (("cuda_utils", helper), ("__triton_launcher", launcher)):
            times = [build_seconds(name, source, dirs) for _ in range(args.runs)]
            print(f"{name:18s} median {statistics.median(times):.2f} s (min {min(times):.2f}, max {max(times):.2f}, "
                  f"{args.runs} builds)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
