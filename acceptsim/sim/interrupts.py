"""The compiled event loop's window for signals (this module stays interpreted).

Python runs a signal's handler (SIGINT's ``KeyboardInterrupt``, the command
line's SIGTERM) only between the bytecodes of interpreted code.  Compiled, the
event loop of :meth:`acceptsim.sim.engine.Environment.run` could run a whole simulation
without executing one, and a ^C would wait for the run to end.  So the loop
calls :func:`window` every :data:`EVENTS_PER_WINDOW` events: running its
bytecode is what lets a pending signal's handler run, and an exception it
raises leaves the loop there.  This module must stay out of the compiled build
(``sim.native.COMPILED``).
"""

from __future__ import annotations

from typing import Final

#: events between two windows (a compiled run processes a few million events per
#: CPU-second: a signal is handled within a millisecond or so, at no measurable cost)
EVENTS_PER_WINDOW: Final = 4096


def window() -> None:
    """Do nothing, in interpreted code: a pending signal's handler runs here."""
    return None
