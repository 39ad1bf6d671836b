"""scikit-learn's own example gallery as a corpus: every estimator it fits, saved and loaded (and exported).

    python benchmarks/gallery.py                      # every example, aprender / skops / joblib
    python benchmarks/gallery.py --onnx               # + aprender's ONNX export, run in ONNX Runtime
    python benchmarks/gallery.py --only ensemble --timeout 120 --out gallery.json

The examples come from scikit-learn's source release on the package registry, for the
installed version: ``pip download --no-deps --no-binary scikit-learn scikit-learn==X`` into
``benchmarks/_work/`` (once; preparing the release's metadata takes a few minutes), or
``--examples DIR``. They run offline: a script that fetches data (``fetch_*``, ``urlopen``,
``pooch``) is skipped by name, and so is every fetch at run time (sockets are closed to it).

Each script runs in a child process with the Agg backend and a time limit. Before it runs,
every estimator class's ``fit``, ``fit_transform`` and ``fit_predict`` is wrapped, so the
child records each estimator the script fits at the top level and the data it was last
fitted on. When the script ends, each fitted estimator's outputs (``predict``,
``predict_proba``, ``decision_function``, ``transform``, ``score_samples``) on that data are
compared with those of its copy saved and loaded by each library:

- **identical**: every output equal, bit for bit (NaN equal to NaN);
- **differ**: some output differs (or a method the original has fails on the copy);
- **refused**: saving or loading raised the library's own refusal (an aprender error,
  skops' untrusted types, ...);
- **crashed**: any other exception.

With ``--onnx``, ``aprender.save(est, "m.onnx", X=sample)`` is run in ONNX Runtime on the
same data: labels must be equal and floats within rtol 1e-4 / atol 1e-5 (``exported``),
else ``wrong``; ``refused`` is an aprender export error, ``crashed`` anything else.

It is a benchmark, not a CI test: a full run takes about an hour on two cores. The table
goes into benchmarks/README.md (``<!-- gallery:start -->``).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
WORK = HERE / "_work"
#: What marks a script that fetches data: skipped by name, as the gallery cannot run offline.
DOWNLOADS = re.compile(r"\bfetch_\w+\(|urlopen|pooch|urlretrieve")
METHODS = ("predict", "predict_proba", "decision_function", "transform", "score_samples")
LIBRARIES = ("aprender", "skops", "joblib")
#: Most estimators one script's results record (a search may fit hundreds of candidates,
#: but only top-level fits are recorded).
MAX_PER_SCRIPT = 40


# -- the examples ------------------------------------------------------------------------


def examples_dir(given: str | None) -> Path:
    """The gallery's examples for the installed scikit-learn: ``given``, or the cached source release's."""
    if given:
        return Path(given).resolve()
    version = importlib.metadata.version("scikit-learn")
    root = WORK / f"scikit_learn-{version}"
    if not (root / "examples").is_dir():
        WORK.mkdir(parents=True, exist_ok=True)
        archive = WORK / f"scikit_learn-{version}.tar.gz"
        if not archive.exists():
            subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", "scikit-learn",
                            f"scikit-learn=={version}", "-d", str(WORK)], check=True)
        with tarfile.open(archive) as tar:
            members = [m for m in tar.getmembers() if "/examples/" in m.name]
            tar.extractall(WORK, members=members, filter="data")
    return root / "examples"


def scripts(root: Path, only: str | None) -> tuple[list[Path], list[Path]]:
    """The example scripts to run and those skipped because they fetch data."""
    run, skipped = [], []
    for path in sorted(root.rglob("*.py")):
        if only and not any(part in str(path.relative_to(root)) for part in only.split(",")):
            continue
        (skipped if DOWNLOADS.search(path.read_text(errors="replace")) else run).append(path)
    return run, skipped


# -- in the child: record fits, then save and load what was fitted -------------------------


class Recorder:
    """Wraps every estimator class's fit methods; keeps the top-level fitted estimators and their data."""

    def __init__(self) -> None:
        self.depth = 0
        self.fits: dict[int, tuple[Any, Any]] = {}

    def wrap(self, cls: type) -> None:
        for name in ("fit", "fit_transform", "fit_predict"):
            method = cls.__dict__.get(name)
            if callable(method) and not getattr(method, "_gallery", False):
                setattr(cls, name, self._wrapped(method))

    def _wrapped(self, method: Any) -> Any:
        import functools

        @functools.wraps(method)
        def call(est: Any, X: Any = None, *args: Any, **kwargs: Any) -> Any:
            self.depth += 1
            try:
                return method(est, X, *args, **kwargs)
            finally:
                self.depth -= 1
                if self.depth == 0 and X is not None:
                    self.fits.pop(id(est), None)
                    self.fits[id(est)] = (est, X)

        call._gallery = True
        return call

    def install(self) -> None:
        from sklearn.base import BaseEstimator

        def every(cls: type) -> list[type]:
            out = [cls]
            for sub in cls.__subclasses__():
                out += every(sub)
            return out

        import sklearn.utils

        for _, cls in sklearn.utils.all_estimators():
            self.wrap(cls)
        for cls in every(BaseEstimator):
            self.wrap(cls)
        recorder = self
        original = BaseEstimator.__init_subclass__.__func__

        def init_subclass(cls: type, **kwargs: Any) -> None:  # classes an example defines
            original(cls, **kwargs)
            recorder.wrap(cls)

        BaseEstimator.__init_subclass__ = classmethod(init_subclass)


def _outputs(est: Any, X: Any) -> dict[str, Any]:
    import warnings

    import numpy as np

    out = {}
    for name in METHODS:
        if not hasattr(est, name):
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                value = getattr(est, name)(X)
        except Exception:  # the method does not apply to this estimator or data
            continue
        out[name] = value.toarray() if hasattr(value, "toarray") else np.asarray(value)
    return out


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    import numpy as np

    def equal(x: Any, y: Any) -> bool:
        if x.shape != y.shape:
            return False
        if x.dtype.kind in "fc" and y.dtype.kind in "fc":
            return np.array_equal(x, y, equal_nan=True)
        return bool(np.all(x == y))

    return a.keys() == b.keys() and all(equal(a[k], b[k]) for k in a)


def _explained(est: Any, X: Any, session: Any, wanted: dict[str, Any], mapped: dict[str, Any],
               worst: float) -> dict[str, Any]:
    """``exported`` when every row that differs is one aprender's verification explains, else ``wrong``.

    The rule is :func:`aprender.format.onnx._verify.explained_rows`, the one export applies: a
    KNN row whose k-th and (k+1)-th neighbours are equally far may take either (scikit-learn's
    kd-tree and its brute force differ there too). The count of such rows is kept in the result.
    """
    import numpy as np

    from aprender.format.onnx._verify import explained_rows

    float32 = session.get_inputs()[0].type == "tensor(float)"
    try:
        explained = explained_rows(est, X, float32)
    except Exception:  # no rule applies to this model or data
        return {"result": "wrong", "max_diff": worst}
    keep = ~np.asarray(explained, dtype=bool)
    if not explained.any() or len(keep) != _n_rows(X):
        return {"result": "wrong", "max_diff": worst}
    got = {k: np.asarray(mapped[k]) for k in wanted}
    if any(got[k].size != v.size for k, v in wanted.items()):
        return {"result": "wrong", "max_diff": worst}
    ok, rest = _close({k: v[keep] for k, v in wanted.items()},
                      {k: got[k].reshape(v.shape)[keep] for k, v in wanted.items()})
    return {"result": "exported" if ok else "wrong", "max_diff": rest if ok else worst,
            "explained_rows": int(explained.sum())}


def _n_rows(X: Any) -> int:
    return X.shape[0] if hasattr(X, "shape") else len(X)


def _close(reference: dict[str, Any], ort: dict[str, Any]) -> tuple[bool, float]:
    import numpy as np

    worst = 0.0
    for name, want in reference.items():
        got = ort.get(name)
        if got is None:
            continue
        got = np.asarray(got).reshape(want.shape) if np.asarray(got).size == want.size else np.asarray(got)
        if got.shape != want.shape:
            return False, float("inf")
        if want.dtype.kind in "biu" and got.dtype.kind in "biu":  # bool labels come back as 0/1
            if not np.array_equal(want.astype(np.int64), got.astype(np.int64)):
                return False, float("inf")
            continue
        if want.dtype.kind not in "fc":
            if not np.array_equal(want.astype(str), got.astype(str)):
                return False, float("inf")
            continue
        diff = float(np.max(np.abs(want - got.astype(np.float64)), initial=0.0))
        worst = max(worst, diff)
        if not np.allclose(got, want, rtol=1e-4, atol=1e-5, equal_nan=True):
            return False, diff
    return True, worst


def _roundtrip(lib: str, est: Any, folder: Path) -> Any:
    if lib == "aprender":
        import aprender

        path = folder / "m.apr"
        aprender.save(est, path)
        return aprender.load(path)
    if lib == "skops":
        import skops.io as sio

        path = folder / "m.skops"
        sio.dump(est, path)
        return sio.load(path, trusted=sio.get_untrusted_types(file=path))
    import joblib

    path = folder / "m.joblib"
    joblib.dump(est, path)
    return joblib.load(path)


def _data(X: Any) -> Any:
    """The rows an estimator was fitted on: those a fitted neighbours object holds, when one was passed as X.

    scikit-learn's neighbours estimators accept a fitted NearestNeighbors as ``X`` and copy its
    training rows (``locally_linear_embedding`` fits one on another).
    """
    held = getattr(X, "_fit_X", None)
    return held if held is not None and hasattr(X, "get_params") else X


def _refusal(lib: str, exc: BaseException) -> bool:
    if lib == "aprender":
        from aprender.exceptions import AprenderError

        return isinstance(exc, AprenderError)
    if lib == "skops":
        return type(exc).__name__ in ("UntrustedTypesFoundException", "UnsupportedTypeException", "TypeError")
    return False


def _onnx(est: Any, X: Any, reference: dict[str, Any], folder: Path) -> dict[str, Any]:
    import numpy as np

    import aprender
    from aprender.exceptions import AprenderError

    try:
        import scipy.sparse

        if hasattr(X, "iloc") or scipy.sparse.issparse(X):
            sample = X[:5] if hasattr(X, "iloc") else X.tocsr()[:5]
        else:  # data that is no rows (an object scikit-learn accepts as X) gives no sample: export without one
            sample = np.asarray(X)[:5] if np.ndim(X) else None
        path = folder / "m.onnx"
        aprender.save(est, path, X=sample)
        import onnxruntime as ort

        session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        feeds = _feeds(session, X)
        names = [o.name for o in session.get_outputs()]
        got = dict(zip(names, session.run(None, feeds), strict=True))
        mapped = {"predict": got.get("label", got.get("variable", next(iter(got.values())))),
                  "predict_proba": got.get("probabilities"), "transform": got.get("variable")}
        if "predict" in reference:  # a predictor's graph answers predict; its transform is another method
            mapped.pop("transform")
        wanted = {k: v for k, v in reference.items() if k in mapped and mapped[k] is not None}
        ok, worst = _close(wanted, {k: mapped[k] for k in wanted})
        if not ok:  # rows the library's own verification explains (a KNN's tied k-th neighbours)
            return _explained(est, X, session, wanted, mapped, worst)
        return {"result": "exported", "max_diff": worst}
    except AprenderError as exc:
        return {"result": "refused", "error": f"{type(exc).__name__}: {str(exc)[:200]}"}
    except Exception as exc:  # anything else is a defect of the export
        return {"result": "crashed", "error": f"{type(exc).__name__}: {str(exc)[:200]}"}


def _feeds(session: Any, X: Any) -> dict[str, Any]:
    import numpy as np
    import scipy.sparse

    inputs = session.get_inputs()
    if len(inputs) == 1:
        dtype = np.int64 if "int64" in inputs[0].type else np.float32 if "float)" in inputs[0].type else np.float64
        rows = np.asarray(X.toarray() if scipy.sparse.issparse(X) else X)
        # an estimator fitted on 1-D data (LabelEncoder on y) exports a graph of one column
        if rows.ndim == 1 and len(inputs[0].shape) == 2:
            rows = rows.reshape(-1, 1)
        return {inputs[0].name: rows.astype(str if "string" in inputs[0].type else dtype)}
    feeds = {}
    for i in inputs:
        column = X[i.name].to_numpy().reshape(-1, 1)
        feeds[i.name] = column.astype(str) if "string" in i.type else column.astype(
            np.int64 if "int64" in i.type else np.float32 if "float)" in i.type else np.float64)
    return feeds


def child(script: Path, out: Path, onnx: bool) -> None:
    """Run one example under the recorder, then save, load and compare what it fitted."""
    import matplotlib

    matplotlib.use("Agg")
    import socket

    def offline(*args: Any, **kwargs: Any) -> Any:
        raise OSError("the gallery benchmark runs offline")

    socket.socket.connect = offline  # a fetch the scan missed fails at once instead of waiting
    recorder = Recorder()
    recorder.install()
    import runpy
    import warnings

    warnings.simplefilter("ignore")
    sys.argv = [str(script)]
    os.chdir(tempfile.mkdtemp(prefix="gallery-"))
    status = "ran"
    try:
        runpy.run_path(str(script), run_name="__main__")
    except BaseException as exc:  # the example itself failed: what it fitted before still counts
        status = f"example failed: {type(exc).__name__}: {str(exc)[:120]}"
    import matplotlib.pyplot as plt

    plt.close("all")
    from sklearn.utils.validation import check_is_fitted

    rows = []
    for est, fitted_on in list(recorder.fits.values())[-MAX_PER_SCRIPT:]:
        X = _data(fitted_on)
        try:
            check_is_fitted(est)
        except Exception:  # not fitted any more (a failed refit), or not an estimator scikit-learn knows
            continue
        reference = _outputs(est, X)
        row = {"class": f"{type(est).__module__}.{type(est).__qualname__}", "methods": sorted(reference)}
        folder = Path(tempfile.mkdtemp(prefix="lib-"))
        for lib in LIBRARIES:
            try:
                copy = _roundtrip(lib, est, folder)
                row[lib] = {"result": "identical" if _same(reference, _outputs(copy, X)) else "differ"}
            except BaseException as exc:
                if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                    raise
                kind = "refused" if _refusal(lib, exc) else "crashed"
                row[lib] = {"result": kind, "error": f"{type(exc).__name__}: {str(exc)[:200]}"}
        if onnx:
            row["onnx"] = _onnx(est, X, reference, folder)
        rows.append(row)
    out.write_text(json.dumps({"status": status, "estimators": rows}))


# -- the parent: run every script, then tabulate ---------------------------------------------


def run(paths: list[Path], root: Path, timeout: float, onnx: bool, out: str | None = None,
        results: dict[str, Any] | None = None) -> dict[str, Any]:
    """Run every script; with ``out``, the results so far are written after each one (a stopped run keeps them).

    ``results`` holds earlier results, which a script run again replaces.
    """
    results = dict(results or {})
    for i, path in enumerate(paths):
        name = str(path.relative_to(root))
        with tempfile.TemporaryDirectory() as tmp:
            child_out = Path(tmp) / "result.json"
            started = time.monotonic()
            command = [sys.executable, __file__, "--child", str(path), "--child-out", str(child_out)]
            if onnx:
                command.append("--onnx")
            env = {**os.environ, "MPLBACKEND": "Agg", "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
            try:
                done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env, check=False)
                result = json.loads(child_out.read_text()) if child_out.exists() else {
                    "status": f"child died ({done.returncode}): {done.stderr.strip()[-200:]}", "estimators": []}
            except subprocess.TimeoutExpired:
                result = {"status": f"timed out after {timeout:.0f} s", "estimators": []}
        result["seconds"] = round(time.monotonic() - started, 1)
        results[name] = result
        print(f"[{i + 1}/{len(paths)}] {name}: {len(result['estimators'])} estimators, {result['status'][:60]}",
              file=sys.stderr, flush=True)
        if out:
            Path(out).write_text(json.dumps(results, indent=1))
    return results


def tabulate(results: dict[str, Any], skipped: list[str], onnx: bool) -> str:
    rows = [row for r in results.values() for row in r["estimators"]]
    libs = [*LIBRARIES, *(["onnx"] if onnx else [])]
    counts = {lib: Counter(row[lib]["result"] for row in rows if lib in row) for lib in libs}
    kinds = ["identical", "differ", "refused", "crashed"]
    lines = [f"{len(results)} scripts run ({len(skipped)} skipped: they fetch data), {len(rows)} fitted estimators, "
             f"{len({row['class'] for row in rows})} classes.", "",
             "| library | " + " | ".join(kinds) + " |", "|---|" + "---:|" * len(kinds)]
    for lib in LIBRARIES:
        lines.append(f"| {lib} | " + " | ".join(str(counts[lib][k]) for k in kinds) + " |")
    if onnx:
        kinds = ["exported", "wrong", "refused", "crashed"]
        lines += ["", "| aprender ONNX | " + " | ".join(kinds) + " |", "|---|" + "---:|" * len(kinds),
                  "| in ONNX Runtime | " + " | ".join(str(counts["onnx"][k]) for k in kinds) + " |"]
        tied = [row["onnx"] for row in rows if row.get("onnx", {}).get("explained_rows")]
        if tied:
            lines += ["", f"{len(tied)} of the exported differ from the estimator only on rows verification's own "
                          f"rule explains ({sum(t['explained_rows'] for t in tied)} rows in all: a KNN's tied k-th and "
                          "(k+1)-th neighbours, where scikit-learn's kd-tree and its brute force differ too)."]
    problems = defaultdict(list)
    for row in rows:
        for lib in libs:
            result = row.get(lib, {})
            if result.get("result") in ("differ", "crashed", "wrong") or (lib == "aprender" and
                                                                          result.get("result") == "refused"):
                problems[(lib, result["result"], result.get("error", "")[:90])].append(row["class"].rsplit(".", 1)[-1])
    if problems:
        lines += ["", "| library | result | error | classes |", "|---|---|---|---|"]
        for (lib, kind, error), classes in sorted(problems.items()):
            shown = ", ".join(sorted(set(classes)))
            lines.append(f"| {lib} | {kind} ({len(classes)}) | {error.replace('|', '/')} | {shown[:120]} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", help="the gallery's examples folder (default: the source release's)")
    parser.add_argument("--only", help="run only scripts whose path contains this (or one of these, comma-separated)")
    parser.add_argument("--update", help="a results file of --out: the scripts run again replace theirs in it")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per script")
    parser.add_argument("--onnx", action="store_true", help="also export to ONNX and run it in ONNX Runtime")
    parser.add_argument("--out", help="write every result as JSON here (after each script)")
    parser.add_argument("--render", help="print the table of a results file written by --out, and stop")
    parser.add_argument("--readme", action="store_true", help="write the table into benchmarks/README.md")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--child-out", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(Path(args.child), Path(args.child_out), args.onnx)
        return 0
    root = examples_dir(args.examples)
    paths, skipped = scripts(root, args.only)
    if args.render:
        results = json.loads(Path(args.render).read_text())
    else:
        earlier = json.loads(Path(args.update).read_text()) if args.update else None
        results = run(paths, root, args.timeout, args.onnx, args.out or args.update, earlier)
    table = tabulate(results, [str(p.relative_to(root)) for p in skipped], args.onnx)
    print(table)
    if args.readme:
        sys.path.insert(0, str(HERE))
        from _report import machine, write_section

        with contextlib.suppress(KeyError):
            write_section("gallery", f"{table}\n\nMachine: {machine()}.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
