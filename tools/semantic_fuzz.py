"""Semantic fuzzing: model files valid in every byte that lie about what they hold.

Byte mutation (tools/fuzz.py) rarely produces a file that parses, passes every
structural check and still describes an impossible model. This campaign writes such
files on purpose. Every seed -- each scikit-learn instance tests/support/sklearn_instances.py
builds and each case of tests/support/zoo.py, fitted on small data -- is turned into its
ModelState, and one lie at a time is written back with the library's own SafeTensors
writer, so that only the semantic checks stand between the file and compiled code:

tensor lengths and dimensions, out-of-range indices, NaN and inf, swapped siblings and
false integers in the metadata (tools/semantic_lies.py lists them); with ``--kinds meaning``
hyperparameters, kwargs dicts, transplanted nested estimators, private flags and widened
strings (tools/semantic_meaning.py). The seeds are built by tools/semantic_seeds.py.

Each mutant is loaded by a worker subprocess (tools/fuzz.py's ``Worker``: an
``RLIMIT_AS`` memory limit, a time limit, restarted when it dies), which then calls
every inference method the seed answered on its own rows (predict, predict_proba,
decision_function, transform, inverse_transform, score_samples, score, kneighbors,
apply, get_feature_names_out, ...), then ``partial_fit`` and, with ``--refit``, the refits of :data:`PROBES`.
Canary arrays of known contents, allocated before and after the load, must be intact
afterwards. Outcomes:

``refused``   the load raised an ``AprenderError``: the lie was caught;
``harmless``  the model loaded and every method answered;
``raised``    the model loaded and a method raised: not a defect by itself, but a lie
              the load accepted (the list of schema checks still to write);
``escape``    the load raised something other than an ``AprenderError``;
``memory``    a ``MemoryError`` or an RSS growth over ``--memory-mb``, at load or after;
``canary``    memory outside the model changed;
``crash``     the worker died (a signal);
``hang``      no answer within ``--timeout``, twice.

The last five are defects; each one's file is kept in ``--out`` with a line in
``defects.jsonl``. ``accepted.jsonl`` lists the ``raised`` lies, ``outcomes.jsonl`` every lie.

Usage::

    python tools/semantic_fuzz.py --out semantic-out --workers 2            # every lie of every seed
    python tools/semantic_fuzz.py --per-seed 3 --seed 1                      # a quick slice
    python tools/semantic_fuzz.py --render semantic-out/report.json --markdown

See docs/fuzzing.md, "Semantic campaign".
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import random
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fuzz
from semantic_guard import Canaries, Guard
from semantic_lies import Lie, Skip
from semantic_meaning import lies_of, tell
from semantic_seeds import _tests_on_path, build, seed_ids, seed_state

REPO = fuzz.REPO
#: Most elements a lengthened tensor may have: the files stay small.
DEFECTS = ("escape", "memory", "canary", "crash", "hang")
OUTCOMES = ("refused", "harmless", "raised", *DEFECTS)


# -- the worker ----------------------------------------------------------------------------

#: (method, how to call it on the seed's context): the rows, the seed's own predictions as y,
#: and its transform output for inverse_transform.
CALLS: tuple[tuple[str, Callable[[Any, dict], Any]], ...] = (
    ("predict", lambda m, c: m.predict(c["rows"])),
    ("predict_proba", lambda m, c: m.predict_proba(c["rows"])),
    ("predict_log_proba", lambda m, c: m.predict_log_proba(c["rows"])),
    ("decision_function", lambda m, c: m.decision_function(c["rows"])),
    ("transform", lambda m, c: m.transform(c["rows"])),
    ("inverse_transform", lambda m, c: m.inverse_transform(c["Xt"])),
    ("score_samples", lambda m, c: m.score_samples(c["rows"])),
    ("score", lambda m, c: m.score(c["rows"], c["y"])),
    ("kneighbors", lambda m, c: m.kneighbors(c["rows"])),
    ("radius_neighbors", lambda m, c: m.radius_neighbors(c["rows"])),
    ("apply", lambda m, c: m.apply(c["rows"])),
    ("decision_path", lambda m, c: m.decision_path(c["rows"])),
    ("perplexity", lambda m, c: m.perplexity(c["rows"])),
    ("predict_next", lambda m, c: m.predict_next(c["rows"][0])),
    ("recommend_for_text", lambda m, c: m.recommend_for_text(c["rows"][0])),
    # names need no input: a stored width alone decides their cost (`_n_features_out` = 10**9 took 28 s)
    ("get_feature_names_out", lambda m, c: m.get_feature_names_out()),
    ("partial_fit", lambda m, c: m.partial_fit(c["rows"], c["y"])),  # last: it changes the model
)


def _reshaped(rows: Any, wider: bool) -> Any:
    """The rows with a column more (a copy of the first) or less; rows that are not a 2-d array as they are."""
    import numpy as np

    if not isinstance(rows, np.ndarray) or rows.ndim != 2 or rows.shape[1] < 2:
        return rows
    return np.hstack([rows, rows[:, :1]]) if wider else rows[:, :-1]


def _warm(m: Any) -> Any:
    if "warm_start" not in m.get_params(deep=False):
        raise TypeError("no warm_start")
    return m.set_params(warm_start=True)


#: One text with a long run of a letter, then fitting again: on wider and narrower rows, with
#: ``warm_start`` where the class has it (coordinate descent and boosting then reuse the file's
#: arrays). An exception is expected of most; only a crash, hang, changed canary or memory use
#: counts. Last: they change the model.
PROBES: tuple[tuple[str, Callable[[Any, dict], Any]], ...] = (
    # a text a user may well send, on which a backtracking pattern from the file ((a+)+$) runs for minutes
    ("transform of a long run", lambda m, c: m.transform(["a" * 28 + "!"])),
    ("partial_fit wider", lambda m, c: m.partial_fit(_reshaped(c["rows"], True), c["y"])),
    ("partial_fit narrower", lambda m, c: m.partial_fit(_reshaped(c["rows"], False), c["y"])),
    ("warm fit wider", lambda m, c: _warm(m).fit(_reshaped(c["rows"], True), c["y"])),
    ("warm fit narrower", lambda m, c: _warm(m).fit(_reshaped(c["rows"], False), c["y"])),
    ("warm fit", lambda m, c: _warm(m).fit(c["rows"], c["y"])),
    ("fit", lambda m, c: m.set_params(**({"warm_start": False} if "warm_start" in m.get_params(deep=False) else {}))
     .fit(c["rows"], c["y"])),
)
#: Seconds a probe may take on the seed itself to be run on its mutants: a slow refit is not a hang.
PROBE_SECONDS = 2.0
#: Set to leave the probes out (``campaign(refit=False)``, ``--no-refit``): the workers inherit it.
NO_REFIT = "APRENDER_FUZZ_NO_REFIT"
UNCHANGED = " of the unchanged seed"
_step: list[Path] = []  # the file naming the call in progress, for the parent to report a crash in


def _mark(name: str) -> None:
    if _step:
        _step[0].write_text(name)


def _use(value: Any) -> Any:
    """Touch an output as a user would: a sparse matrix is made dense (its indices are read)."""
    import scipy.sparse as sp

    if sp.issparse(value) and value.shape[0] * value.shape[1] <= 10**7:
        return value.toarray()
    if isinstance(value, tuple):
        return tuple(map(_use, value))
    return value


def _quiet(fn: Callable[[], Any]) -> Any:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn()


@lru_cache(maxsize=2)
def _context(seed_id: str) -> tuple[dict, tuple[str, ...]]:
    """The seed's rows, y and transform output, and the methods its own reloaded model answers."""
    import aprender
    from aprender.codec import to_state
    from aprender.format import safetensors

    model, rows = build(seed_id)
    data = safetensors.state_to_bytes(_quiet(lambda: to_state(model)))
    with tempfile.NamedTemporaryFile(suffix=".safetensors") as f:
        f.write(data)
        f.flush()
        fresh = lambda: Guard().walk(_quiet(lambda: aprender.load(f.name)))  # noqa: E731
        pristine = fresh()
        ctx: dict[str, Any] = {"rows": rows, "y": None, "Xt": None}
        with contextlib.suppress(Exception):
            ctx["y"] = _quiet(lambda: pristine.predict(rows))
        with contextlib.suppress(Exception):
            ctx["Xt"] = _quiet(lambda: pristine.transform(rows))
        methods = []
        for name, call in CALLS:
            if not hasattr(pristine, name):
                continue
            model = fresh() if name == "partial_fit" else pristine
            try:
                _quiet(lambda call=call, model=model: _use(call(model, ctx)))
            except Exception:  # the seed itself cannot answer it on these rows: nothing to compare
                continue
            methods.append(name)
        model = fresh()
        for name, call in () if os.environ.get(NO_REFIT) else PROBES:
            if name.startswith("partial_fit") and not hasattr(model, "partial_fit"):
                continue
            _mark(f"{name}{UNCHANGED}")  # a crash here is the seed's own: no lie needed
            start = time.monotonic()
            with contextlib.suppress(Exception):
                _quiet(lambda call=call, model=model: _use(call(model, ctx)))
            if time.monotonic() - start < PROBE_SECONDS:
                methods.append(name)
    return ctx, tuple(methods)


def examine(path: str, seed_id: str, memory_mb: int, keep: Canaries) -> str:
    """Load a mutant and use it; the outcome line ``status<TAB>detail``."""
    import aprender
    from aprender.exceptions import AprenderError

    _step[:] = [Path(path + ".step")]
    ctx, methods = _context(seed_id)
    fuzz._reset_peak()
    base = fuzz._rss_kib()
    before = Canaries(1000)
    try:
        model = _quiet(lambda: aprender.load(path))
    except AprenderError as exc:
        return f"refused\t{type(exc).__name__}"
    except MemoryError:
        return "memory\tMemoryError at load"
    except BaseException as exc:  # the finding: a foreign exception escaped the loader
        return f"escape\t{type(exc).__name__}: {str(exc)[:300]!r}"
    after = Canaries(2000)
    model = Guard().walk(model)
    status, detail = "harmless", ""
    calls = dict(CALLS + PROBES)
    for name in methods:
        _mark(name)  # what the parent reports if this call kills or stalls the worker
        try:
            _quiet(lambda name=name: _use(calls[name](model, ctx)))
        except MemoryError:
            status, detail = "memory", f"MemoryError in {name}"
            break
        except Exception as exc:
            if status == "harmless" and name in dict(CALLS):
                status, detail = "raised", f"{name}: {type(exc).__name__}: {str(exc)[:200]!r}"
    moved = after.changed() or before.changed() or keep.changed()
    if moved:
        return f"canary\t{moved} ({status}: {detail})"
    grown = fuzz._rss_kib() - base
    if grown > memory_mb * 1024 and status != "memory":
        return f"memory\tpeak RSS grew by {grown // 1024} MiB"
    return f"{status}\t{detail}"


def worker(memory_mb: int) -> None:
    """Read ``path<TAB>seed id`` lines; answer one outcome line for each."""

    import sklearn  # noqa: F401

    import aprender  # noqa: F401  (imported before the limit applies)

    _tests_on_path()
    import sklearn_instances  # noqa: F401
    import zoo  # noqa: F401

    keep = Canaries(0)
    fuzz.limit_address_space(memory_mb)
    answers = fuzz.answer_channel()
    print("ready", file=answers, flush=True)
    for line in sys.stdin:
        path, seed_id = line.rstrip("\n").split("\t")
        print(examine(path, seed_id, memory_mb, keep).replace("\n", " "), file=answers, flush=True)


class Worker(fuzz.Worker):
    """tools/fuzz.py's worker process, running this module's ``worker``."""

    script = __file__


# -- the campaign --------------------------------------------------------------------------


@dataclass(frozen=True)
class _Seed:
    """What tools/fuzz.py's job bookkeeping reads of a seed: ``variant`` is sent with the path."""

    variant: str  # the seed id
    cls: str


def _short(key: str) -> str:
    return key.rsplit(".", 1)[-1]


@dataclass
class Report:
    """Counts per class (the seed's top-level class) and the defects found."""

    rows: dict[str, Counter] = field(default_factory=lambda: defaultdict(Counter))
    defects: list[dict[str, str]] = field(default_factory=list)
    seeds: int = 0
    refused_seeds: list[str] = field(default_factory=list)
    seconds: float = 0.0
    restarts: int = 0
    rng_seed: int = 0

    def as_dict(self) -> dict[str, Any]:
        total = Counter()
        for row in self.rows.values():
            total.update(row)
        return {"seeds": self.seeds, "classes": len(self.rows), "totals": dict(total),
                "per_class": {k: dict(v) for k, v in sorted(self.rows.items())}, "defects": self.defects,
                "refused_seeds": self.refused_seeds, "rng_seed": self.rng_seed, "seconds": round(self.seconds, 1),
                "worker_restarts": self.restarts}


def _sample(lies: list[Lie], k: int, rng: random.Random) -> list[Lie]:
    """All ``lies`` shuffled, the first ``k`` of as many different kinds as there are (a length, an index, ...)."""
    by_kind: dict[str, list[Lie]] = defaultdict(list)
    for lie in lies:
        by_kind[lie.kind].append(lie)
    kinds = rng.sample(sorted(by_kind), min(k, len(by_kind)))
    picked = [rng.choice(by_kind[kind]) for kind in kinds]
    rest = [lie for lie in lies if lie not in picked]
    return picked + rng.sample(rest, len(rest))


def jobs(ids: list[str], rng_seed: int, per_seed: int | None, report: Report, truth: bool = False,
         only: dict[str, list[tuple[str, str]]] | None = None,
         kinds: str = "shape") -> Iterator[tuple[_Seed, Lie, bytes]]:
    """Every (seed, lie, mutant bytes), seed by seed, in a fixed order; skipped lies are counted.

    With ``truth`` each seed's file is sent unchanged: every outcome must be ``harmless``.
    ``only`` maps a seed id to the (kind, target) lies to tell it, instead of all of them;
    ``kinds`` picks the lies otherwise: ``shape``, ``meaning`` (tools/semantic_meaning.py) or ``all``.
    """
    import warnings

    for seed_id in ids:
        state = seed_state(seed_id)
        if state is None:
            report.refused_seeds.append(seed_id)
            continue
        report.seeds += 1
        seed = _Seed(seed_id, _short(state.meta["model"]["class"]))
        rng = random.Random(f"{rng_seed}:{seed_id}")
        key = state.meta["model"]["class"]
        if only is not None:
            lies = [Lie(kind, target, key) for kind, target in only.get(seed_id, ())]
        else:
            lies = [Lie("none", "", key)] if truth else lies_of(state, rng, kinds)
        if per_seed is not None:
            lies = _sample(lies, per_seed, rng)
        told = 0
        for lie in lies:
            if per_seed is not None and told == per_seed:
                break
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    data = tell(state, lie, rng_seed)
            except Skip:
                report.rows[seed.cls]["skipped"] += 1
                continue
            told += 1
            yield seed, lie, data


def campaign(ids: list[str], rng_seed: int = 0, *, per_seed: int | None = None, workers: int = 1,
             timeout: float = 10.0, memory_mb: int = 1024, out: Path | None = None,
             progress: float = 0.0, truth: bool = False, only: dict[str, list[tuple[str, str]]] | None = None,
             max_defects: int | None = None, kinds: str = "shape", refit: bool = False) -> Report:
    """Tell every lie (or ``per_seed`` of each seed's, sampled) and load each mutant in a worker.

    ``only`` restricts the lies (see :func:`jobs`); after ``max_defects`` defects no more are told.
    With ``refit`` the loaded model is also fitted again (:data:`PROBES`).
    """
    if refit:
        os.environ.pop(NO_REFIT, None)
    else:
        os.environ[NO_REFIT] = "1"
    report = Report(rng_seed=rng_seed)
    todo = jobs(ids, rng_seed, per_seed, report, truth, only, kinds)
    start = last = time.monotonic()
    shm = "/dev/shm" if os.path.isdir("/dev/shm") else None
    with tempfile.TemporaryDirectory(prefix="aprender-semantic-", dir=shm) as folder:
        pool = [Worker(memory_mb) for _ in range(max(workers, 1))]
        free, busy = list(pool), {}
        lies: dict[int, Lie] = {}
        broken: set[str] = set()  # seeds whose unchanged file crashed or hung a refit
        exhausted = False
        try:
            while busy or not exhausted:
                while free and not exhausted:
                    full = max_defects is not None and len(report.defects) >= max_defects
                    job = None if full else next(todo, None)
                    if job is None:
                        exhausted = True
                        break
                    seed, lie, data = job
                    if seed.variant in broken:  # its own file crashes a refit: one report is enough
                        report.rows[seed.cls]["skipped"] += 1
                        continue
                    w = free.pop()
                    path = os.path.join(folder, f"w{pool.index(w)}.safetensors")
                    Path(path).write_bytes(data)
                    w.send(path, seed.variant)
                    busy[w] = fuzz._Job(seed, lie.kind, path, data)
                    lies[id(busy[w])] = lie
                if not busy:
                    break
                for w, outcome in fuzz._answers(busy, timeout):
                    job = busy.pop(w)
                    outcome = _with_step(outcome, job.path)
                    if outcome.endswith(UNCHANGED):
                        broken.add(job.seed.variant)
                    status = _record(report, job.seed, lies.pop(id(job)), job.data, outcome, out)
                    if status in ("escape", "memory", "canary"):  # the heap may be damaged: start afresh
                        w.restart()
                    free.append(w)
                if progress and time.monotonic() - last > progress:
                    last = time.monotonic()
                    report.seconds = last - start
                    totals = report.as_dict()["totals"]
                    print(json.dumps({"seeds": report.seeds, **totals, "s": round(report.seconds)}),
                          file=sys.stderr, flush=True)
        finally:
            for w in pool:
                report.restarts += w.restarts
                w.stop()
    report.seconds = time.monotonic() - start
    return report


def _with_step(outcome: str, path: str) -> str:
    """A crash or hang named with the call the worker was in (the step file ``examine`` writes)."""
    step = Path(path + ".step")
    if outcome.startswith(("crash", "hang")) and step.exists():
        outcome += f" in {step.read_text()}"
    step.unlink(missing_ok=True)
    return outcome


def _record(report: Report, seed: _Seed, lie: Lie, data: bytes, outcome: str, out: Path | None) -> str:
    status, _, detail = outcome.partition("\t")
    row = report.rows[seed.cls]
    row["lies"] += 1
    row[status] += 1
    entry = {"class": seed.cls, "seed": seed.variant, "lie": lie.kind, "attribute": lie.target,
             "node": _short(lie.node), "outcome": status, "detail": detail}
    if status in DEFECTS:
        report.defects.append(entry)
    if out is None:
        return status
    out.mkdir(parents=True, exist_ok=True)
    if status in DEFECTS:
        name = f"{status}-{seed.cls}-{hashlib.sha1(data).hexdigest()[:12]}.safetensors"
        (out / name).write_bytes(data)
        entry["file"] = name
    logs = ["outcomes.jsonl"] + (["defects.jsonl"] if status in DEFECTS else []) + \
        (["accepted.jsonl"] if status == "raised" else [])
    for log in logs:
        with open(out / log, "a") as f:
            f.write(json.dumps(entry) + "\n")
    return status


def render(report: dict[str, Any], *, defects_only: bool = False) -> str:
    """The Markdown tables of a campaign's report: one row per class, then the defects."""
    head = ("| class | lies | refused at load | loaded, harmless | loaded, inference raised | defects | skipped |\n"
            "|---|---:|---:|---:|---:|---:|---:|\n")
    rows = []
    for cls, row in sorted(report["per_class"].items()):
        bad = sum(row.get(k, 0) for k in DEFECTS)
        if defects_only and not bad:
            continue
        cells = [row.get("lies", 0), row.get("refused", 0), row.get("harmless", 0), row.get("raised", 0)]
        rows.append(f"| {cls} | " + " | ".join(f"{c:,}" for c in cells) + f" | {'**' + str(bad) + '**' if bad else 0}"
                    f" | {row.get('skipped', 0):,} |")
    t = report["totals"]
    bad = sum(t.get(k, 0) for k in DEFECTS)
    rows.append(f"| **all {report['classes']} classes** | **{t.get('lies', 0):,}** | {t.get('refused', 0):,} | "
                f"{t.get('harmless', 0):,} | {t.get('raised', 0):,} | **{bad:,}** | {t.get('skipped', 0):,} |")
    kinds = ", ".join(f"{k} {t.get(k, 0):,}" for k in DEFECTS)
    text = head + "\n".join(rows) + (f"\n\nDefects by kind: {kinds}. {report['seeds']:,} seeds; "
                                     f"{report['seconds']:,.0f} s; {report['worker_restarts']} worker restarts.")
    if report["defects"]:
        text += ("\n\n| class | lie | attribute | owner | outcome | detail | reproducer |\n"
                 "|---|---|---|---|---|---|---|\n")
        text += "\n".join(
            f"| {d['class']} | {d['lie']} | `{d['attribute']}` | {d['node']} | **{d['outcome']}** | "
            f"{d['detail'][:120].replace('|', '/')} | {d.get('file', '')} |" for d in report["defects"])
    return text


def report_from_outcomes(path: Path) -> dict[str, Any]:
    """The report of a campaign that was stopped before it wrote report.json, from its outcomes.jsonl."""
    report = Report()
    for line in path.read_text().splitlines():
        entry = json.loads(line)
        report.rows[entry["class"]]["lies"] += 1
        report.rows[entry["class"]][entry["outcome"]] += 1
        if entry["outcome"] in DEFECTS:
            report.defects.append(entry)
    report.seeds = len({json.loads(line)["seed"] for line in path.read_text().splitlines()})
    return report.as_dict()


def replay_plan(report: dict[str, Any]) -> tuple[list[str], dict[str, list[tuple[str, str]]], int]:
    """The seed ids, lies and random seed that tell a campaign's defects again (to check fixes)."""
    only: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for d in report["defects"]:
        if (d["lie"], d["attribute"]) not in only[d["seed"]]:
            only[d["seed"]].append((d["lie"], d["attribute"]))
    return list(only), dict(only), report["rng_seed"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=0, help="random seed: which group members and elements lie")
    parser.add_argument("--per-seed", type=int, default=None, help="tell only this many lies of each seed (sampled)")
    parser.add_argument("--seeds", default="", help="comma-separated seed ids (zoo:<case>, sk:<key>); default all")
    parser.add_argument("--no-zoo", action="store_true", help="leave out the zoo's cases")
    parser.add_argument("--no-breadth", action="store_true", help="leave out the scikit-learn instances")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds a load and its inference may take")
    parser.add_argument("--memory-mb", type=int, default=1024, help="memory a mutant may use before it is a defect")
    parser.add_argument("--out", type=Path, default=None, help="folder for reproducers and report.json")
    parser.add_argument("--progress", type=float, default=60.0, help="seconds between progress lines (stderr)")
    parser.add_argument("--replay", type=Path, default=None, metavar="REPORT_JSON",
                        help="tell again only the defects of a campaign's report.json (with its --seed)")
    parser.add_argument("--kinds", choices=("shape", "meaning", "all"), default="shape",
                        help="lies of shape (semantic_lies.py), of meaning (semantic_meaning.py) or both")
    parser.add_argument("--refit", action=argparse.BooleanOptionalAction, default=True,
                        help="fit the loaded model again: partial_fit and warm_start fit on wider and narrower rows")
    parser.add_argument("--truth", action="store_true",
                        help="send every seed unchanged (a check of the harness: all must be harmless)")
    parser.add_argument("--markdown", action="store_true", help="print the Markdown tables instead of JSON")
    parser.add_argument("--defects-only", action="store_true", help="with --markdown: only classes with defects")
    parser.add_argument("--render", type=Path, default=None, metavar="REPORT_JSON",
                        help="print the tables of a campaign's report.json (or a stopped one's outcomes.jsonl)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--warmup", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args.memory_mb)
        return 0
    if args.render is not None:
        summary = (report_from_outcomes(args.render) if args.render.suffix == ".jsonl"
                   else json.loads(args.render.read_text()))
        print(render(summary, defects_only=args.defects_only))
        return 0
    ids = [s for s in args.seeds.split(",") if s] or seed_ids(not args.no_zoo, not args.no_breadth)
    only = None
    if args.replay is not None:
        ids, only, args.seed = replay_plan(json.loads(args.replay.read_text()))
    report = campaign(ids, args.seed, only=only, per_seed=args.per_seed, workers=args.workers, timeout=args.timeout,
                      memory_mb=args.memory_mb, out=args.out, progress=args.progress, truth=args.truth,
                      kinds=args.kinds, refit=args.refit)
    summary = report.as_dict()
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "report.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(render(summary, defects_only=args.defects_only) if args.markdown else json.dumps(summary, indent=1))
    return 1 if report.defects else 0


if __name__ == "__main__":
    sys.exit(main())
