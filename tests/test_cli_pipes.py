"""The command line in a pipeline: a reader that stops early is not an error."""

from __future__ import annotations

import subprocess
import sys


def test_conditions_into_head_is_quiet():
    # `snapbench conditions --joint | head -1`: the pipe closes after one line
    proc = subprocess.Popen([sys.executable, "-m", "snapbench", "conditions", "--joint"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    first = proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read().decode()
    rc = proc.wait(timeout=60)
    assert first.strip() == b"clean"
    assert "error" not in err.lower() and "Traceback" not in err, err
    assert rc in (0, 141)
