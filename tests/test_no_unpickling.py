"""No load path of any format ever unpickles anything.

``import aprender`` brings ``pickle`` into ``sys.modules`` through numpy, and loading
brings ``joblib`` and ``cloudpickle`` through scikit-learn: the promise is not that
those modules are absent but that nothing calls them. Every unpickling entry point of
``pickle`` and of its C accelerator ``_pickle`` is made to raise while models of
several families are loaded from every format and every .apr variant.
"""

from __future__ import annotations

import _pickle
import pickle
import warnings

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from zoo import CASES

import aprender
from aprender.format import apr, gguf

FAMILIES = ("LogisticRegression", "RandomForestClassifier", "HistGradientBoostingClassifier", "Pipeline-frame",
            "MixtureOfExpertsClassifier", "NgramLm", "KMeans")
_CASES = [next(c for c in CASES if c.id.startswith(family)) for family in FAMILIES]
_KEY = Ed25519PrivateKey.generate()


class _Unpickling(AssertionError):
    pass


def _refuse(*args, **kwargs):
    raise _Unpickling("an unpickling call was made during a load")


@pytest.fixture
def no_unpickling(monkeypatch):
    for module in (pickle, _pickle):
        for name in ("load", "loads", "Unpickler", "_load", "_loads", "_Unpickler"):
            if hasattr(module, name):
                monkeypatch.setattr(module, name, _refuse)
    with pytest.raises(_Unpickling):
        pickle.loads(pickle.dumps(1))


def _saved(model, tmp_path):
    """(path, loader) for every format and .apr variant."""
    out = []
    for name, save, load in [
        ("m.safetensors", aprender.save, aprender.load),
        ("m.apr", aprender.save, aprender.load),
        ("z.apr", lambda m, p: apr.save_file(m, p, compression="zstd"), aprender.load),
        ("s.apr", lambda m, p: apr.save_signed(m, p, _KEY),
         lambda p: apr.load_verified(p, _KEY.public_key())),
        ("e.apr", lambda m, p: apr.save_encrypted(m, p, "pw"), lambda p: apr.load_encrypted(p, "pw")),
        ("m.gguf", aprender.save, aprender.load),
    ]:
        save(model, tmp_path / name)
        out.append((tmp_path / name, load))
    return out


@pytest.mark.parametrize("case", _CASES, ids=lambda c: c.id)
def test_no_load_path_unpickles(case, tmp_path, request) -> None:
    model, _ = case.make()
    files = _saved(model, tmp_path)
    request.getfixturevalue("no_unpickling")
    for path, load in files:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert type(load(path)) is type(model)
        aprender.inspect(path)
        aprender.validate(path)


def test_quantized_gguf_load_does_not_unpickle(tmp_path, request) -> None:
    model, _ = next(c for c in CASES if c.id.startswith("KMeans")).make()
    path = tmp_path / "q.gguf"
    gguf.save_file(model, path, quantize="q8_0")
    request.getfixturevalue("no_unpickling")
    assert type(aprender.load(path)) is type(model)
