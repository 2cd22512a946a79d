"""The ``pip install`` command that adds an extra to *this* snapbench, however it was installed.

snapbench is not on a package index, so ``pip install 'snapbench[report]'`` works for nobody who
installed it from the repository.  Every missing-extra message asks :func:`install_hint` for its
command, which reads how the running copy was installed:

=====================================================  ==========================================
running copy                                           hint
=====================================================  ==========================================
a checkout (editable install, or the source tree on    ``pip install -e '<checkout>[extra]'``
``PYTHONPATH``)
installed from a local folder (``pip install .``)      ``pip install '<folder>[extra]'``
installed from git (``pip install 'git+URL'``)         ``pip install 'snapbench[extra] @ git+URL@<commit>'``
installed from a wheel / sdist file or URL             ``pip install 'snapbench[extra] @ <url>'``
installed from a package index                         ``pip install 'snapbench[extra]'``
=====================================================  ==========================================

The installation is read from the distribution's PEP 610 ``direct_url.json`` (what pip writes for
everything not installed from an index).  When the folder or file it names is gone, the hint is the
extra's own requirements (from the distribution's metadata), which install into any environment.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import re
import shlex
from importlib import metadata
from pathlib import Path
from typing import Any, Iterable, NamedTuple
from urllib.parse import unquote, urlparse

__all__ = ["Installation", "import_extra", "install_hint", "installation"]

#: The torch build this project is tested with (the CPU wheel; scripts/test.sh and CI install it first).
#: An extra that needs torch, asked for where torch is not installed, would let pip choose a build:
#: an unpinned torch is a multi-GB CUDA build, so the hint installs this one first.
_TORCH_PIN = "torch==2.13.0"
#: The extras that install torch when the distribution's metadata cannot say (a source tree on PYTHONPATH).
_TORCH_EXTRAS = frozenset({"models", "torch", "openclip", "test"})

#: The source tree this module was imported from (the parent of the ``snapbench`` package).
_SOURCE_ROOT = Path(__file__).resolve().parents[2]  # snapbench/core/install_hint.py -> the checkout


class Installation(NamedTuple):
    """How the running snapbench was installed: ``kind`` is ``checkout``, ``folder``, ``vcs``,
    ``archive``, ``index`` or ``unknown``; ``location`` the folder or URL it came from (``None`` for
    ``index`` / ``unknown``); ``requirements`` the extras' requirements by extra name, from the
    distribution's metadata (empty when there is none)."""

    kind: str
    location: str | None
    requirements: dict[str, list[str]]


def _is_checkout(root: Path) -> bool:
    # a source tree of snapbench: its pyproject declares the project
    try:
        text = (root / "pyproject.toml").read_text(encoding="utf-8")
    except OSError:
        return False
    return re.search(r'^name\s*=\s*"snapbench"\s*$', text, re.MULTILINE) is not None


def _file_path(url: str) -> Path | None:
    parsed = urlparse(url)
    return Path(unquote(parsed.path)) if parsed.scheme == "file" else None


def _extra_requirements(dist: metadata.Distribution | None) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for req in (dist.requires or []) if dist is not None else []:
        m = re.match(r"^(?P<req>[^;]+?)\s*;\s*.*extra\s*==\s*['\"](?P<extra>[\w.-]+)['\"]", req)
        if m:
            out.setdefault(m["extra"], []).append(m["req"].replace(" ", ""))
    return out


def installation(dist: metadata.Distribution | None = None, source_root: Path | None = None) -> Installation:
    """How snapbench is installed.  ``dist`` (default: the installed ``snapbench`` distribution, if
    any) and ``source_root`` (default: where this module was imported from) are for tests."""
    if dist is None:
        try:
            dist = metadata.distribution("snapbench")
        except metadata.PackageNotFoundError:
            dist = None
    root = (source_root or _SOURCE_ROOT).resolve()
    reqs = _extra_requirements(dist)
    direct: dict[str, Any] = {}
    if dist is not None:
        try:
            direct = json.loads(dist.read_text("direct_url.json") or "{}")
        except (ValueError, OSError):
            direct = {}  # an unreadable record says nothing about the installation
    url = direct.get("url") if isinstance(direct.get("url"), str) else None
    # The code that runs decides: an editable install of this checkout, or this checkout on
    # PYTHONPATH beside some other installed copy, is extended by installing the checkout.
    if _is_checkout(root):
        return Installation("checkout", str(root), reqs)
    if url is None:
        return Installation("index" if dist is not None else "unknown", None, reqs)
    if "vcs_info" in direct:
        vcs = direct["vcs_info"]
        ref = vcs.get("commit_id") or vcs.get("requested_revision")
        return Installation("vcs", f"{vcs.get('vcs', 'git')}+{url}" + (f"@{ref}" if ref else ""), reqs)
    path = _file_path(url)
    if "dir_info" in direct:
        if path is not None and _is_checkout(path):
            kind = "checkout" if direct["dir_info"].get("editable") else "folder"
            return Installation(kind, str(path), reqs)
        return Installation("unknown", None, reqs)  # the folder it came from is gone
    if path is not None and not path.exists():
        return Installation("unknown", None, reqs)
    return Installation("archive", url, reqs)


@functools.lru_cache(maxsize=None)
def _cached() -> Installation:
    return installation()


def install_hint(extras: str | Iterable[str], *, how: Installation | None = None) -> str:
    """The shell command that installs the extra(s) ``extras`` (``"report"`` or ``["models",
    "report"]``) for the running snapbench, e.g. ``pip install -e '/home/me/snapbench[report]'``.
    An extra that needs torch, where torch is not installed, first installs :data:`_TORCH_PIN` (the CPU
    build this project is tested with; an unpinned torch is a multi-GB CUDA build: on a GPU machine
    install the torch build for your hardware first, and the hint's second command adds nothing more).
    ``how`` (default: :func:`installation` of the running copy) is for tests."""
    names = [extras] if isinstance(extras, str) else list(extras)
    how = how or _cached()
    first = f"pip install {shlex.quote(_TORCH_PIN)} && " if _pulls_torch(names, how) else ""
    return first + _extras_command(names, how)


def _pulls_torch(names: list[str], how: Installation) -> bool:
    """Whether installing ``names`` would let pip pick a torch build (torch is required and absent)."""
    if importlib.util.find_spec("torch") is not None:
        return False
    if how.requirements:
        return any(re.match(r"^torch(?![\w-])", r) for n in names for r in how.requirements.get(n, []))
    return any(n in _TORCH_EXTRAS for n in names)


def _extras_command(names: list[str], how: Installation) -> str:
    tag = f"[{','.join(names)}]"
    if how.kind == "checkout":
        return f"pip install -e {shlex.quote(how.location + tag)}"
    if how.kind == "folder":
        return f"pip install {shlex.quote(how.location + tag)}"
    if how.kind in ("vcs", "archive"):
        return f"pip install {shlex.quote(f'snapbench{tag} @ {how.location}')}"
    if how.kind == "unknown" and all(n in how.requirements for n in names):
        reqs = dict.fromkeys(r for n in names for r in how.requirements[n])  # once each, in order
        return "pip install " + " ".join(shlex.quote(r) for r in reqs)
    return f"pip install {shlex.quote('snapbench' + tag)}"


def import_extra(module: str, extra: str, need: str, *, error: type[Exception] = ImportError, **details: Any) -> Any:
    """``module`` imported (a dotted name), or ``error`` saying ``"<need>: <the command that installs the
    extra>"`` -- how snapbench imports what an extra installs (model packages included), so every
    missing-extra message ends in :func:`install_hint`'s command.  When ``module`` is there but fails to
    import (a dependency of it missing, a broken or mismatched build), the message also gives that import
    error: installing the extra again may not be the fix.  ``details`` go to the error (``param=`` of a
    :class:`~snapbench.core.errors.ConfigError`)."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        absent = isinstance(exc, ModuleNotFoundError) and exc.name is not None and (
            module == exc.name or module.startswith(exc.name + "."))
        why = "" if absent else f" (importing {module} failed: {exc})"
        raise error(f"{need}{why}: {install_hint(extra)}", **details) from exc
