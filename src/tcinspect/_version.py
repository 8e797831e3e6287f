"""tcinspect's version, in a module of its own so that no part of the package imports the package facade."""

__version__ = "0.1.0"
