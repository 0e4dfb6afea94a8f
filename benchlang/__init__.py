"""benchlang: performance experiments that are rigorous by default."""

__version__ = "0.1.0"
