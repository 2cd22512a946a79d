"""What each command says when Ctrl-C (or SIGTERM, SIGHUP) stops it: only a command that resumes says
"rerun to resume".

:func:`snapbench.cli.guarded` prints the line of the command it wraps (exit 130; 143 for SIGTERM, 129
for SIGHUP: :mod:`snapbench.engines.signals`).  ``corrupt`` prints its own, with the exact command line that
resumes it.
"""

from __future__ import annotations

__all__ = ["ON_INTERRUPT", "interrupted_message"]

_RESUMES = "interrupted; rerun the same command to resume (finished outputs are kept)"
_NOTHING = "interrupted; nothing was written"
_PARTIAL = ("interrupted; this command does not resume: the output folder may hold some of its files "
            "(each complete, the set not); rerun the same command to write them all")

#: command -> the line printed when it is interrupted (commands not listed: nothing was written)
ON_INTERRUPT: dict[str, str] = {
    "run": _RESUMES,  # pipeline.resume: finished query blocks and reports are kept
    "demo": _RESUMES,  # snapbench run on the bundled set
    "encode": ("interrupted; rerun the same command: embeddings already in the encoder cache are read back, "
               "not recomputed (no cache with --no-cache, nor for the toy encoder without --cache-dir)"),
    "stress": _RESUMES,  # app.stress: encoded vectors are kept in OUT/vectors/
    "report": _PARTIAL,
    "compare": _PARTIAL,
    "moor": _PARTIAL,
    # corrupt prints its own line, with the command that resumes it (commands/corrupt.py)
    # diagnose, evaluate, preview: every output is written at the end (diagnose removes a folder it
    # created); conditions, additivity: print only
}


def interrupted_message(command: str) -> str:
    """The line ``snapbench <command>`` prints when Ctrl-C stops it."""
    return ON_INTERRUPT.get(command, _NOTHING)
