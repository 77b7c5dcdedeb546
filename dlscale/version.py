"""This dlscale's version, in one place (``dlscale.__version__`` reads it from here)."""

__all__ = ["__version__"]

__version__ = "0.1.0"
