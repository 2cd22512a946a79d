"""Process checks for the kill -9 tests (Linux /proc): a parent's spawned workers, and whether a pid lives."""

from __future__ import annotations

from pathlib import Path


def spawned_children(pid: int) -> list[int]:
    """Live (non-zombie) children of ``pid`` started by multiprocessing's spawn (``spawn_main``)."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                if int(fields[1]) == pid and fields[0] != "Z" and b"spawn_main" in (entry / "cmdline").read_bytes():
                    out.append(int(entry.name))
            except OSError:
                continue
    return out


def alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie has exited)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
