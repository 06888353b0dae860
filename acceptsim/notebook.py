"""What a notebook says about the scale it ran at.

The notebooks run at full scale by default; the documentation site and the tests run
them small (``ACCEPTSIM_NOTEBOOK_SCALE=small``), in seconds, and the site shows beside
them the full-scale copies ``tools/full_scale.py`` makes (checked for staleness by the
tests).  A page built small must
say so where its numbers are, so that no one takes a tiny run's answer for the
result: every notebook prints :func:`scale_note` under its settings.
"""

from __future__ import annotations

#: the environment variable the notebooks read their scale from
SCALE_ENV = "ACCEPTSIM_NOTEBOOK_SCALE"


def scale_note(small: bool, runs: str, differs: str = "") -> str:
    """One paragraph for the notebook's output: at small scale, that its numbers are too
    short and too few to conclude from (``runs`` says what was run, ``differs`` what is
    known to come out otherwise at full scale); at full scale, what was run."""
    if not small:
        return f"Full scale: {runs}."
    text = (
        f"Small scale ({SCALE_ENV}=small, as on the documentation site and in the tests): "
        f"{runs}.  These numbers show how the analysis is done; they are too short and too "
        "few to conclude from"
    )
    if differs:
        text += f" (at full scale {differs})"
    return text + (".  Its full-scale run is under 'Notebooks at full scale' on the "
                   "documentation site (tools/full_scale.py), or run the notebook yourself "
                   "(make notebook).")
