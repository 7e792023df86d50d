"""Predict resources and performance of configs without compiling them."""
