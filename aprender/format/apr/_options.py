"""SaveOptions and Compression: what a caller may record in an .apr file."""

from __future__ import annotations

import dataclasses
import os
import platform
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from enum import Enum
from typing import Any

from aprender.codec import canonical_json
from aprender.format._formats import Capabilities

__all__ = ["CAPABILITIES", "CONTAINER_KEYS", "Compression", "SaveOptions", "WriteOptions", "source_date"]


class Compression(Enum):
    """Compression of the data section.

    Examples
    --------
    >>> from aprender.format import Compression
    >>> Compression("zstd") is Compression.ZSTD_DEFAULT
    True
    """

    NONE = "none"
    ZSTD_DEFAULT = "zstd"
    ZSTD_MAX = "zstd-max"
    LZ4 = "lz4"

    @classmethod
    def _missing_(cls, value: object) -> None:
        valid = ", ".join(repr(m.value) for m in cls)
        raise ValueError(f"{value!r} is not a valid compression; use one of {valid} (or None)")

    @property
    def algorithm(self) -> str | None:
        """``"zstd"``, ``"lz4"`` or None."""
        return {"zstd": "zstd", "zstd-max": "zstd", "lz4": "lz4"}.get(self.value)

    @property
    def level(self) -> int:
        """Compressor level: zstd 3 (its default) or 19 (its highest without huge windows); LZ4 0."""
        return {"zstd": 3, "zstd-max": 19}.get(self.value, 0)


def source_date() -> str:
    """Now as ISO-8601 UTC, or ``SOURCE_DATE_EPOCH`` when set (reproducible builds)."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if epoch is None:
        moment = datetime.now(timezone.utc)
    else:
        try:
            moment = datetime.fromtimestamp(int(epoch), timezone.utc)
        except (ValueError, OverflowError, OSError):
            raise ValueError(f"SOURCE_DATE_EPOCH must be an integer count of seconds, got {epoch!r}") from None
    return moment.replace(microsecond=0).isoformat().replace("+00:00", "Z")


@dataclass(frozen=True)
class SaveOptions:
    """User records and compression for an .apr file.

    Every field is optional; unset fields are not written, so saving the same model
    with the same options gives the same bytes. The ``with_*`` methods return a
    new instance. No timestamp is written unless provenance is asked for.

    Parameters
    ----------
    name, description : str, optional
        Free text.
    compression : Compression or str, default=Compression.NONE
        ``"zstd"``, ``"zstd-max"`` or ``"lz4"`` compress the data section (such a
        file cannot be memory-mapped).
    hyperparameters, metrics, custom : dict, optional
        JSON-able records (training settings, evaluation scores, anything else).
    license : str or dict, optional
        License record, e.g. ``"MIT"`` or ``{"spdx": "CC-BY-4.0", "holder": "..."}``.
    provenance : dict, optional
        JSON-able provenance (dataset hash, git commit, seed...). When given, the
        Python version and platform are added and ``created_at`` is stamped.
    created_at : str, optional
        ISO-8601 time; defaults to now (or ``SOURCE_DATE_EPOCH``) when
        ``provenance`` is set, otherwise nothing is written.

    Examples
    --------
    >>> from aprender.format import Compression, SaveOptions
    >>> opts = SaveOptions().with_name("churn").with_compression(Compression.LZ4)
    >>> opts.name, opts.compression
    ('churn', <Compression.LZ4: 'lz4'>)
    """

    name: str | None = None
    description: str | None = None
    compression: Compression = Compression.NONE
    hyperparameters: Mapping[str, Any] | None = None
    metrics: Mapping[str, Any] | None = None
    custom: Mapping[str, Any] | None = None
    license: str | Mapping[str, Any] | None = None
    provenance: Mapping[str, Any] | None = None
    created_at: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "compression", Compression(self.compression))
        try:
            canonical_json(self.records())
        except (TypeError, ValueError) as exc:
            raise TypeError(f"SaveOptions must be JSON-serializable with string keys: {exc}") from None

    def with_name(self, name: str) -> SaveOptions:
        """A copy with ``name`` set."""
        return dataclasses.replace(self, name=name)

    def with_description(self, description: str) -> SaveOptions:
        """A copy with ``description`` set."""
        return dataclasses.replace(self, description=description)

    def with_compression(self, compression: Compression | str) -> SaveOptions:
        """A copy with ``compression`` set."""
        return dataclasses.replace(self, compression=Compression(compression))

    def with_license(self, license: str | Mapping[str, Any]) -> SaveOptions:
        """A copy with the license record set."""
        return dataclasses.replace(self, license=license)

    def with_hyperparameters(self, hyperparameters: Mapping[str, Any]) -> SaveOptions:
        """A copy with the hyperparameters record set."""
        return dataclasses.replace(self, hyperparameters=dict(hyperparameters))

    def with_metrics(self, metrics: Mapping[str, Any]) -> SaveOptions:
        """A copy with the metrics record set."""
        return dataclasses.replace(self, metrics=dict(metrics))

    def with_custom(self, custom: Mapping[str, Any]) -> SaveOptions:
        """A copy with the custom record set."""
        return dataclasses.replace(self, custom=dict(custom))

    def with_provenance(self, **fields: Any) -> SaveOptions:
        """A copy that records provenance (and a creation time).

        Examples
        --------
        >>> from aprender.format import SaveOptions
        >>> opts = SaveOptions(created_at="2025-01-01T00:00:00Z").with_provenance(git_commit="abc123")
        >>> sorted(opts.stamped().provenance)
        ['git_commit', 'platform', 'python']
        """
        return dataclasses.replace(self, provenance=dict(fields))

    def stamped(self) -> SaveOptions:
        """These options with provenance completed and ``created_at`` filled in, if asked for."""
        if self.provenance is None:
            return self
        provenance = {"python": platform.python_version(), "platform": platform.platform(), **self.provenance}
        return dataclasses.replace(self, provenance=provenance, created_at=self.created_at or source_date())

    def records(self) -> dict[str, Any]:
        """The metadata keys these options write (unset fields are left out)."""
        fields = ("name", "description", "hyperparameters", "metrics", "custom", "license", "provenance",
                  "created_at")
        return {k: _plain(getattr(self, k)) for k in fields if getattr(self, k) is not None}


def _plain(value: Any) -> Any:
    return dict(value) if isinstance(value, Mapping) else value


#: Metadata keys the container owns (never part of the codec's meta).
CONTAINER_KEYS = frozenset({"compression", "encryption"})


@dataclass(frozen=True)
class WriteOptions:
    """The keywords of ``write_state`` / ``save_file`` beyond the state: records, compression and keys.

    ``signing_key`` (Ed25519) signs; ``password`` or ``recipient_public_key`` (X25519)
    encrypts the data section; :class:`SaveOptions`' fields may also be given one by one.
    """

    options: SaveOptions | None = None
    compression: Compression | str | None = None
    signing_key: Any = None
    password: str | bytes | None = None
    recipient_public_key: Any = None


#: .apr does everything: loads back, signs, encrypts, compresses, maps, holds GGML blocks and raw tensors.
CAPABILITIES = Capabilities(signs=True, encrypts=True, compresses=True, mmaps=True, quantizes=True,
                            raw_tensors=True, options=WriteOptions,
                            load_options=frozenset({"mmap", "password", "secret_key", "verifying_key",
                                                    "max_decompressed_ratio"}))
