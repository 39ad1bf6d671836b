"""Fitted attributes that describe the fitting machine are the loading machine's (aprender/codec/_fitted.py).

KMeans and its relatives keep ``_n_threads``, the ``num_threads`` of their OpenMP loops in
``predict``, ``transform``, ``score`` and ``partial_fit``. A file that states it as a plain
number used to be obeyed: 1,000 made libgomp abort the interpreter, 100,000 was a SIGSEGV,
-5 made libgomp ask 927 GB and exit. Every value is now the loading machine's; the crafted
files are used in a child process, which must survive.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pytest
from child import load_and_use
from sklearn.utils._openmp_helpers import _openmp_effective_n_threads
from state_edit import hostile

import aprender
from aprender.cluster import BisectingKMeans, KMeans, MiniBatchKMeans
from aprender.codec import ModelState, to_state
from aprender.codec._fitted import MACHINE_STATE
from aprender.format import safetensors

X = np.random.RandomState(0).rand(30, 3)
MODELS = {"KMeans": KMeans, "MiniBatchKMeans": MiniBatchKMeans, "BisectingKMeans": BisectingKMeans}
USE = "m.predict(X); m.transform(X); m.score(X); getattr(m, 'partial_fit', m.fit)(X); m.fit(X); m.predict(X)"


def _stating(model: Any, value: Any, path: Any) -> str:
    state = to_state(model)
    meta = copy.deepcopy(state.meta)
    meta["model"]["attrs"]["_n_threads"] = value
    path.write_bytes(safetensors.state_to_bytes(ModelState(tensors=dict(state.tensors), meta=meta)))
    return str(path)


def test_a_stated_thread_count_never_reaches_openmp(tmp_path: Any) -> None:
    cases = {}
    for name, cls in MODELS.items():
        model = cls(n_clusters=2, random_state=0).fit(X)
        for value in (1000, 100_000, -5, 2**40):
            cases[f"{name}-{value}"] = (_stating(model, value, tmp_path / f"{name}-{value}.safetensors"),
                                        USE + "; assert m._n_threads == EFFECTIVE, m._n_threads")
    setup = ("import numpy as np\nfrom sklearn.utils._openmp_helpers import _openmp_effective_n_threads\n"
             "X = np.random.RandomState(0).rand(30, 3)\nEFFECTIVE = _openmp_effective_n_threads()\n")
    assert set(load_and_use(cases, setup).values()) == {"USED"}


@pytest.mark.parametrize("value", ["8", 2.5, [4], {"__t__": "scalar", "dtype": "int64", "v": 4}, None])
def test_a_thread_count_of_another_kind_is_refused(value: Any, tmp_path: Any) -> None:
    def edit(meta: dict, tensors: dict) -> None:
        meta["model"]["attrs"]["_n_threads"] = value

    err = hostile(KMeans(n_clusters=2, random_state=0).fit(X), edit, tmp_path)
    assert "'_n_threads' is the loading machine's" in str(err)


def test_every_machine_attribute_is_written_as_its_tag(tmp_path: Any) -> None:
    for cls in MODELS.values():
        model = cls(n_clusters=2, random_state=0).fit(X)
        attrs = to_state(model).meta["model"]["attrs"]
        for name, tag in MACHINE_STATE.items():
            assert attrs[name] == {"__t__": tag}
        path = tmp_path / "m.safetensors"
        aprender.save(model, path)
        assert aprender.load(path)._n_threads == _openmp_effective_n_threads()
