"""acceptsim: the command-line and reporting layer over ``sim`` (engine) and ``models`` (domain)."""

__version__ = "0.1.0"
