"""Tables scikit-learn derives from two bounded counts, with no stored array behind them.

``PolynomialFeatures`` stores no arrays: ``powers_`` (read by ``get_feature_names_out``) is
built from ``n_features_in_`` and ``degree`` as an ``n_output_features_`` x ``n_features_in_``
integer table. Each count is within ``aprender._limits``, their product is not: a 480-byte
file with 4,000 features at degree 2 asks for 8,006,001 x 4,000 int64 (256 GB). It is the
cost of the same model fitted honestly, so the load cannot refuse it without refusing real
models (docs/threat-model.md, "Known gaps"); the test fails until the cost is bounded.
"""

from __future__ import annotations

import copy
import subprocess
import sys
from math import comb

import pytest
from sklearn.preprocessing import PolynomialFeatures

from aprender.codec import ModelState, to_state
from aprender.format import safetensors

_USE = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
import aprender
m = aprender.load(sys.argv[1])
try:
    m.get_feature_names_out()
except MemoryError:
    print("MemoryError")
else:
    print("OK")
"""


@pytest.mark.xfail(strict=True, reason="powers_ is n_output_features_ x n_features_in_; no bound on the product yet")
def test_feature_names_of_a_wide_polynomial_file_stay_within_memory(tmp_path) -> None:
    state = to_state(PolynomialFeatures(2).fit([[0.0, 1.0, 2.0]]))
    meta = copy.deepcopy(state.meta)
    attrs = meta["model"]["attrs"]
    attrs["n_features_in_"] = 4000
    attrs["n_output_features_"] = attrs["_n_out_full"] = comb(4000 + 2, 2)
    path = tmp_path / "wide.safetensors"
    path.write_bytes(safetensors.state_to_bytes(ModelState(tensors=dict(state.tensors), meta=meta)))
    assert path.stat().st_size < 1000
    done = subprocess.run([sys.executable, "-c", _USE, str(path)], capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.stdout.strip() == "OK", done.stdout + done.stderr[-500:]
