"""Errors the engine raises for bad input."""

from __future__ import annotations


class ConfigError(ValueError):
    """A configuration value is not allowed.

    The message always names the field, the value given and what is allowed,
    so a command-line front end can print it as one line.
    """

    def __init__(self, field: str, value: object, allowed: str) -> None:
        self.field = field
        self.value = value
        self.allowed = allowed
        super().__init__(f"{field}={value!r} is not allowed: {allowed}")

    def __reduce__(self) -> tuple[type, tuple[str, object, str]]:
        # picklable, so an error raised in a worker process reaches the caller intact
        return (type(self), (self.field, self.value, self.allowed))
