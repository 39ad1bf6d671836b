"""A quick fixed-seed run of the fuzz harness (tools/fuzz.py), and checks of its mutators.

The run saves models of several families in every format and variant, applies blind
and structure-aware mutations and loads each mutated file in a worker subprocess with a
memory and time limit: every load must return a model or raise an ``AprenderError`` —
no other exception, crash, hang or memory bomb. The long campaign is documented in
docs/fuzzing.md. Reproducers kept in tests/data/fuzz/ must keep failing cleanly.
"""

from __future__ import annotations

import json
import random
import sys
import warnings
from functools import cache
from pathlib import Path

import pytest

import aprender
from aprender.exceptions import AprenderError, ChecksumMismatch, FormatError
from aprender.format import apr

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
import fuzz  # tools/ is not a package

DATA = Path(__file__).parent / "data" / "fuzz"
FAMILIES = ("LogisticRegression-strings", "RandomForestClassifier", "HistGradientBoostingRegressor-missing",
            "Pipeline-frame-columns-logistic", "MixtureOfExpertsClassifier", "NgramLm")


@cache
def _seeds() -> list[fuzz.Seed]:
    return fuzz.make_seeds(FAMILIES, all_cases=False)


@pytest.mark.slow
def test_quick_campaign_finds_nothing(tmp_path) -> None:
    report = fuzz.campaign(_seeds(), 450, rng_seed=14, workers=2, timeout=10.0, out=tmp_path)
    summary = report.as_dict()
    assert report.findings == [], json.dumps(report.findings[:5], indent=1)
    assert summary["per_format"] == {"safetensors": 150, "apr": 150, "gguf": 150}
    for fmt in fuzz.FORMATS:  # both kinds of mutation ran, and they reached the validators
        assert report.kinds[(fmt, "blind")] > 30 and report.kinds[(fmt, "structured")] > 30
        assert report.outcomes[(fmt, "error")] > 75
    assert report.families == len(FAMILIES)


def test_structured_apr_mutations_get_past_the_checksums() -> None:
    """Relaid-out metadata and edited index entries carry correct CRCs: only deeper checks catch them."""
    seed = next(s for s in _seeds() if s.fmt == "apr" and s.variant == "plain")
    rng = random.Random(0)
    errors = []
    for _ in range(60):
        data = fuzz.apr_structured(seed.data, rng)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                apr.loads(data)
        except AprenderError as exc:
            errors.append(exc)
    assert errors and not any(isinstance(e, ChecksumMismatch) for e in errors)


def test_structured_gguf_and_safetensors_mutations_stay_parseable(tmp_path) -> None:
    """A relaid-out GGUF file parses with the gguf package; a SafeTensors header stays JSON."""
    from gguf import GGUFReader

    rng = random.Random(1)
    gguf_seed = next(s for s in _seeds() if s.fmt == "gguf" and s.variant == "plain")
    path = tmp_path / "m.gguf"
    parsed = 0
    for _ in range(30):
        data = fuzz.gguf_structured(gguf_seed.data, rng)
        if data is None or data[:8] != gguf_seed.data[:8] or len(data) == len(gguf_seed.data):
            continue  # tensor-table edits keep the length; the JSON edits relay the file out
        path.write_bytes(data)
        reader = GGUFReader(path)
        assert len(reader.tensors) == len(_gguf_reader_of(gguf_seed, tmp_path).tensors)
        parsed += 1
    assert parsed > 5
    st_seed = next(s for s in _seeds() if s.fmt == "safetensors")
    data = fuzz.safetensors_structured(st_seed.data, random.Random(2))
    n = int.from_bytes(data[:8], "little")
    assert isinstance(json.loads(data[8 : 8 + n]), dict)


def _gguf_reader_of(seed: fuzz.Seed, folder: Path):
    from gguf import GGUFReader

    path = folder / "seed.gguf"
    path.write_bytes(seed.data)
    return GGUFReader(path)


REPRODUCERS = sorted(p for p in DATA.glob("*") if p.suffix in (".apr", ".gguf", ".safetensors"))

#: Each reproducer's refusal: a FormatError whose message says what was wrong, and where.
REFUSALS = {
    "issue14-255-dims.safetensors": "tensor 'w': shape must be a list of 0 to 32 dimensions",
    "issue14-apr-index-shape-0-2e62.apr": "tensor 'coefficients': invalid dimension 4611686018427387904",
    "issue14-argon2-hard-limits.encrypted.apr": "Argon2id memory_cost=2097152, above this reader's limit",
    "issue14-float-v-list.safetensors": "at 'C': 'float' field 'v' must be str, found list",
    "issue14-hgb-bit-generator-list.safetensors": "'numpy_generator' field 'bit_generator' must be str, found list",
    "issue14-hgb-loss-class-dict.safetensors": "at '_loss': 'sklearn_loss' field 'class' must be str, found dict",
    "issue14-huge-int-param.safetensors": "at 'max_iter': integer 1180591620717411303424",
    "issue14-quant-dtype-list.apr": "quantized tensor 'cluster_centers_': invalid original dtype ['float']",
    "issue14-quant-shape-4000-digits.gguf": "quantized tensor 'cluster_centers_': invalid dimension 99999",
    "issue14-quant-type-list.apr": "'quantization' metadata needs a known 'type' and a 'tensors' object",
    "issue14-scalar-dtype-list.safetensors": "at 'n_features_in_': 'scalar' field 'dtype' must be str, found list",
    "issue14-strarray-255-dims.safetensors": "at 'feature_names_in_': shape must be a list of 0 to 32 dimensions",
    "issue14-strarray-shape-huge.safetensors": "at 'feature_names_in_': invalid dimension 4611686018427387904",
    "issue14-tensor-dtype-dict.safetensors": "at 'coef_': 'tensor' field 'dtype' must be str or null, found dict",
    "issue14-tensor-scalar-dict.safetensors": "at 'coef_': 'tensor' field 'scalar' must be str or null, found dict",
    "issue14-type-v-list.safetensors": "at 'class_weight': 'type' field 'v' must be str, found list",
}


def test_every_reproducer_has_its_expected_refusal() -> None:
    assert sorted(REFUSALS) == [p.name for p in REPRODUCERS]


@pytest.mark.parametrize("path", REPRODUCERS, ids=lambda p: p.name)
def test_reproducers_fail_with_aprender_errors(path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(FormatError) as info:
            if ".encrypted." in path.name:
                apr.load_encrypted(path, fuzz.PASSWORD)
            else:
                aprender.load(path)
    assert REFUSALS[path.name] in str(info.value)


def test_a_worker_answers_on_its_own_channel_whatever_a_model_prints() -> None:
    """A lie may set ``verbose=True``: prints from Python or C must not corrupt the outcome lines."""
    import subprocess

    tools = Path(__file__).resolve().parent.parent / "tools"
    code = ("import os, sys; sys.path.insert(0, sys.argv[1]); import fuzz; answers = fuzz.answer_channel(); "
            "print('[Pipeline] fit'); os.write(1, b'libsvm noise\\n'); print('outcome', file=answers)")
    done = subprocess.run([sys.executable, "-c", code, str(tools)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "outcome\n"
