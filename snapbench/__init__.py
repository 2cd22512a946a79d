"""snapbench: paired robustness evaluation of image+text retrieval.

The main entry points, re-exported here::

    from snapbench import corrupt_image, corrupt_text, list_conditions, moor, evaluate_directory

Sub-packages: :mod:`snapbench.corruptions` (load -> corrupt), :mod:`snapbench.models` and
:mod:`snapbench.app.encode` (encode -> score), :mod:`snapbench.fusion` (fuse), :mod:`snapbench.evaluate`
(evaluate -> report).
"""

from ._version import __version__

# Re-exports are resolved on first use (PEP 562), so that importing a small module such as
# snapbench.core.seeding or snapbench.core.ranking does not load OpenCV, scipy and every sub-package.
_EXPORTS: dict[str, str] = {
    "Condition": "snapbench.core.conditions",
    "list_conditions": "snapbench.core.conditions",
    "parse_condition": "snapbench.core.conditions",
    "corrupt_image": "snapbench.corruptions",
    "corrupt_text": "snapbench.corruptions",
    "load_image": "snapbench.corruptions",
    "run_corruption": "snapbench.corruptions",
    "EvaluationConfig": "snapbench.evaluate",
    "evaluate_directory": "snapbench.evaluate",
    "MOORIndex": "snapbench.fusion",
    "moor": "snapbench.fusion",
    "moor_from_scores": "snapbench.fusion",
}


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'snapbench' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


__all__ = [
    "__version__",
    "Condition",
    "list_conditions",
    "parse_condition",
    "corrupt_image",
    "corrupt_text",
    "load_image",
    "run_corruption",
    "EvaluationConfig",
    "evaluate_directory",
    "MOORIndex",
    "moor",
    "moor_from_scores",
]
