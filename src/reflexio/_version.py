"""The package version, in code (the build reads it from here), so nothing parses metadata for it."""

__version__ = "0.1.0"
