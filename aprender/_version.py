"""aprender's version, in a module of its own: modules of the package read it without importing the package."""

__version__ = "0.1.0"
