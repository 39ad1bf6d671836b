"""The booster library's release a model was saved under, recorded in each booster's node.

A file records it as ``library_version`` so that ``apr inspect`` and a reader can tell
which XGBoost, LightGBM or CatBoost release wrote the trees. Loading never depends on
it: the trees are rebuilt from checked arrays under whatever release is installed, and
files written before the field existed have none, so it is optional on read.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import ModuleType
from typing import Any

from aprender.codec._checks import fail
from aprender.codec._nodes import preview

__all__ = ["FIELD", "check_version", "record_version"]

#: The node field that holds it.
FIELD = "library_version"
#: A release string as the libraries spell them (``3.1.3``, ``1.2.10``, ``4.6.0.99``, ``2.1.0rc1``).
_VERSION = re.compile(r"[0-9][0-9A-Za-z.+\-]{0,39}")


def record_version(library: ModuleType) -> dict[str, str]:
    """The field to add to a booster's node: the release of ``library`` that is saving it."""
    return {FIELD: str(library.__version__)}


def check_version(node: Mapping[str, Any], path: str) -> str | None:
    """The recorded release (``None`` in files that predate the field); a non-release string fails."""
    version = node.get(FIELD)
    if version is not None and (type(version) is not str or not _VERSION.fullmatch(version)):
        raise fail(path, f"'{FIELD}' {preview(version, 40)} is not a release number such as '1.2.10'")
    return version
