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
import traceback
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
#: Requirements that pull torchvision (open_clip_torch requires it), and the extras that do where the
#: metadata cannot say.  Each torchvision release pins one exact torch, and pip picks the newest
#: torchvision: installing one of these beside a torch would replace that torch with the newest (a
#: multi-GB CUDA build), so their hint pins the torch in place (or the tested build, where none is).
_TORCHVISION_REQUIREMENTS = ("torchvision", "open_clip_torch", "open-clip-torch")
_TORCHVISION_EXTRAS = frozenset({"openclip"})

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
    An extra that pulls torchvision (``openclip``: torchvision pins one exact torch, and the newest one
    would replace the installed torch with the newest, a CUDA build) ends in ``torch==<the installed
    version>`` (:data:`_TORCH_PIN` where torch is not installed), so pip keeps that torch.
    ``how`` (default: :func:`installation` of the running copy) is for tests."""
    names = [extras] if isinstance(extras, str) else list(extras)
    how = how or _cached()
    command = _extras_command(names, how)
    torch = _installed_torch()
    if _pulls_torchvision(names, how) and torch != "":
        # torchvision pins an exact torch: the command names the torch to keep (the installed one, else
        # the tested build), so pip picks the torchvision made for it
        return f"{command} {shlex.quote(f'torch=={torch}' if torch else _TORCH_PIN)}"
    first = f"pip install {shlex.quote(_TORCH_PIN)} && " if torch is None and _pulls_torch(names, how) else ""
    return first + command


def _installed_torch() -> str | None:
    """The installed torch's version (``2.13.0+cpu``); ``""`` where torch is importable but its
    distribution metadata is missing (a build run in place: nothing to pin), ``None`` where torch is
    not installed."""
    if importlib.util.find_spec("torch") is None:
        return None
    try:
        return metadata.version("torch")
    except metadata.PackageNotFoundError:
        return ""


def _pulls_torch(names: list[str], how: Installation) -> bool:
    """Whether installing ``names`` requires torch (read from the extras' requirements)."""
    if how.requirements:
        return any(re.match(r"^torch(?![\w-])", r) for n in names for r in how.requirements.get(n, []))
    return any(n in _TORCH_EXTRAS for n in names)


def _pulls_torchvision(names: list[str], how: Installation) -> bool:
    """Whether installing ``names`` installs torchvision (and with it one exact torch)."""
    if how.requirements:
        return any(r.lower().startswith(_TORCHVISION_REQUIREMENTS) for n in names for r in how.requirements.get(n, []))
    return any(n in _TORCHVISION_EXTRAS for n in names)


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
    missing-extra message ends in :func:`install_hint`'s command.  When ``module`` is installed but fails
    to import (a broken or mismatched build, any exception its import raises), the message says so and
    gives that error instead: installing the extra again is not the fix.  Only a missing dependency of
    it (a ``ModuleNotFoundError`` for another module) keeps the command, which installs what the extra
    requires.  A torchvision that does not fit the installed torch is named with both versions.
    ``details`` go to the error (``param=`` of a :class:`~snapbench.core.errors.ConfigError`)."""
    try:
        return importlib.import_module(module)
    except Exception as exc:
        missing = exc.name if isinstance(exc, ModuleNotFoundError) else None
        if missing is not None and (module == missing or module.startswith(missing + ".")):
            raise error(f"{need}: {install_hint(extra)}", **details) from exc
        cause = str(exc) if isinstance(exc, ImportError) else f"{type(exc).__name__}: {exc}"
        why = _torchvision_mismatch(exc)
        also = f" ({why})" if why else f" (the extra installs what it requires: {install_hint(extra)})" if missing else ""
        raise error(f"{need}, which is installed but failed to import: {cause}{also}", **details) from exc


def _torchvision_mismatch(exc: BaseException) -> str | None:
    """Both versions, where the failed import ran into torchvision (its frames or its messages) and
    torch and torchvision are installed: torchvision pins the torch it was built for."""
    seen: list[BaseException] = []
    while exc is not None and exc not in seen:
        seen.append(exc)
        exc = exc.__cause__ or exc.__context__
    frames = [f.filename for e in seen for f in traceback.extract_tb(e.__traceback__)]
    if not any("torchvision" in str(e) for e in seen) and not any("torchvision" in Path(f).parts for f in frames):
        return None
    try:
        vision, torch = metadata.version("torchvision"), metadata.version("torch")
        pins = [r for r in metadata.requires("torchvision") or [] if re.match(r"^torch\s*==", r)]
    except metadata.PackageNotFoundError:
        return None
    pin = re.sub(r"\s", "", pins[0].split(";")[0]).removeprefix("torch==") if pins else None
    if pin is not None and pin.split("+")[0] != torch.split("+")[0]:
        return (f"torchvision {vision} requires torch=={pin}, but torch {torch} is installed: install the torchvision "
                f"made for torch {torch}, or torch {pin}")
    return (f"torchvision {vision} is installed beside torch {torch}; a torchvision built for another build of "
            f"torch fails this way: install torchvision from the same index as this torch")
