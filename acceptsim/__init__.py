"""acceptsim: the command-line and reporting layer over ``sim`` (engine) and ``models`` (domain)."""

from importlib.metadata import PackageNotFoundError, version

try:
    #: the installed distribution's version (pyproject.toml is its one source)
    __version__ = version("acceptsim")
except PackageNotFoundError:  # sources on sys.path without an install
    __version__ = "unknown (not installed)"
