"""Pruning inside other tuners: Triton's autotuner, Optuna, a plain ``prune()``, pinned tables."""
