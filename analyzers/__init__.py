"""Analyzers: readers of what Triton emits (IR, PTX, SASS) and pure hardware models."""
