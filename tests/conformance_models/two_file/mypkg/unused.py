"""Imported by the model file, but nothing in it runs inside the compiled model."""

VERSION = 1
