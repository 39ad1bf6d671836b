"""Random corruption of real files: loading fails with an aprender error or yields a model.

Each case saves a zoo model in every loadable format, then loads many randomly
mutated copies (byte flips, truncations, insertions; fixed seed). Whatever the
mutation, ``aprender.load`` must either raise an ``AprenderError`` or return an
estimator — never another exception, a hang or a crash of the interpreter. The
targeted hostile-file tests of each format check the specific messages.
"""

from __future__ import annotations

import random
import warnings

import pytest
from zoo import CASES

import aprender
from aprender.exceptions import AprenderError

FAMILIES = ("LogisticRegression", "RandomForestClassifier", "HistGradientBoostingClassifier", "SVC-probability",
            "KNeighborsClassifier-kd_tree", "MLPClassifier", "Pipeline-frame", "MixtureOfExpertsClassifier", "NgramLm",
            "ColumnTransformer", "ContentRecommender")
FUZZ_CASES = [next(c for c in CASES if c.id.startswith(family)) for family in FAMILIES]
MUTATIONS = 100


def _mutate(raw: bytes, rng: random.Random) -> bytes:
    data = bytearray(raw)
    roll = rng.random()
    if roll < 0.6:
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(len(data))] = rng.randrange(256)
    elif roll < 0.8:
        del data[rng.randrange(len(data)) :]
    else:
        position = rng.randrange(len(data))
        data[position:position] = rng.randbytes(rng.randint(1, 16))
    return bytes(data)


@pytest.mark.parametrize("suffix", [".safetensors", ".apr", ".gguf"])
@pytest.mark.parametrize("case", FUZZ_CASES, ids=lambda c: c.id)
def test_mutated_files_never_escape_aprender_errors(case, suffix, tmp_path) -> None:
    model, _ = case.make()
    original = tmp_path / f"model{suffix}"
    aprender.save(model, original)
    raw = original.read_bytes()
    rng = random.Random(f"{case.id}{suffix}")
    mutated = tmp_path / f"mutated{suffix}"
    outcomes = {"error": 0, "loaded": 0}
    for _ in range(MUTATIONS):
        mutated.write_bytes(_mutate(raw, rng))
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                aprender.load(mutated)
        except AprenderError:
            outcomes["error"] += 1
        else:
            outcomes["loaded"] += 1
    assert outcomes["error"] > 0  # the mutations did reach the validators
    if suffix == ".apr":
        assert outcomes["loaded"] == 0  # the CRC catches every change
