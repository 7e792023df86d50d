"""Cross-compile configs in supervised worker processes, cached on disk."""
