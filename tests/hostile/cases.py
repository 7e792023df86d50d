"""Every hostile case, by name: the union of the generators of each input format.

Names are ``FORMAT/KIND/VARIANT`` (``yaml/prune-space/alias-bomb``); they are stable, so
``pytest tests/cli/test_hostile_matrix.py -k alias-bomb`` reruns a slice. To add a case, add a
variant to the generator of its format (docs/security.md, "The hostile-input matrix").
"""

from __future__ import annotations

from functools import lru_cache

from .model import Case


@lru_cache(maxsize=1)
def _all() -> tuple[Case, ...]:
    from .cases_cli import cli_cases
    from .cases_json import json_cases
    from .cases_python import python_cases
    from .cases_yaml import yaml_cases

    found = [*python_cases(), *yaml_cases(), *json_cases(), *cli_cases()]
    names = [c.name for c in found]
    duplicates = {n for n in names if names.count(n) > 1}
    if duplicates:
        raise ValueError(f"duplicate hostile case names: {sorted(duplicates)}")
    return tuple(found)


def all_cases() -> list[Case]:
    return list(_all())
