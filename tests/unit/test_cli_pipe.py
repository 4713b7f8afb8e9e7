"""A reader that leaves early (`xwatch scenarios --keys | head -1`) ends xwatch quietly,
with SIGPIPE's status, not with a BrokenPipeError traceback."""

from __future__ import annotations

import os
import subprocess
import sys


def test_a_closed_pipe_ends_quietly() -> None:
    r, w = os.pipe()
    os.close(r)  # the reader is gone before xwatch writes its first line
    try:
        p = subprocess.run([sys.executable, "-m", "xwatch", "scenarios", "--keys"],
                           stdout=w, stderr=subprocess.PIPE, timeout=60, check=False)
    finally:
        os.close(w)
    err = p.stderr.decode()
    assert "Traceback" not in err and "BrokenPipeError" not in err, err
    assert p.returncode == 141, p.returncode  # 128 + SIGPIPE, as a shell tool would end
