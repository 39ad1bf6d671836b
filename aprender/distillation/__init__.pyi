from ._api import distill as distill
from ._methods import METHODS as METHODS
