"""Library parameter names -> command-line flags: the one table the CLI renders errors with.

Library errors name parameters (``set_threshold``, references written with
:func:`snapbench.core.errors.arg`); :func:`snapbench.cli.guarded` shows them as the flag that sets them.
Most flags are the parameter with ``_`` -> ``-``; this table holds the exceptions.
"""

from __future__ import annotations

__all__ = ["FLAGS", "flag"]

#: parameter name -> flag, where the flag is not simply ``--`` + name with "_" as "-".
FLAGS: dict[str, str] = {
    "out_dir": "--out",
    "unknown_items": "--allow-unknown-items",
    "encoder_actors": "--actors",
    "ks": "--k",
    "image_format": "--format",
    "curve_tol": "--cliff-tol",
    "curve_ratio": "--cliff-ratio",
    "dataset_format": "--format",
    "use_cache": "--no-cache",
    "whiten": "--no-whiten",
    "ci_level": "--ci",
    "manifest_path": "INPUT",
    "scores_dir": "SCORES_DIR",
    "run_dir": "RUN_DIR",
    "k": "--topk",  # fusion's top-k cut-off (evaluate's cut-offs are `ks`)
    "embeddings": "--q-image/--q-text/--g-image/--g-text",
}


def flag(param: str) -> str:
    """The flag (or argument name) that sets the library parameter ``param``."""
    return FLAGS.get(param) or "--" + param.replace("_", "-")

# appended: snapbench compare (the library's list parameters; the CLI repeats one flag per item)
FLAGS.update({"names": "--name", "paths": "RUN_DIR"})

# appended: measuring is on by default; the CLI turns it off (resume refusals name it)
FLAGS.update({"measure": "--no-measure"})
