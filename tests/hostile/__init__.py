"""The hostile-input matrix (issue 18): generated bad inputs for every command and input format.

:mod:`hostile.cases` says what each case writes, runs and expects; :mod:`hostile.runner` runs
many cases in a few long-lived child processes with time and memory bounds. The test module
is ``tests/cli/test_hostile_matrix.py``; docs/security.md says how to add a case.
"""
