from ._compress import MAX_DECOMPRESSED_RATIO as MAX_DECOMPRESSED_RATIO
from ._crypto import kdf_limits as kdf_limits
from ._inspect import inspect_file as inspect_file
from ._load import (
    MMAP_MIN_BYTES as MMAP_MIN_BYTES,
    load as load,
    load_as_recipient as load_as_recipient,
    load_encrypted as load_encrypted,
    load_file as load_file,
    load_from_bytes as load_from_bytes,
    loads as loads,
    read_state as read_state,
    state_from_bytes as state_from_bytes,
)
from ._options import (
    CAPABILITIES as CAPABILITIES,
    Compression as Compression,
    SaveOptions as SaveOptions,
    WriteOptions as WriteOptions,
)
from ._save import (
    dumps as dumps,
    save as save,
    save_encrypted as save_encrypted,
    save_file as save_file,
    save_for_recipient as save_for_recipient,
    save_signed as save_signed,
    save_to_bytes as save_to_bytes,
    state_to_bytes as state_to_bytes,
    write_state as write_state,
)
from ._validate import validate_file as validate_file
from ._verify import load_verified as load_verified, verify_file as verify_file
