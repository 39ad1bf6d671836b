from ._pretrained import from_pretrained as from_pretrained, save_pretrained as save_pretrained
from ._version import __version__ as __version__
from .codec import ModelType as ModelType, register_estimator as register_estimator
from .codec.handlers.functions import register_function as register_function
from .distillation import distill as distill
from .format._api import inspect as inspect, load as load, save as save, validate as validate
