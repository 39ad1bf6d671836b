from . import handlers as handlers, schemas as schemas
from ._model_type import ModelType as ModelType
from ._registry import (
    allow_list as allow_list,
    register_estimator as register_estimator,
    registered as registered,
)
from ._spec import Entry as Entry, Spec as Spec
from ._state import (
    ModelState as ModelState,
    SCHEMA_VERSION as SCHEMA_VERSION,
    canonical_json as canonical_json,
    from_state as from_state,
    parse_json as parse_json,
    to_state as to_state,
)
