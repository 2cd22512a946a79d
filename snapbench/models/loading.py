"""Where a model's files come from, and the one translation of load failures into an error line.

:func:`model_source` decides before a (possibly minutes-long) load what a ``NAME_OR_PATH`` is:

* a **path** (starts with ``.``, ``/`` or ``~``, has more than one ``/``, or exists): it must be a
  folder; a path that does not exist is "no such model folder", never a Hub lookup;
* a **Hub name found in the local Hugging Face cache**: loaded from the cache without contacting the
  Hub (local files first: no network retries, the same weights every run; ``hf download NAME``
  updates the cache);
* any other **Hub name**: one request without retries asks the Hub whether it has the model, so an
  unknown name, or a machine without network, is one clear error at once instead of a minute of
  retries printed by the download library (skipped under ``HF_HUB_OFFLINE=1``, where the loaders
  fail at once themselves).

:func:`local_model_folder` finds, without checks, the folder a loaded model's files were read from (to
fingerprint them).  :func:`load_or_explain` runs a loader and turns whatever it raises into one
:class:`~snapbench.core.errors.ConfigError` line starting with the encoder's spec.
:func:`quiet_loading` turns off the progress bars of transformers and huggingface_hub ("Loading
weights", downloads) while models load, for commands run with ``--no-progress``.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.errors import ConfigError, SnapbenchError

__all__ = ["ModelSource", "load_or_explain", "local_model_folder", "model_source", "one_line", "quiet_loading"]

_QUIET: contextvars.ContextVar[bool] = contextvars.ContextVar("snapbench_quiet_loading", default=False)
_PROBE_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class ModelSource:
    """A model's ``NAME_OR_PATH`` as resolved by :func:`model_source`: ``folder`` is the local folder it
    is read from (``None``: downloaded from the Hub), ``cached`` whether that folder is the local cache's
    copy of a Hub name (loaded with ``local_files_only``)."""

    name: str
    folder: Path | None
    cached: bool = False

    @property
    def is_path(self) -> bool:
        return self.folder is not None and not self.cached


def one_line(exc: BaseException) -> str:
    """``Type: first line`` of an exception, plus its ``pip install`` line when it has one."""
    lines = [ln.strip() for ln in str(exc).strip().splitlines() if ln.strip()]
    text = lines[0] if lines else ""
    hint = next((ln for ln in lines[1:] if "pip install" in ln), None)
    if hint:
        text += f" ({hint})"
    name = type(exc).__name__
    return f"{name}: {text}" if text else name


def _hub_offline() -> bool:
    """Whether the environment tells the Hugging Face libraries not to use the network."""
    return any(os.environ.get(v, "") not in ("", "0") for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))


def _path_like(source: str) -> bool:
    if source.startswith((".", "/", "~")) or source.count("/") > 1 or (os.sep != "/" and os.sep in source):
        return True
    return Path(os.path.expanduser(source)).exists()


def _cached_snapshot(names: tuple[str, ...]) -> Path | None:
    try:
        from huggingface_hub import snapshot_download
    except ImportError:
        return None
    for repo in names:
        try:
            return Path(snapshot_download(repo, local_files_only=True))
        except Exception:  # noqa: BLE001, S112 - not cached under that name (or not a valid name): next
            continue
    return None


def local_model_folder(source: str, *, alternatives: tuple[str, ...] = ()) -> Path | None:
    """The folder a model's files are read from: ``source`` itself when it is a folder, else the local
    Hugging Face cache snapshot of ``source`` (or of one of ``alternatives``); ``None`` if neither.

    Unlike :func:`model_source` it checks nothing and asks no Hub: the adapters call it after the
    load, to hash the files of the weights they loaded (a model the load just downloaded is in the
    cache by then)."""
    p = Path(os.path.expanduser(source))
    if p.is_dir():
        return p
    return _cached_snapshot((source, *alternatives))


def _probe_hub(what: str, source: str, names: tuple[str, ...]) -> None:
    """One request per name, no retries: refuse a name the Hub does not have, or a Hub that cannot be reached."""
    if _hub_offline():
        return
    try:
        import huggingface_hub
        from huggingface_hub.errors import GatedRepoError, HfHubHTTPError, HFValidationError, RepositoryNotFoundError
    except ImportError:
        return
    problem = None
    for repo in names:
        try:
            huggingface_hub.model_info(repo, timeout=_PROBE_TIMEOUT_S)
            return
        except GatedRepoError:
            return  # it exists; the loader asks for the token
        except (RepositoryNotFoundError, HFValidationError):
            problem = "not found"
        except HfHubHTTPError:
            return  # the Hub answered something else: the loader says what
        except Exception as exc:  # noqa: BLE001 - no connection (DNS, proxy, timeout ...)
            raise ConfigError(
                f"{what}: model {source!r} is not a local folder, not in the local model cache, and the Hugging Face "
                f"Hub cannot be reached to download it ({one_line(exc)}); give the path of a local copy, or "
                "pre-download it where there is internet access (e.g. `hf download NAME`) and copy the cache "
                "(~/.cache/huggingface) here") from None
    if problem:
        raise ConfigError(f"{what}: no model {source!r} on the Hugging Face Hub, in the local model cache or as a "
                          "folder (check the name; a private model needs HF_TOKEN)")


def model_source(what: str, source: str, *, alternatives: tuple[str, ...] = ()) -> ModelSource:
    """Resolve ``source`` (see the module docstring); ``alternatives``: other Hub names the loader would
    try for it (sentence-transformers' own organisation for a bare name).  ``what`` starts every error."""
    if _path_like(source):
        p = Path(os.path.expanduser(source))
        if not p.exists():
            raise ConfigError(f"{what}: no such model folder {source!r}")
        if not p.is_dir():
            raise ConfigError(f"{what}: {source!r} is a file, not a model folder")
        return ModelSource(source, p)
    names = (source, *alternatives)
    snapshot = _cached_snapshot(names)
    if snapshot is not None:
        return ModelSource(source, snapshot, cached=True)
    _probe_hub(what, source, names)
    return ModelSource(source, None)


@contextlib.contextmanager
def quiet_loading(quiet: bool = True) -> Iterator[None]:
    """While active (and ``quiet``), :func:`load_or_explain` hides the loaders' progress bars."""
    token = _QUIET.set(quiet)
    try:
        yield
    finally:
        _QUIET.reset(token)


@contextlib.contextmanager
def _bars_off() -> Iterator[None]:
    """transformers' and huggingface_hub's progress bars off, restored afterwards (only libraries
    already imported by the adapter are touched)."""
    undo: list[Callable[[], None]] = []
    tf_logging = sys.modules.get("transformers.utils.logging")
    if tf_logging is not None and tf_logging.is_progress_bar_enabled():
        tf_logging.disable_progress_bar()
        undo.append(tf_logging.enable_progress_bar)
    hub_utils = sys.modules.get("huggingface_hub.utils")
    if hub_utils is not None and not hub_utils.are_progress_bars_disabled():
        hub_utils.disable_progress_bars()
        undo.append(hub_utils.enable_progress_bars)
    try:
        yield
    finally:
        for step in reversed(undo):
            step()


def _load_error(what: str, src: ModelSource, exc: BaseException) -> ConfigError:
    if src.is_path:
        where = f"the folder {src.name!r}" if src.folder is not None and src.folder.is_dir() else repr(src.name)
        return ConfigError(f"{what}: cannot load a model from {where} ({one_line(exc)})")
    if isinstance(exc, OSError):  # the Hub libraries' "not found / cannot download"
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return ConfigError(
            f"{what}: model {src.name!r} is not a local folder, not in the local model cache, and cannot be "
            f"downloaded{' (HF_HUB_OFFLINE is set)' if _hub_offline() else ''} [{detail}]; give the path of a local "
            "copy, or pre-download it where there is internet access (e.g. `hf download NAME`) and copy the cache "
            "(~/.cache/huggingface) here")
    return ConfigError(f"{what}: cannot load model {src.name!r} ({one_line(exc)})")


def load_or_explain(what: str, source: str | ModelSource, load: Callable[..., Any]) -> Any:
    """``load()`` as one clear :class:`ConfigError` when it fails (module docstring).

    Given a :class:`ModelSource` of a cached Hub name, ``load(local_files_only=True)`` is tried first (an
    incomplete cache falls back to ``load()``); a plain string is resolved as a path or a Hub name
    without checks."""
    src = source if isinstance(source, ModelSource) else ModelSource(
        source, Path(os.path.expanduser(source)) if _path_like(source) else None)
    with _bars_off() if _QUIET.get() else contextlib.nullcontext():
        try:
            if src.cached:
                try:
                    return load(local_files_only=True)
                except OSError:
                    pass  # files missing from the cache: the Hub has them
            return load()
        except SnapbenchError:
            raise
        except Exception as exc:  # noqa: BLE001 - every failure of a model library to load: one line
            raise _load_error(what, src, exc) from None
