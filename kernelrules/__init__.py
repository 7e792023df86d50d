"""kernelrules: a hardware-aware rules engine and static analyzer for Triton kernels."""

__version__ = "0.1.0"
