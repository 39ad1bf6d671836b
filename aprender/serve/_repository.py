"""The model repository: which files are served, under which name and version, and what each one is.

Layout of a repository folder (MLServer/Triton-like)::

    <repo>/<name>/model-settings.json        optional
    <repo>/<name>/<N>/model.apr              or model.safetensors / model.gguf

A single model file given on the command line is served as version 1 of a model named after
its stem. Pickle files (``.pkl``, ``.pickle``, ``.joblib``) and ONNX files are refused by their
suffix, without being opened.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

import aprender
from aprender.exceptions import AprenderError, SignatureInvalid
from aprender.format import apr
from aprender.format._api import PICKLE_SUFFIXES, pickle_refusal
from aprender.format._formats import FORMATS, by_suffix, having
from aprender.format._io import sha256_file
from aprender.serve._numbers import decimal
from aprender.serve._snapshot import NotAFile, OutsideRepository, snapshot

__all__ = [
    "OUTPUTS",
    "Policy",
    "RepositoryError",
    "Settings",
    "Version",
    "describe",
    "describe_copy",
    "model_folders",
    "open_copy",
    "scan",
    "scan_model",
]



def _served() -> tuple[str, ...]:
    """Suffixes of the files served (every format that loads), in the order a version folder is searched:
    memory-mappable formats first, whose weights the server's workers share. Read from the table on use,
    so a format registered later is served."""
    return tuple(f.suffix for f in sorted(having("loads"), key=lambda f: not f.can.mmaps))

#: The output names (MLServer's), i.e. the estimator methods a client may ask for.
OUTPUTS = ("predict", "predict_proba", "transform", "decision_function")
_SETTINGS = "model-settings.json"


class RepositoryError(AprenderError):
    """A model file or repository entry that cannot be served, and why."""


def _setting_name(name: Any, where: str) -> str:
    if not isinstance(name, str) or not _valid_name(name):
        raise RepositoryError(f"{where}: 'name' must be a non-empty name without '/' or ':', got {name!r}")
    return name


def _setting_batch_size(size: Any, where: str) -> int:
    if isinstance(size, bool) or not isinstance(size, int) or size < 0:
        raise RepositoryError(f"{where}: 'max_batch_size' must be a non-negative integer, got {size!r}")
    return size


def _setting_batch_time(wait: Any, where: str) -> float:
    if isinstance(wait, bool) or not isinstance(wait, (int, float)) or wait < 0:
        raise RepositoryError(f"{where}: 'max_batch_time' must be a non-negative number, got {wait!r}")
    return float(wait)


def _setting_outputs(outputs: Any, where: str) -> tuple[str, ...]:
    if not isinstance(outputs, list):
        raise RepositoryError(f"{where}: 'outputs' must be a list")
    names = tuple(o.get("name") if isinstance(o, dict) else o for o in outputs)
    bad = [n for n in names if n not in OUTPUTS]
    if bad:
        raise RepositoryError(f"{where}: unknown output {bad[0]!r}; outputs are {', '.join(OUTPUTS)}")
    return names


#: The keys of ``model-settings.json`` read, each with the check (and conversion) of a value given;
#: checked in this order, so the first bad key is the one reported.
_SETTING_CHECKS = {"name": _setting_name, "max_batch_size": _setting_batch_size,
                   "max_batch_time": _setting_batch_time, "outputs": _setting_outputs}


@dataclass(frozen=True)
class Settings:
    """The MLServer-compatible subset of a ``model-settings.json`` file.

    Parameters
    ----------
    name : str, optional
        Served name (default: the folder's name).
    max_batch_size : int, optional
        Rows merged into one call of the model (1 turns batching off).
    max_batch_time : float, optional
        Seconds to wait for more rows after the first queued request.
    outputs : tuple of str, optional
        The outputs exposed (default: every method the estimator has).
    version : str, optional
        A label reported beside the numeric versions.

    Examples
    --------
    >>> Settings.from_json({"name": "iris", "max_batch_size": 32, "outputs": [{"name": "predict"}]}).outputs
    ('predict',)
    """

    name: str | None = None
    max_batch_size: int | None = None
    max_batch_time: float | None = None
    outputs: tuple[str, ...] | None = None
    version: str | None = None

    @classmethod
    def from_json(cls, data: Any, where: str = "model-settings.json") -> Settings:
        """Validate a parsed settings document; unknown keys (MLServer's others) are ignored."""
        if not isinstance(data, dict):
            raise RepositoryError(f"{where}: expected a JSON object")
        checked: dict[str, Any] = {key: None if data.get(key) is None else check(data.get(key), where)
                                   for key, check in _SETTING_CHECKS.items()}
        params = data.get("parameters") or {}
        label = params.get("version") if isinstance(params, dict) else None
        return cls(**checked, version=None if label is None else str(label))


@dataclass(frozen=True)
class Policy:
    """Which signatures the server requires.

    Parameters
    ----------
    require_signature : bool
        Refuse every model that is not signed by one of ``trusted_keys``.
    trusted_keys : tuple of bytes
        Raw 32-byte Ed25519 public keys.
    allow_outside_links : bool
        Serve model files of a repository folder that resolve (through symbolic links) outside it.
    trusted : tuple
        What every load trusts beyond the default table (``aprender.load``'s ``trusted=``):
        function objects and hyperparameter names the server's operator named.
    """

    require_signature: bool = False
    trusted_keys: tuple[bytes, ...] = ()
    allow_outside_links: bool = False
    trusted: tuple[Any, ...] = ()


@dataclass(frozen=True)
class Version:
    """One servable model file and what the server reports about it."""

    name: str
    version: int
    path: Path
    format: str
    sha256: str
    size: int
    mtime: float
    class_key: str | None
    versions: dict[str, str]
    signature: str
    signer: str | None
    mmap: bool
    settings: Settings = field(default_factory=Settings)
    root: Path | None = None

    @property
    def estimator(self) -> str:
        """The estimator's class name."""
        return (self.class_key or "unknown").rsplit(".", 1)[-1]

    @property
    def tag(self) -> str:
        """``name:version``."""
        return f"{self.name}:{self.version}"

    def describe(self) -> dict[str, Any]:
        """The provenance every protocol reports."""
        return {"name": self.name, "version": str(self.version), "label": self.settings.version,
                "path": str(self.path), "format": self.format, "sha256": self.sha256, "size": self.size,
                "estimator": self.estimator, "class": self.class_key,
                "sklearn_version": self.versions.get("sklearn"), "aprender_version": self.versions.get("aprender"),
                "signature": self.signature, "signer": self.signer}


def _valid_name(name: str) -> bool:
    return bool(name) and "/" not in name and ":" not in name and name not in {".", ".."}


def _refuse_by_suffix(path: Path) -> None:
    suffix = path.suffix.lower()
    if suffix in PICKLE_SUFFIXES:
        raise RepositoryError(pickle_refusal(path))
    fmt = by_suffix(path)
    if fmt is not None and not fmt.can.loads:
        raise RepositoryError(f"'{path}': {fmt.title} files are not served by aprender serve (they hold an "
                              f"{fmt.title} export, not an estimator); serve the {'/'.join(_served())} file, or "
                              f"the {fmt.suffix} file with a server of its own")
    if fmt is None:
        raise RepositoryError(f"'{path}': cannot serve a '{suffix}' file; serve {', '.join(_served())} files")


def _signature(copy: Path, path: Path, signed: bool, policy: Policy) -> tuple[str, str | None]:
    """(status, signer hex) of the copy of ``path``: 'trusted', 'untrusted' (valid, unknown key) or 'unsigned'."""
    if not signed:
        if policy.require_signature:
            raise RepositoryError(f"'{path}': the model is not signed and --require-signature is set; "
                                  "sign it with: apr sign MODEL --key KEY")
        return "unsigned", None
    for key in policy.trusted_keys:
        try:
            return "trusted", apr.verify_file(copy, key).hex()
        except SignatureInvalid:
            continue
    try:
        signer = apr.verify_file(copy).hex()
    except SignatureInvalid as exc:
        raise RepositoryError(f"'{path}': {exc}") from None
    if policy.require_signature:
        raise RepositoryError(f"'{path}': signed by {signer}, which is not a --trusted-key")
    return "untrusted", signer


def describe(path: Path, name: str, version: int, settings: Settings, policy: Policy,
             root: Path | None = None) -> Version:
    """Check one model file and describe it: digest, format, class, versions, signature.

    Everything is read from one private copy of the file (:func:`~aprender.serve._snapshot.snapshot`),
    as a load does.

    Raises
    ------
    RepositoryError
        A pickle or ONNX file (never opened), a file that resolves outside ``root``, an encrypted
        file, an unsigned or untrusted file under ``--require-signature``, or a file aprender
        cannot read.
    """
    _refuse_by_suffix(path)
    with open_copy(path, root, policy) as copy:
        return describe_copy(copy, path, name, version, settings, policy, root)


@contextlib.contextmanager
def open_copy(path: Path, root: Path | None, policy: Policy) -> Iterator[Path]:
    """The private copy of ``path`` that :func:`describe` and the loads read (RepositoryError if refused)."""
    try:
        with snapshot(path, None if policy.allow_outside_links else root) as copy:
            yield copy
    except (OutsideRepository, NotAFile, OSError) as exc:
        raise RepositoryError(f"'{path}': {exc}" if isinstance(exc, OSError) else str(exc)) from None


def describe_copy(copy: Path, path: Path, name: str, version: int, settings: Settings, policy: Policy,
                  root: Path | None) -> Version:
    """:func:`describe` of the private copy ``copy`` of the model file ``path``."""
    try:
        info = aprender.inspect(copy)
    except AprenderError as exc:
        raise RepositoryError(f"'{path}': {exc}".replace(str(copy), "the file")) from None
    if info.encrypted:
        raise RepositoryError(f"'{path}': the model is encrypted; aprender serve takes no decryption keys, "
                              "serve a decrypted copy (apr decrypt)")
    status, signer = _signature(copy, path, info.signed, policy)
    versions = info.metadata.get("versions")
    stat = copy.stat()
    return Version(name=name, version=version, path=path, format=info.format, sha256=sha256_file(copy),
                   size=stat.st_size, mtime=path.stat().st_mtime, class_key=info.class_key,
                   versions=versions if isinstance(versions, dict) else {}, signature=status, signer=signer,
                   mmap=FORMATS[info.format].can.mmaps and not info.compressed and not info.signed, settings=settings,
                   root=root)


def _settings(folder: Path) -> Settings:
    path = folder / _SETTINGS
    if not path.is_file():
        return Settings()
    try:
        return Settings.from_json(orjson.loads(path.read_bytes()), str(path))
    except orjson.JSONDecodeError as exc:
        raise RepositoryError(f"'{path}': not valid JSON: {exc}") from None


def _model_file(folder: Path) -> Path:
    found = sorted(p for p in folder.iterdir() if p.is_file() and p.stem == "model")
    for path in found:
        _refuse_by_suffix(path)
    if not found:
        raise RepositoryError(f"'{folder}': no model file; expected model{{{','.join(_served())}}}")
    if len(found) > 1:
        raise RepositoryError(f"'{folder}': several model files ({', '.join(p.name for p in found)}); keep one")
    return found[0]


def scan_model(folder: Path, policy: Policy, root: Path | None = None) -> tuple[str, dict[int, Version]]:
    """The versions of the model in ``folder`` (``<name>/<N>/model.*``), keyed by number.

    Model files must resolve inside ``root`` (default: ``folder``) unless the policy allows links out.
    """
    root = folder if root is None else root
    settings = _settings(folder)
    name = settings.name or folder.name
    if not _valid_name(name):
        raise RepositoryError(f"'{folder}': model name {name!r} may not contain '/' or ':'")
    versions = {}
    for sub in folder.iterdir():
        number = decimal(sub.name)
        if sub.is_dir() and number is not None:
            versions[number] = describe(_model_file(sub), name, number, settings, policy, root)
    if not versions:
        raise RepositoryError(f"'{folder}': no version folders; expected {folder}/1/model.apr")
    return name, dict(sorted(versions.items()))


def model_folders(root: Path) -> list[Path]:
    """The model folders of a repository: sub-folders holding numbered version folders."""
    return sorted(p for p in root.iterdir()
                  if p.is_dir() and any(v.is_dir() and decimal(v.name) is not None for v in p.iterdir()))


def scan(paths: Iterable[str | os.PathLike], policy: Policy) -> dict[str, dict[int, Version]]:
    """Every model under ``paths`` (model files or repository folders), by name then version.

    Examples
    --------
    >>> import tempfile, os
    >>> import aprender
    >>> from aprender.linear_model import LinearRegression
    >>> path = os.path.join(tempfile.mkdtemp(), "line.apr")
    >>> aprender.save(LinearRegression().fit([[0.0], [1.0]], [1.0, 3.0]), path)
    >>> models = scan([path], Policy())
    >>> models["line"][1].estimator, len(models["line"][1].sha256)
    ('LinearRegression', 64)
    """
    models: dict[str, dict[int, Version]] = {}

    def add(name: str, versions: dict[int, Version], where: Path) -> None:
        if name in models:
            raise RepositoryError(f"'{where}': a model named {name!r} is already served")
        models[name] = versions

    for raw in paths:
        path = Path(raw)
        if path.is_file():
            add(path.stem, {1: describe(path, path.stem, 1, Settings(), policy)}, path)
        elif path.is_dir() and any(v.is_dir() and decimal(v.name) is not None for v in path.iterdir()):
            add(*scan_model(path, policy), path)  # one model's folder
        elif path.is_dir():
            folders = model_folders(path)
            if not folders:
                raise RepositoryError(f"'{path}': no models; expected {path}/NAME/1/model.apr")
            for folder in folders:
                add(*scan_model(folder, policy, path), folder)
        else:
            raise FileNotFoundError(f"'{path}': no such model file or repository folder")
    return models
