"""Mutation fuzzing of aprender's loaders: SafeTensors, .apr and GGUF.

Seed files of many model families are saved in every format and variant (.apr plain,
zstd, signed, encrypted; GGUF plain and Q8_0). Each mutation is either blind (bit
flips, overwrites, truncation, insertion, deletion, splicing two files) or
structure-aware: an edit of the SafeTensors JSON header, of the aprender metadata tree
(in every format), of the .apr tensor index or of the GGUF tensor table, written back
as a well-formed file with every length, offset and CRC32 recomputed, so that only
the deeper validation can catch it.

Every mutated file is loaded in a worker subprocess with a memory limit
(``resource.setrlimit``) and a time limit per load; a worker handles many loads and
is restarted when it crashes or hangs. A load must either return a model or raise an
``AprenderError``: anything else is an *escape*; a dead worker a *crash*; a load over
the time limit a *hang*; a ``MemoryError`` or a peak RSS over the limit a *memory*
finding. Every finding's file is kept in ``--out`` as a reproducer.

Usage::

    python tools/fuzz.py --mutations 30000 --seed 1 --workers 2 --out fuzz-out
    python tools/fuzz.py --mutations 1000000 --all-cases --out campaign   # long campaign

See docs/fuzzing.md for the figures of the last long campaign.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import hashlib
import json
import os
import random
import select
import struct
import subprocess
import sys
import tempfile
import time
import zlib
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
FORMATS = ("safetensors", "apr", "gguf")
#: One zoo case per model family (the first case whose id starts with each name).
FAMILIES = (
    "LogisticRegression-strings", "RandomForestClassifier", "HistGradientBoostingRegressor-missing",
    "HistGradientBoostingClassifier", "GradientBoostingClassifier", "DecisionTreeRegressor", "KMeans",
    "MiniBatchKMeans", "MLPClassifier", "PCA", "SVC-probability", "SVR", "LinearSVC",
    "KNeighborsClassifier-kd_tree", "KNeighborsRegressor-sparse", "GaussianNB", "MultinomialNB", "TfidfVectorizer",
    "CountVectorizer", "OneHotEncoder", "SimpleImputer", "StandardScaler", "MinMaxScaler", "LabelEncoder",
    "ColumnTransformer-frame-sparse", "Pipeline-frame-columns-logistic", "Pipeline-text", "NgramLm",
    "MixtureOfExpertsClassifier", "MixtureOfExpertsRegressor", "SoftmaxGating", "ContentRecommender",
)
PASSWORD = "fuzz"
_SIGNING_SEED = bytes(range(32))

#: Values a structure-aware edit puts in place of a field.
INTERESTING: tuple[Any, ...] = (
    None, True, False, 0, 1, -1, 2, 7, 31, 32, 33, 64, 255, 256, 65535, 2**31 - 1, 2**31, 2**32, 2**53, 2**62,
    2**63 - 1, 2**63, 2**64 - 1, 2**64, -(2**63), -(2**63) - 1, 10**30, 0.5, -0.0, 1e308, -1e308, "", "x",
    "float64", "int64", "<U3", "|O", "F", "C", "numpy", "int", "nan", "inf", "-inf", "tensor", "estimator", "scalar",
    "MT19937", "PCG64", "q8_0", "sklearn.linear_model.LogisticRegression", "aprender.linear_model.Ridge",
    "x" * 300, [], {}, [0], [1, 1], [0, 2**62], [1] * 40, [[]], {"__t__": "tensor"}, {"__t__": "nope"},
    {"__t__": "estimator", "class": "aprender.cluster.KMeans", "params": {}, "attrs": {}},
)


# -- seeds -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Seed:
    """One seed file: its bytes, format, variant (how to load it) and family."""

    data: bytes
    fmt: str
    variant: str
    family: str


def _models(families: tuple[str, ...] | None, all_cases: bool, breadth: bool) -> list[tuple[str, Any]]:
    """(family, fitted model) pairs: zoo cases, plus every scikit-learn instance with ``breadth``."""
    from zoo import CASES

    if all_cases:
        cases = list(CASES)
    else:
        cases = []
        for name in families or FAMILIES:
            case = next((c for c in CASES if c.id.startswith(name)), None)
            if case is not None and case not in cases:
                cases.append(case)
    models = [(case.id, case.make()[0]) for case in cases]
    if breadth:
        import sklearn_instances

        models += [(key, sklearn_instances.fitted(key)[0]) for key in sorted(sklearn_instances.instances())]
    return models


def make_seeds(families: tuple[str, ...] | None, all_cases: bool, breadth: bool = False) -> list[Seed]:
    """Save a model of each family in every format and variant."""
    import warnings

    sys.path.insert(0, str(REPO / "tests" / "support"))
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    import aprender
    from aprender.format import apr, gguf
    from aprender.format.apr import _crypto

    key = Ed25519PrivateKey.from_private_bytes(_SIGNING_SEED)
    seeds = []
    # Encrypted seeds use a small Argon2id cost so that a campaign measures the parsers, not the KDF.
    cheap = dict(_crypto.ARGON2, memory_cost=64)
    with tempfile.TemporaryDirectory(prefix="aprender-fuzz-seeds-") as folder, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        root = Path(folder)
        for family, model in _models(families, all_cases, breadth):
            writers: dict[tuple[str, str], Callable[..., None]] = {
                ("safetensors", "plain"): aprender.save,
                ("apr", "plain"): apr.save,
                ("apr", "zstd"): lambda m, p: apr.save(m, p, compression="zstd"),
                ("apr", "lz4"): lambda m, p: apr.save(m, p, compression="lz4"),
                ("apr", "signed"): lambda m, p: apr.save_signed(m, p, key),
                ("apr", "encrypted"): lambda m, p: apr.save_encrypted(m, p, PASSWORD),
                ("gguf", "plain"): aprender.save,
                ("gguf", "q8_0"): lambda m, p: gguf.save_file(m, p, quantize="q8_0"),
            }
            for (fmt, variant), write in writers.items():
                path = root / f"seed.{fmt}"
                saved_argon2 = dict(_crypto.ARGON2)
                _crypto.ARGON2.update(cheap)
                try:
                    write(model, path)
                except Exception as exc:  # a model a format cannot hold (q8_0 without weights, a refused class)
                    if not type(exc).__module__.startswith("aprender"):
                        raise
                    continue
                finally:
                    _crypto.ARGON2.clear()
                    _crypto.ARGON2.update(saved_argon2)
                seeds.append(Seed(path.read_bytes(), fmt, variant, family))
    return seeds


# -- blind mutations -----------------------------------------------------------------


def blind(data: bytes, rng: random.Random, donor: bytes) -> bytes:
    """Bit flips, byte overwrites, truncation, insertion, deletion, duplication or a splice."""
    out = bytearray(data)
    n = len(out)
    if n == 0:
        return bytes(rng.randbytes(rng.randint(1, 64)))
    roll = rng.randrange(8)
    if roll == 0:
        for _ in range(rng.randint(1, 8)):
            i = rng.randrange(n)
            out[i] ^= 1 << rng.randrange(8)
    elif roll == 1:
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(n)
            width = rng.choice((1, 2, 4, 8))
            value = rng.choice((0, 0xFF, 0x7F, 0x80, rng.randrange(256)))
            out[i : i + width] = bytes([value]) * min(width, n - i)
    elif roll == 2:
        del out[rng.randrange(n) :]
    elif roll == 3:
        i = rng.randrange(n + 1)
        out[i:i] = rng.randbytes(rng.randint(1, 64))
    elif roll == 4:
        i = rng.randrange(n)
        del out[i : i + rng.randint(1, 256)]
    elif roll == 5:
        i = rng.randrange(n)
        chunk = out[i : i + rng.randint(1, 512)]
        j = rng.randrange(n + 1)
        out[j:j] = chunk
    elif roll == 6:
        cut = rng.randrange(n)
        other = rng.randrange(len(donor) + 1) if donor else 0
        out = out[:cut] + donor[other:]
    else:  # an interesting 4- or 8-byte integer anywhere
        i = rng.randrange(n)
        value = rng.choice((0, 1, 2**31, 2**32 - 1, 2**62, 2**63, 2**64 - 1, n, n + 1))
        out[i : i + 8] = (value % 2**64).to_bytes(8, "little")[: min(8, n - i)]
    return bytes(out)


# -- the metadata tree ------------------------------------------------------------------


def _slots(node: Any, depth: int = 0) -> Iterator[tuple[Any, Any]]:
    """Every (container, key) pair of a JSON tree."""
    if depth > 80:
        return
    if isinstance(node, dict):
        for key in list(node):
            yield node, key
            yield from _slots(node[key], depth + 1)
    elif isinstance(node, list):
        for i in range(len(node)):
            yield node, i
            yield from _slots(node[i], depth + 1)


def mutate_tree(tree: Any, rng: random.Random, n_edits: int = 1) -> Any:
    """Edit a JSON tree: replace, delete, add, swap, retag, rename or copy values."""
    tree = copy.deepcopy(tree)
    for _ in range(n_edits):
        slots = list(_slots(tree))
        if not slots:
            return rng.choice(INTERESTING)
        holder, key = rng.choice(slots)
        value = holder[key]
        roll = rng.randrange(10)
        if roll <= 2:
            holder[key] = copy.deepcopy(rng.choice(INTERESTING))
        elif roll == 3:  # delete a field / element
            del holder[key]
        elif roll == 4 and isinstance(holder, dict):  # an unknown field
            holder[rng.choice(("extra", "__t__", "v", "name", "class", "dtype", "shape"))] = rng.choice(INTERESTING)
        elif roll == 5:  # swap with a sibling (intercept_ <-> classes_, expert arrays, ...)
            siblings = list(holder) if isinstance(holder, dict) else list(range(len(holder)))
            other = rng.choice(siblings)
            holder[key], holder[other] = holder[other], holder[key]
        elif roll == 6:  # copy another subtree here
            other_holder, other_key = rng.choice(slots)
            holder[key] = copy.deepcopy(other_holder[other_key])
        elif roll == 7 and isinstance(value, int) and not isinstance(value, bool):
            holder[key] = value + rng.choice((-1, 1, -value - 1, 2**32, 2**63, -(2**63)))
        elif roll == 8 and isinstance(value, str):
            holder[key] = rng.choice((value + "x", value[:-1], value.upper(), value * 2, "__" + value))
        elif roll == 9 and isinstance(value, (list, dict)):  # wrap or unwrap
            holder[key] = rng.choice(([value], {"__t__": "tuple", "v": value} if isinstance(value, list) else value,
                                      {"__t__": "dict", "items": [[1, value]]}))
        else:
            holder[key] = copy.deepcopy(rng.choice(INTERESTING))
    return tree


def _dumps(tree: Any) -> bytes:
    return json.dumps(tree, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


# -- SafeTensors ------------------------------------------------------------------------


def safetensors_structured(data: bytes, rng: random.Random) -> bytes | None:
    """Edit the JSON header (a tensor entry) or the aprender metadata tree in it."""
    n = int.from_bytes(data[:8], "little")
    header = json.loads(data[8 : 8 + n])
    body = data[8 + n :]
    meta = header.get("__metadata__", {})
    if "aprender" in meta and rng.random() < 0.6:
        meta["aprender"] = _dumps(mutate_tree(json.loads(meta["aprender"]), rng, rng.choice((1, 1, 1, 2, 3)))).decode()
    else:
        names = [k for k in header if k != "__metadata__"]
        if not names:
            return None
        entry = header[rng.choice(names)]
        header = mutate_tree(header, rng) if rng.random() < 0.2 else header
        fieldname = rng.choice(("dtype", "shape", "data_offsets"))
        if fieldname == "dtype":
            entry["dtype"] = rng.choice(("F64", "F32", "F16", "BF16", "I64", "I32", "I8", "U8", "BOOL", "F8_E4M3",
                                         "C64", "x", 1, None))
        elif fieldname == "shape" and isinstance(entry.get("shape"), list):
            entry["shape"] = rng.choice(([0, 2**62], [1] * 255, [2**32, 2**32], [], [-1], entry["shape"][::-1],
                                         [*entry["shape"], 1], entry["shape"][:-1]))
        elif isinstance(entry.get("data_offsets"), list):
            begin, end = entry["data_offsets"]
            entry["data_offsets"] = rng.choice(([begin, end + 8], [begin - 8, end], [end, begin], [0, 2**63],
                                                [begin, begin]))
    raw = _dumps(header)
    return struct.pack("<Q", len(raw)) + raw + body


# -- .apr -------------------------------------------------------------------------------

_APR_HEADER = struct.Struct("<4sBBHIQIQQI20s")


def _align(n: int) -> int:
    return -(-n // 64) * 64


def _apr_finish(out: bytearray) -> bytes:
    """Recompute the header CRC (bytes 0-39 and 44-63) and the footer CRC (everything before it)."""
    crc = zlib.crc32(bytes(out[44:64]), zlib.crc32(bytes(out[:40])))
    out[40:44] = crc.to_bytes(4, "little")
    out[-4:] = zlib.crc32(bytes(out[:-4])).to_bytes(4, "little")
    return bytes(out)


def apr_structured(data: bytes, rng: random.Random) -> bytes | None:
    """Edit the metadata tree (relaying out the file) or a field of the tensor index; CRCs recomputed."""
    magic, major, minor, flags, count, meta_off, meta_size, index_off, data_off, _, reserved = \
        _APR_HEADER.unpack_from(data)
    roll = rng.random()
    if roll < 0.55:
        meta = json.loads(data[meta_off : meta_off + meta_size])
        raw = _dumps(mutate_tree(meta, rng, rng.choice((1, 1, 1, 2, 3))))
        region = raw + b"\0" * (_align(meta_off + len(raw)) - meta_off - len(raw))
        delta = len(region) - (index_off - meta_off)
        head = _APR_HEADER.pack(magic, major, minor, flags, count, meta_off, len(raw), index_off + delta,
                                data_off + delta, 0, reserved)
        return _apr_finish(bytearray(head + data[64:meta_off] + region + data[index_off:]))
    out = bytearray(data)
    if roll < 0.65:  # a header field
        i = rng.choice((6, 8, 12, 20, 24, 32))
        width = {6: 2, 8: 4, 20: 4}.get(i, 8)
        value = rng.choice((0, 1, 64, 2**31, 2**32 - 1, 2**62, 2**64 - 1, len(data), rng.randrange(len(data) + 1)))
        out[i : i + width] = (value % 2 ** (8 * width)).to_bytes(width, "little")
        return _apr_finish(out)
    # a field of one index entry: dtype code, ndim, a dimension, offset or size
    pos, entries = index_off, []
    for _ in range(count):
        if pos + 2 > data_off:
            return None
        (name_len,) = struct.unpack_from("<H", data, pos)
        ndim = data[pos + 3 + name_len]
        entries.append((pos, name_len, ndim))
        pos += 4 + name_len + 8 * ndim + 16
    if not entries:
        return None
    pos, name_len, ndim = rng.choice(entries)
    at = pos + 2 + name_len
    target = rng.randrange(3 + ndim)
    if target == 0:
        out[at] = rng.choice((0, 3, 5, 7, 9, 13, 14, 16, 17, 18, 99, 255))
    elif target == 1:
        out[at + 1] = rng.choice((0, 1, 2, 33, 255, max(ndim - 1, 0), ndim + 1))
    else:
        field_at = at + 2 + 8 * (target - 2) if target - 2 < ndim else at + 2 + 8 * ndim + 8 * rng.randrange(2)
        old = int.from_bytes(out[field_at : field_at + 8], "little")
        value = rng.choice((0, 1, old + 1, max(old - 1, 0), old * 2, 2**31, 2**32, 2**62, 2**63, 2**64 - 1, 64))
        out[field_at : field_at + 8] = (value % 2**64).to_bytes(8, "little")
    return _apr_finish(out)


# -- GGUF -------------------------------------------------------------------------------


@dataclass(frozen=True)
class _GGUFLayout:
    """Where the parts a mutator edits sit in one GGUF seed file."""

    json_keys: tuple[tuple[int, int, str], ...]  # (start of the u64 length, end of the string, the JSON text)
    tensors: tuple[tuple[int, int], ...]  # (position of n_dims, n_dims) of each tensor info
    infos_end: int
    alignment: int
    data_offset: int


_GGUF_LAYOUTS: dict[bytes, _GGUFLayout] = {}


def _gguf_layout(data: bytes) -> _GGUFLayout:
    digest = hashlib.sha1(data).digest()
    if digest not in _GGUF_LAYOUTS:
        from gguf import GGUFReader

        with tempfile.NamedTemporaryFile(suffix=".gguf") as f:
            f.write(data)
            f.flush()
            reader = GGUFReader(f.name)
            json_keys = []
            for fld in reader.fields.values():
                if fld.name.startswith("aprender.") and [t.name for t in fld.types] == ["STRING"]:
                    text = bytes(fld.parts[-1]).decode()
                    if text[:1] not in ("{", "["):  # versions and other plain strings are not JSON
                        continue
                    start = fld.offset + sum(p.nbytes for p in fld.parts[:-2])
                    json_keys.append((start, start + 8 + len(fld.parts[-1]), text))
            tensors = []
            for t in reader.tensors:
                pos = t.field.offset + 8 + len(t.name.encode())
                tensors.append((pos, int.from_bytes(data[pos : pos + 4], "little")))
            last = max((t.field for t in reader.tensors), key=lambda f: f.offset, default=None) or max(
                reader.fields.values(), key=lambda f: f.offset)
            _GGUF_LAYOUTS[digest] = _GGUFLayout(tuple(json_keys), tuple(tensors),
                                                last.offset + sum(p.nbytes for p in last.parts),
                                                int(reader.alignment), int(reader.data_offset))
    return _GGUF_LAYOUTS[digest]


def gguf_structured(data: bytes, rng: random.Random) -> bytes | None:
    """Edit an aprender JSON key (relaying out the file) or a field of the tensor table."""
    layout = _gguf_layout(data)
    if layout.json_keys and rng.random() < 0.6:
        start, end, text = rng.choice(layout.json_keys)
        new = _dumps(mutate_tree(json.loads(text), rng, rng.choice((1, 1, 2))))
        out = bytearray(data[:start] + struct.pack("<Q", len(new)) + new + data[end : layout.infos_end])
        out += b"\0" * (-len(out) % layout.alignment)
        return bytes(out) + data[layout.data_offset :]
    if not layout.tensors:
        return None
    # A tensor info: name (u64 length + bytes), n_dims (u32), dims (u64 each), type (u32), offset (u64).
    pos, n_dims = rng.choice(layout.tensors)
    out = bytearray(data)
    target = rng.randrange(3 + n_dims)
    value = rng.choice((0, 1, 2, 3, 5, 31, 32, 33, 2**31, 2**32, 2**62, 2**63, 2**64 - 1, rng.randrange(len(data))))
    if target == 0:
        out[pos : pos + 4] = (value % 2**32).to_bytes(4, "little")
    elif target == 1:
        at = pos + 4 + 8 * n_dims
        out[at : at + 4] = rng.choice((0, 1, 2, 8, 12, 13, 24, 26, 30, 99)).to_bytes(4, "little")
    else:
        at = pos + 4 + 8 * n_dims + 4 if target == 2 else pos + 4 + 8 * (target - 3)
        out[at : at + 8] = (value % 2**64).to_bytes(8, "little")
    return bytes(out)


STRUCTURED: dict[str, Callable[[bytes, random.Random], bytes | None]] = {
    "safetensors": safetensors_structured,
    "apr": apr_structured,
    "gguf": gguf_structured,
}


def mutate(seed: Seed, rng: random.Random, donor: bytes) -> tuple[str, bytes]:
    """(kind, mutated bytes): about 55% structure-aware, 45% blind."""
    if rng.random() < 0.55:
        try:
            out = STRUCTURED[seed.fmt](seed.data, rng)
        except (ValueError, KeyError, IndexError, struct.error, UnicodeDecodeError, RecursionError):
            out = None
        if out is not None:
            return "structured", out
    return "blind", blind(seed.data, rng, donor)


# -- the worker -------------------------------------------------------------------------


def _rss_kib() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def limit_address_space(memory_mb: int) -> None:
    """RLIMIT_AS at this process's size after start-up plus ``memory_mb``: what a load may add on top of it."""
    import resource  # Unix only, like the workers that call this

    with open("/proc/self/status") as f:
        vm = next(int(line.split()[1]) for line in f if line.startswith("VmSize:"))
    limit = (vm + memory_mb * 1024) * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _reset_peak() -> None:
    with contextlib.suppress(OSError), open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # resets VmHWM to the current RSS


def worker(memory_mb: int, warmup: Path | None) -> None:
    """Read ``path<TAB>variant`` lines, load each file, answer one line per file.

    The seed files in ``warmup`` are loaded first, so that the lazy imports of every
    family happen before the time limit applies.
    """
    import warnings

    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    import aprender
    from aprender.exceptions import AprenderError
    from aprender.format import apr

    verifying_key = Ed25519PrivateKey.from_private_bytes(_SIGNING_SEED).public_key()
    loaders = {
        "encrypted": lambda p: apr.load_encrypted(p, PASSWORD),
        "signed": lambda p: apr.load_verified(p, verifying_key),
    }
    for line in (warmup.read_text().splitlines() if warmup else []):
        path, variant = line.split("\t")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            loaders.get(variant, aprender.load)(path)
    limit_address_space(memory_mb)
    print("ready", flush=True)
    for line in sys.stdin:
        path, variant = line.rstrip("\n").split("\t")
        _reset_peak()
        base = _rss_kib()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                loaders.get(variant, aprender.load)(path)
            outcome = "loaded"
        except AprenderError as exc:
            outcome = f"error\t{type(exc).__name__}"
        except MemoryError:
            outcome = "memory\tMemoryError"
        except BaseException as exc:  # the finding: any other exception escaped the loader
            outcome = f"escape\t{type(exc).__name__}: {str(exc)[:300]!r}"
        grown = _rss_kib() - base
        if grown > memory_mb * 1024 and not outcome.startswith("memory"):
            outcome = f"memory\tpeak RSS grew by {grown // 1024} MiB"
        print(outcome.replace("\n", " "), flush=True)


class Worker:
    """A worker subprocess: ``load(path, variant, timeout)`` -> outcome line, or crash/hang.

    ``script`` is the module run with ``--worker``; tools/semantic_fuzz.py subclasses this
    class to run its own worker under the same restart and time-limit machinery.
    """

    script = __file__

    def __init__(self, memory_mb: int, warmup: Path | None = None) -> None:
        self.memory_mb = memory_mb
        self.warmup = warmup
        self.proc: subprocess.Popen | None = None
        self.restarts = 0

    def _start(self) -> None:
        command = [sys.executable, self.script, "--worker", "--memory-mb", str(self.memory_mb)]
        command += ["--warmup", str(self.warmup)] if self.warmup else []
        self.proc = subprocess.Popen(command,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, bufsize=1, env={**os.environ, "OMP_NUM_THREADS": "1",
                                                                  "OPENBLAS_NUM_THREADS": "1"})
        if self.proc.stdout.readline().strip() != "ready":
            raise RuntimeError("fuzz worker failed to start")

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None

    def restart(self) -> None:
        """Kill the worker; the next ``send`` starts a fresh one."""
        self.stop()
        self.restarts += 1

    def send(self, path: str, variant: str) -> None:
        """Ask the worker to load ``path``."""
        if self.proc is None:
            self._start()
        with contextlib.suppress(BrokenPipeError):  # a dead worker answers with EOF: a crash
            self.proc.stdin.write(f"{path}\t{variant}\n")
            self.proc.stdin.flush()


# -- the campaign -----------------------------------------------------------------------


@dataclass
class Report:
    """Counts of a campaign."""

    mutations: Counter = field(default_factory=Counter)  # per format
    kinds: Counter = field(default_factory=Counter)  # (format, blind|structured)
    outcomes: Counter = field(default_factory=Counter)  # (format, loaded|error|escape|crash|hang|memory)
    errors: Counter = field(default_factory=Counter)  # AprenderError subclasses
    findings: list[dict[str, str]] = field(default_factory=list)
    seconds: float = 0.0
    seeds: int = 0
    families: int = 0
    restarts: int = 0

    def as_dict(self) -> dict[str, Any]:
        total = sum(self.mutations.values())
        return {
            "mutations": total,
            "per_format": dict(self.mutations),
            "kinds": {f"{f}/{k}": n for (f, k), n in sorted(self.kinds.items())},
            "outcomes": {f"{f}/{k}": n for (f, k), n in sorted(self.outcomes.items())},
            "findings": len(self.findings),
            "errors": dict(self.errors.most_common()),
            "seconds": round(self.seconds, 1),
            "rate_per_s": round(total / self.seconds, 1) if self.seconds else 0.0,
            "seeds": self.seeds,
            "families": self.families,
            "worker_restarts": self.restarts,
        }


BAD = ("escape", "crash", "hang", "memory")


def campaign(seeds: list[Seed], n: int, rng_seed: int, *, workers: int = 1, timeout: float = 2.0,
             memory_mb: int = 512, out: Path | None = None, progress: float = 0.0,
             formats: tuple[str, ...] = FORMATS) -> Report:
    """Apply ``n`` mutations round-robin over ``formats``; load each in a worker.

    The workers are kept busy: a worker gets its next file as soon as it answers, so a
    slow load holds up only its own worker. The outcome of every mutation does not depend
    on which worker loads it, so a fixed ``rng_seed`` gives the same files and counts.
    """
    rng = random.Random(rng_seed)
    by_format = {f: [s for s in seeds if s.fmt == f] for f in formats}
    by_format = {f: s for f, s in by_format.items() if s}
    report = Report(seeds=len(seeds), families=len({s.family for s in seeds}))
    start = last = time.monotonic()
    # Mutated files go to memory where the OS offers it: the campaign writes millions.
    shm = "/dev/shm" if os.path.isdir("/dev/shm") else None
    with tempfile.TemporaryDirectory(prefix="aprender-fuzz-", dir=shm) as folder:
        manifest = Path(folder) / "seeds.txt"
        lines = []
        for i, seed in enumerate(s for group in by_format.values() for s in group):
            path = Path(folder) / f"seed{i}.{seed.fmt}"
            path.write_bytes(seed.data)
            lines.append(f"{path}\t{seed.variant}")
        manifest.write_text("\n".join(lines) + "\n")
        pool = [Worker(memory_mb, manifest) for _ in range(max(workers, 1))]
        free = list(pool)
        busy: dict[Worker, _Job] = {}
        done = 0
        try:
            while done < n:
                while free and done + len(busy) < n:
                    i = done + len(busy)
                    fmt = list(by_format)[i % len(by_format)]
                    seed = rng.choice(by_format[fmt])
                    donor = rng.choice(by_format[fmt]).data
                    kind, data = mutate(seed, rng, donor)
                    w = free.pop()
                    path = os.path.join(folder, f"w{pool.index(w)}.{fmt}")
                    with open(path, "wb") as f:
                        f.write(data)
                    w.send(path, seed.variant)  # may restart the worker: the clock starts after
                    busy[w] = _Job(seed, kind, path, data)
                for w, outcome in _answers(busy, timeout):
                    job = busy.pop(w)
                    _record(report, job, outcome, out)
                    free.append(w)
                    done += 1
                if progress and time.monotonic() - last > progress:
                    last = time.monotonic()
                    report.seconds = last - start
                    print(json.dumps(report.as_dict()), file=sys.stderr, flush=True)
        finally:
            for w in pool:
                report.restarts += w.restarts
                w.stop()
    report.seconds = time.monotonic() - start
    return report


@dataclass
class _Job:
    """A mutated file a worker is loading."""

    seed: Seed
    kind: str
    path: str
    data: bytes
    started: float = field(default_factory=time.monotonic)
    retried: bool = False


def _answers(busy: dict[Worker, _Job], timeout: float) -> list[tuple[Worker, str]]:
    """Wait for the next answers; a worker over ``timeout`` is restarted and asked once more."""
    now = time.monotonic()
    wait = max(0.0, min(job.started + timeout for job in busy.values()) - now)
    by_pipe = {w.proc.stdout: w for w in busy}
    ready, _, _ = select.select(list(by_pipe), [], [], wait)
    answers = []
    for pipe in ready:
        w = by_pipe[pipe]
        line = pipe.readline()
        if line:
            answers.append((w, line.rstrip("\n")))
        else:
            code = w.proc.wait()
            w.restart()
            answers.append((w, f"crash\tworker exited with {code}"))
    answered = {w for w, _ in answers}
    now = time.monotonic()
    for w, job in busy.items():
        if w in answered or now - job.started < timeout:
            continue
        w.restart()
        if job.retried:
            answers.append((w, f"hang\tno answer within {timeout} s, twice"))
        else:  # a busy machine can stall one load: a hang must repeat in a fresh worker
            w.send(job.path, job.seed.variant)
            job.retried, job.started = True, time.monotonic()
    return answers


def _record(report: Report, job: _Job, outcome: str, out: Path | None) -> None:
    seed = job.seed
    report.mutations[seed.fmt] += 1
    report.kinds[(seed.fmt, job.kind)] += 1
    status, _, detail = outcome.partition("\t")
    report.outcomes[(seed.fmt, status)] += 1
    if status == "error":
        report.errors[detail] += 1
    if status in BAD:
        finding = {"format": seed.fmt, "variant": seed.variant, "family": seed.family, "kind": job.kind,
                   "status": status, "detail": detail}
        if out is not None:
            out.mkdir(parents=True, exist_ok=True)
            digest = hashlib.sha1(job.data).hexdigest()[:12]
            name = f"{status}-{seed.variant}-{digest}.{seed.fmt}"
            (out / name).write_bytes(job.data)
            finding["file"] = name
            with open(out / "findings.jsonl", "a") as f:
                f.write(json.dumps(finding) + "\n")
        report.findings.append(finding)


_NAMES = {"safetensors": "SafeTensors", "apr": ".apr", "gguf": "GGUF"}


def render(report: dict[str, Any]) -> str:
    """The Markdown table of a campaign's report.json, as docs/fuzzing.md shows it."""
    head = ("| format | mutations | blind | structure-aware | `AprenderError` | loaded "
            "| escape | crash | hang | memory |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
    columns = ("blind", "structured")
    outcomes = ("error", "loaded", *BAD)
    totals: Counter = Counter()
    rows = []
    for fmt in FORMATS:
        if fmt not in report["per_format"]:
            continue
        cells = [report["per_format"][fmt]] + [report["kinds"].get(f"{fmt}/{k}", 0) for k in columns]
        cells += [report["outcomes"].get(f"{fmt}/{k}", 0) for k in outcomes]
        totals.update(dict(enumerate(cells)))
        rows.append(f"| {_NAMES[fmt]} | " + " | ".join(f"{c:,}" for c in cells) + " |")
    bold = {0, 5, 6, 7, 8}  # mutations and the four kinds of finding
    cells = [f"**{totals[i]:,}**" if i in bold else f"{totals[i]:,}" for i in range(len(totals))]
    rows.append("| **all** | " + " | ".join(cells) + " |")
    errors = ", ".join(f"`{name}` {n:,}" for name, n in report["errors"].items())
    tail = (f"\n\nErrors raised: {errors}. {report['seeds']:,} seed files of {report['families']} families; "
            f"{report['seconds']:,.0f} s at {report['rate_per_s']} loads per second; "
            f"{report['worker_restarts']} worker restarts.")
    return head + "\n".join(rows) + tail


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mutations", type=int, default=3000, help="mutations in all (round-robin over formats)")
    parser.add_argument("--seed", type=int, default=0, help="random seed of the campaign")
    parser.add_argument("--workers", type=int, default=1, help="worker processes loading in parallel")
    parser.add_argument("--timeout", type=float, default=2.0, help="seconds a load may take before it is a hang")
    parser.add_argument("--memory-mb", type=int, default=512, help="memory a load may use before it is a finding")
    parser.add_argument("--formats", default=",".join(FORMATS), help="comma-separated subset of " + ",".join(FORMATS))
    parser.add_argument("--families", default="", help="comma-separated zoo case prefixes (default: one per family)")
    parser.add_argument("--all-cases", action="store_true", help="seed with every case of tests/support/zoo.py")
    parser.add_argument("--breadth", action="store_true",
                        help="also seed with every scikit-learn estimator instance "
                             "(tests/support/sklearn_instances.py)")
    parser.add_argument("--out", type=Path, default=None, help="folder for reproducers and the JSON report")
    parser.add_argument("--progress", type=float, default=60.0, help="seconds between progress lines (stderr)")
    parser.add_argument("--render", type=Path, default=None, metavar="REPORT_JSON",
                        help="print the Markdown table of a campaign's report.json and exit")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--warmup", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args.memory_mb, args.warmup)
        return 0
    if args.render is not None:
        print(render(json.loads(args.render.read_text())))
        return 0
    families = tuple(f for f in args.families.split(",") if f) or None
    seeds = make_seeds(families, args.all_cases, args.breadth)
    formats = tuple(f for f in args.formats.split(",") if f)
    report = campaign(seeds, args.mutations, args.seed, workers=args.workers, timeout=args.timeout,
                      memory_mb=args.memory_mb, out=args.out, progress=args.progress, formats=formats)
    summary = report.as_dict()
    print(json.dumps(summary, indent=1))
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "report.json").write_text(json.dumps(summary, indent=1) + "\n")
    return 1 if report.findings else 0


if __name__ == "__main__":
    sys.exit(main())
