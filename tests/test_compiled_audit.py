"""The audit of classes whose fitted state reaches compiled code holds, and docs/threat-model.md shows it.

``aprender/codec/schemas/_compiled.py`` is a reviewed table; these tests make it
machine-checked: a class it says is guarded by a schema must have one (not the generic
spec), every key must be allow-listed, every allow-listed class of a compiled family
must be listed, and the generated table in docs/threat-model.md must be current.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from sklearn.cluster._kmeans import _BaseKMeans
from sklearn.decomposition._nmf import _BaseNMF
from sklearn.ensemble._forest import BaseForest
from sklearn.linear_model._stochastic_gradient import BaseSGD
from sklearn.neighbors._base import NeighborsBase
from sklearn.svm._base import BaseLibSVM
from sklearn.tree._classes import BaseDecisionTree

from aprender.codec import _table
from aprender.codec._registry import allow_list, entry_for_key
from aprender.codec.handlers import for_tag
from aprender.codec.schemas._compiled import COMPILED, NESTED
from aprender.codec.schemas._generic import GENERIC
from aprender.exceptions import FormatError

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
from gen_threat_model import PAGE, render  # noqa: E402 - the script that writes the page

#: Families whose every member hands fitted arrays to compiled code (verified in scikit-learn's source).
COMPILED_FAMILIES = (NeighborsBase, BaseLibSVM, BaseSGD, BaseDecisionTree, BaseForest, _BaseNMF, _BaseKMeans)
#: Handlers that rebuild a compiled value from checked fields.
HANDLERS = {"`interp1d`": "interp1d", "`bspline`": "bspline", "`binary_tree`": "binary_tree"}


@pytest.mark.parametrize("key", sorted(COMPILED))
def test_every_audited_class_is_allow_listed_and_guarded_as_stated(key: str) -> None:
    assert key in _table.SCHEMA_MODULES or key in _table.GENERIC, f"{key} is not allow-listed"
    reach = COMPILED[key]
    assert reach.guard in ("schema", "handler", "refused")
    entry = entry_for_key(key)
    if reach.guard == "schema":
        assert entry.spec is not GENERIC and entry.spec.validate is not None, \
            f"{key} reaches compiled code but is stored with the generic spec"
        assert key in _table.SCHEMA_MODULES
    elif reach.guard == "refused":
        with pytest.raises(FormatError, match="cannot be stored or loaded"):
            entry.spec.validate({}, {"n_features_in_": 2}, "m")
    else:
        names = [tag for text, tag in HANDLERS.items() if text in reach.check]
        assert names and all(for_tag(tag) is not None for tag in names), reach.check


@pytest.mark.parametrize("key", sorted(NESTED))
def test_nested_compiled_estimators_have_schemas(key: str) -> None:
    assert key in _table.SCHEMA_MODULES or key in _table.GENERIC
    _, nested = NESTED[key]
    assert COMPILED[nested].guard == "schema"


def test_every_compiled_family_member_is_audited() -> None:
    missing = [e.key for e in allow_list(generic=True)
               if e.key.startswith("sklearn.") and issubclass(e.cls, COMPILED_FAMILIES) and e.key not in COMPILED]
    assert not missing, f"classes of compiled families missing from schemas/_compiled.py: {missing}"


def test_no_audited_schema_class_is_left_generic() -> None:
    generic = sorted(k for k, r in COMPILED.items() if r.guard == "schema" and k in _table.GENERIC)
    assert not generic, generic


def test_threat_model_table_is_generated_from_the_audit() -> None:
    text = PAGE.read_text()
    assert render(text) == text, "docs/threat-model.md is out of date: run python tools/gen_threat_model.py"
    for key in COMPILED:
        assert f"| `{key}` |" in text
