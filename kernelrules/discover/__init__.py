"""Find kernels and their autotune configs in source, without running it."""
