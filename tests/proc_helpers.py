"""Running a test's subprocess as a user who cannot write everywhere, even when the tests run as root."""

from __future__ import annotations

import os
import shutil
import subprocess


def without_root_powers() -> list[str] | None:
    """A prefix that runs a command as this user without root's power to write anywhere."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return None
    drop = "-dac_override,-dac_read_search"
    probe = subprocess.run([setpriv, f"--inh-caps={drop}", f"--bounding-set={drop}", "true"], capture_output=True)
    return [setpriv, f"--inh-caps={drop}", f"--bounding-set={drop}"] if probe.returncode == 0 else None
