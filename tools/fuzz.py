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
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fuzz_mutations import (  # noqa: F401 - the mutators are fuzz's API too
    INTERESTING,
    STRUCTURED,
    apr_structured,
    blind,
    gguf_structured,
    mutate_tree,
    safetensors_structured,
)

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
                ("apr", "plain"): apr.save_file,
                ("apr", "zstd"): lambda m, p: apr.save_file(m, p, compression="zstd"),
                ("apr", "lz4"): lambda m, p: apr.save_file(m, p, compression="lz4"),
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


def answer_channel() -> Any:
    """The worker's own line to the parent: stdout as it was, with fd 1 sent to /dev/null.

    A lie may set ``verbose=True``: what scikit-learn (or libsvm's C code) then prints must
    not land between the outcome lines the parent reads.
    """
    answers = os.fdopen(os.dup(1), "w", buffering=1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.close(devnull)
    sys.stdout = open(os.devnull, "w")  # noqa: SIM115  (the worker's lifetime)
    return answers


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
    answers = answer_channel()
    print("ready", file=answers, flush=True)
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
        print(outcome.replace("\n", " "), file=answers, flush=True)


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
