"""Cold start: the command line and a fresh process's first load, against gguf-dump and joblib.

Every measurement is a fresh interpreter, so what it counts is what a user waits for:
interpreter start, imports, the work. The contenders:

- the command line: ``apr inspect`` of a small LogisticRegression as .gguf, .apr,
  .safetensors and .onnx, ``apr verify``, ``sign``, ``keygen``, ``--help`` and ``validate``, against
  ``gguf-dump`` on the same .gguf file (the ``gguf`` package's own script) and
  ``python -c pass``;
- "import, load, predict one row" of a LogisticRegression, a RandomForest and a Pipeline
  from .apr, against the same steps with ``joblib.load`` of the scikit-learn model;
- ``import aprender`` against ``import sklearn.linear_model``.

All of them run interleaved: each round runs every contender once, in an order shuffled
from round to round (seeded), after one untimed round that also writes the bytecode of
this checkout (the environment may say PYTHONDONTWRITEBYTECODE; a user's install has
bytecode). Each process's CPU time (user + system) comes from ``os.wait4``: that child's
own ``getrusage`` record, the delta ``RUSAGE_CHILDREN`` would show. Its peak RSS is the
``VmHWM`` it reads from /proc/self/status as it exits (``ru_maxrss`` would count the
image of the measuring process the child was forked from). Wall time is printed too but
is the noisiest of the three. Run from the repository root:

    python benchmarks/coldstart.py [--rounds N] [--quick]

Prints the tables and rewrites the "coldstart" section of benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path

from _report import machine, write_section

ROOT = Path(__file__).resolve().parent.parent
#: What the ``apr`` console script runs, for this checkout (the installed script may point elsewhere).
APR = "import sys; from aprender.cli import main; sys.exit(main())"
#: Run first in every measured process: at exit it writes its peak RSS to the file the environment names.
_PROBE = ("import atexit as _atexit, os as _os\n"
          "_atexit.register(lambda path=_os.environ['COLDSTART_RSS']: open(path, 'w').write("
          "[line for line in open('/proc/self/status') if line.startswith('VmHWM')][0]))\n")
#: Suffix of the cases run with one OpenBLAS thread, and the setting.
ONE_THREAD, ONE_THREAD_ENV = " [one BLAS thread]", {"OPENBLAS_NUM_THREADS": "1"}
#: The command-line cases measured again with ONE_THREAD_ENV for every process, gguf-dump included.
_AGAIN = ("gguf-dump m.gguf", "apr inspect m.gguf", "apr inspect m.apr", "apr inspect m.safetensors",
          "apr inspect m.onnx", "apr verify signed.apr", "apr sign m.apr")
#: The first row of iris: every model below predicts it.
ROW = "[[5.1, 3.5, 1.4, 0.2]]"


@dataclass(frozen=True)
class Sample:
    """One process: CPU seconds (user + system), wall seconds, peak RSS in bytes."""

    cpu: float
    wall: float
    rss: int


def run(code: list[str], env: dict[str, str], cwd: Path) -> Sample:
    """Run ``python -c code[0] *code[1:]`` to completion: its own CPU time (``os.wait4``) and peak RSS."""
    argv = [sys.executable, "-c", _PROBE + code[0], *code[1:]]
    rss_file = cwd / "rss.txt"
    env = {**env, "COLDSTART_RSS": str(rss_file)}
    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            err.seek(0)
            raise RuntimeError(f"{argv} exited with {proc.returncode}: {err.read().decode(errors='replace')[-2000:]}")
    rss = int(rss_file.read_text().split()[1]) * 1024  # "VmHWM:   123456 kB"
    return Sample(usage.ru_utime + usage.ru_stime, wall, rss)


def _script(name: str) -> str:
    """Code running a console script's entry point (no shell wrapper in between)."""
    (point,) = entry_points(group="console_scripts", name=name)
    module, func = point.value.split(":")
    return f"import sys; from {module} import {func}; sys.exit({func}())"


def _models(folder: Path) -> dict[str, str]:
    """Fit the models, write every file the contenders read; name -> path (run in a child process)."""
    import joblib
    from sklearn.datasets import load_iris
    from sklearn.ensemble import RandomForestClassifier as SkForest
    from sklearn.linear_model import LogisticRegression as SkLogistic
    from sklearn.pipeline import make_pipeline as sk_pipeline
    from sklearn.preprocessing import StandardScaler as SkScaler

    import aprender
    from aprender.cli import main as apr
    from aprender.ensemble import RandomForestClassifier
    from aprender.linear_model import LogisticRegression
    from aprender.pipeline import make_pipeline
    from aprender.preprocessing import StandardScaler

    X, y = load_iris(return_X_y=True)
    pairs = {
        "logistic": (LogisticRegression(max_iter=500), SkLogistic(max_iter=500)),
        "forest": (RandomForestClassifier(n_estimators=100, random_state=0),
                   SkForest(n_estimators=100, random_state=0)),
        "pipeline": (make_pipeline(StandardScaler(), LogisticRegression(max_iter=500)),
                     sk_pipeline(SkScaler(), SkLogistic(max_iter=500))),
    }
    files = {}
    for name, (ours, theirs) in pairs.items():
        files[f"{name}.apr"] = str(folder / f"{name}.apr")
        files[f"{name}.joblib"] = str(folder / f"{name}.joblib")
        aprender.save(ours.fit(X, y), files[f"{name}.apr"])
        joblib.dump(theirs.fit(X, y), files[f"{name}.joblib"])
    for suffix in ("gguf", "safetensors", "onnx"):
        files[f"logistic.{suffix}"] = str(folder / f"logistic.{suffix}")
        aprender.save(pairs["logistic"][0], files[f"logistic.{suffix}"])
    files["key"], files["signed"] = str(folder / "key"), str(folder / "signed.apr")
    assert apr(["keygen", "--type", "ed25519", "-o", files["key"], "--force"]) == 0
    assert apr(["sign", files["logistic.apr"], "--key", files["key"], "-o", files["signed"], "--force"]) == 0
    return files


def contenders(files: dict[str, str], out: Path) -> dict[str, list[str]]:
    """Name -> ``[code, *args]`` of every process measured (each is ``python -c code *args``)."""
    cli = [APR]
    cases = {
        "python -c pass": ["pass"],
        "gguf-dump m.gguf": [_script("gguf-dump"), files["logistic.gguf"]],
        "apr inspect m.gguf": [*cli, "inspect", files["logistic.gguf"]],
        "apr inspect m.apr": [*cli, "inspect", files["logistic.apr"]],
        "apr inspect m.safetensors": [*cli, "inspect", files["logistic.safetensors"]],
        "apr inspect m.onnx": [*cli, "inspect", files["logistic.onnx"]],
        "apr verify signed.apr": [*cli, "verify", files["signed"], "--key", files["key"] + ".pub"],
        "apr sign m.apr": [*cli, "sign", files["logistic.apr"], "--key", files["key"], "-o", str(out / "s.apr"),
                           "--force"],
        "apr keygen": [*cli, "keygen", "--type", "ed25519", "-o", str(out / "k"), "--force"],
        "apr --help": [*cli, "--help"],
        "apr validate m.apr": [*cli, "validate", files["logistic.apr"]],
        "import aprender": ["import aprender"],
        "import sklearn.linear_model": ["import sklearn.linear_model"],
    }
    cases |= {name + ONE_THREAD: cases[name] for name in _AGAIN}
    for name in ("logistic", "forest", "pipeline"):
        cases[f"aprender: {name}"] = [f"import aprender; aprender.load({files[name + '.apr']!r}).predict({ROW})"]
        cases[f"joblib: {name}"] = [f"import joblib; joblib.load({files[name + '.joblib']!r}).predict({ROW})"]
    return cases


def measure(cases: dict[str, list[str]], rounds: int, env: dict[str, str], cwd: Path) -> dict[str, list[Sample]]:
    """Every case once per round, in a seeded shuffled order, after one untimed round."""
    samples: dict[str, list[Sample]] = {name: [] for name in cases}
    order = random.Random(0)
    names = list(cases)
    for r in range(rounds + 1):
        for name in order.sample(names, len(names)):
            sample = run(cases[name], {**env, **ONE_THREAD_ENV} if name.endswith(ONE_THREAD) else env, cwd)
            if r:
                samples[name].append(sample)
        print(f"round {r}/{rounds}", file=sys.stderr, flush=True)
    return samples


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.0f} ms"


def _mib(n: float) -> str:
    return f"{n / 2**20:.1f} MiB"


def _cpu(s: list[Sample]) -> float:
    return statistics.median(x.cpu for x in s)


def _rss(s: list[Sample]) -> float:
    return statistics.median(x.rss for x in s)


def _row(name: str, s: list[Sample], anchor: list[Sample] | None) -> str:
    cpu = [x.cpu for x in s]
    ratio = f"{_cpu(s) / _cpu(anchor):.2f}x" if anchor else ""
    return (f"| {name} | {_ms(statistics.median(cpu))} | {_ms(min(cpu))}-{_ms(max(cpu))} "
            f"| {_ms(statistics.median(x.wall for x in s))} | {_mib(_rss(s))} | {ratio} |")


def report(samples: dict[str, list[Sample]], rounds: int, where: str) -> str:
    head = ["| Process | CPU (median) | CPU min-max | Wall (median) | Peak RSS (median) | CPU ratio |",
            "|---|---:|---|---:|---:|---:|"]
    cli = [name for name in samples if name.startswith("apr ") and not name.endswith(ONE_THREAD)]
    lines = [*head, _row("python -c pass", samples["python -c pass"], None),
             _row("gguf-dump m.gguf", samples["gguf-dump m.gguf"], None)]
    lines += [_row(name, samples[name], samples["gguf-dump m.gguf"]) for name in cli]
    anchor = samples["gguf-dump m.gguf" + ONE_THREAD]
    threads = [*head, _row("gguf-dump m.gguf", anchor, None)]
    threads += [_row(name, samples[name + ONE_THREAD], anchor) for name in _AGAIN[1:]]
    loads = ["| Model | aprender CPU | joblib CPU | CPU ratio | aprender peak RSS | joblib peak RSS "
             "| RSS difference |", "|---|---:|---:|---:|---:|---:|---:|"]
    for name in ("logistic", "forest", "pipeline"):
        ours, theirs = samples[f"aprender: {name}"], samples[f"joblib: {name}"]
        loads.append(f"| {LABELS[name]} | {_ms(_cpu(ours))} | {_ms(_cpu(theirs))} | {_cpu(ours) / _cpu(theirs):.2f}x "
                     f"| {_mib(_rss(ours))} | {_mib(_rss(theirs))} | {(_rss(ours) - _rss(theirs)) / 2**20:+.1f} MiB |")
    imports = [*head, _row("python -c pass", samples["python -c pass"], None),
               _row("import sklearn.linear_model", samples["import sklearn.linear_model"], None),
               _row("import aprender", samples["import aprender"], samples["import sklearn.linear_model"])]
    return (
        "## Cold start and the command line\n\n"
        "`python benchmarks/coldstart.py`: every row is a fresh interpreter, the rows interleaved round by round "
        f"in a seeded shuffled order, {rounds} rounds after an untimed one; medians of each process's own CPU "
        "time (user + system, from `os.wait4`) and peak RSS (`VmHWM` as it exits). The model is iris; `apr` is "
        "this checkout's command line and `gguf-dump` the `gguf` package's script, both started as `python -c` "
        "of their entry point (no shell wrapper).\n\n"
        f"Machine: {where}.\n\n"
        "### The command line, against gguf-dump on the same file (CPU ratio to gguf-dump)\n\n"
        + "\n".join(lines)
        + "\n\n### The same with `OPENBLAS_NUM_THREADS=1` set for every process, gguf-dump included (CPU ratio "
        "to gguf-dump under the same setting)\n\n" + "\n".join(threads)
        + "\n\nWhat the first table gains is gguf-dump's BLAS thread pool; this one is the work itself. Here "
        "aprender's command line costs more than gguf-dump: the rest is click's and rich's imports, aprender's "
        "own modules, and numpy for the .apr and SafeTensors readers (gguf-dump prints with `print`)."
        + "\n\n### A fresh process: import, load, predict one row (.apr against joblib's pickle of the "
        "scikit-learn model)\n\n" + "\n".join(loads)
        + "\n\n### `import aprender` (CPU ratio to `import sklearn.linear_model`)\n\n" + "\n".join(imports)
        + "\n\n" + NOTE
    )


LABELS = {"logistic": "LogisticRegression", "forest": "RandomForest (100 trees)",
          "pipeline": "Pipeline (StandardScaler, LogisticRegression)"}

NOTE = (
    "`import aprender` imports neither scikit-learn nor the codec: its names come on first use. A load imports "
    "the schema module and the estimator family the file names and, past what unpickling the same model "
    "imports, only aprender's reader, orjson and isal (tests/test_lazy_imports.py checks both through "
    "`sys.modules`). The command line imports a command's module when it runs, and `--help` lists the commands "
    "from a table (click alone); `inspect`, `verify`, `sign` and `keygen` import neither scikit-learn, scipy nor "
    "pandas, nor the codec's encoder, decoder and class table, `keygen` not even numpy. These byte-only commands "
    "(and `encrypt`, `decrypt`) set `OPENBLAS_NUM_THREADS=1` for their own run when the user has not set it and "
    "numpy is not yet imported: they multiply no matrices, and OpenBLAS otherwise starts a thread per core as "
    "numpy is imported, which costs more CPU than the import itself (gguf-dump runs as it comes, with that "
    "thread pool). What remains of their time is the interpreter, numpy (which aprender's .apr and SafeTensors "
    "readers use for dtypes and arrays), click and rich (and, for a .gguf file, the `gguf` package that gguf-dump "
    "imports too; for .onnx, the `onnx` package)."
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15, help="timed rounds (default 15)")
    parser.add_argument("--quick", action="store_true", help="3 rounds (smoke run)")
    parser.add_argument("--make-files", metavar="DIR", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.make_files:
        print(json.dumps({"files": _models(Path(args.make_files)), "machine": machine()}))
        return
    rounds = 3 if args.quick else args.rounds
    # This checkout first on the path; its bytecode written by the untimed round, as an install has it.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        # Fitted in a child (which also describes the machine as the run starts): this process stays small
        # and imports no library it measures.
        made = subprocess.run([sys.executable, __file__, "--make-files", tmp], env=env, capture_output=True,
                              text=True, check=True)
        setup = json.loads(made.stdout.splitlines()[-1])
        samples = measure(contenders(setup["files"], folder), rounds, env, folder)
    text = report(samples, rounds, setup["machine"])
    print(text)
    write_section("coldstart", text)


if __name__ == "__main__":
    main()
