"""The error raised for measured-run files that cannot be read."""

from __future__ import annotations

from pathlib import Path


class ParseError(ValueError):
    """A measured-run file has a line we do not understand, or ends too early.

    The message names the file and the (1-based) line number, so it can be
    printed as one line: ``httperf.txt:14: unknown line 'Foo: 3'``.
    """

    def __init__(self, path: str | Path, line: int, message: str) -> None:
        self.path = str(path)
        self.line = line
        self.message = message
        super().__init__(f"{self.path}:{line}: {message}")
