"""``python -m kernelrules`` runs the command line."""

from .cli import main

main()
