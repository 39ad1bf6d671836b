from ._app import ServeConfig as ServeConfig, create_app as create_app, run as run
from ._batching import Batcher as Batcher, Overloaded as Overloaded
from ._repository import Policy as Policy, RepositoryError as RepositoryError, Settings as Settings, scan as scan
