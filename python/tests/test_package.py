"""The installed package: the console script, types, the bundled binary."""

import os
import shutil
import subprocess
import sys

import neardup


def test_console_script_runs_the_bundled_binary():
    exe = shutil.which("neardup")
    assert exe is not None, "the neardup console script is not on PATH"
    out = subprocess.run([exe, "--version"], capture_output=True, text=True, check=True).stdout
    assert out.startswith("neardup ")
    out = subprocess.run([sys.executable, "-m", "neardup", "lsh-params", "--threshold", "0.8", "--num-perm", "128", "--json"], capture_output=True, text=True, check=True).stdout
    assert '"bands"' in out


def test_typed():
    assert os.path.exists(os.path.join(os.path.dirname(neardup.__file__), "py.typed"))
    assert neardup.__version__ != "0+unknown"
