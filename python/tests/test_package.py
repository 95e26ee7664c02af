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


def test_build_wheel_replaces_older_versions(tmp_path):
    # docs/python.md installs dist/neardup-*-manylinux_*_x86_64.whl: with
    # the wheel of an earlier commit still there, pip refused both
    # (ResolutionImpossible). build_wheel.py now removes the older ones of
    # the same system and architecture, and leaves the others.
    import subprocess
    import sys

    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build_wheel.py")
    lib, binary, out = tmp_path / "lib.so", tmp_path / "bin", tmp_path / "dist"
    lib.write_bytes(b"lib")
    binary.write_bytes(b"bin")

    def build(version, plat):
        subprocess.run([sys.executable, script, "--version", version, "--plat", plat, "--lib", str(lib), "--bin", str(binary), "--out", str(out)], check=True, stdout=subprocess.DEVNULL)

    build("0.1.0+gaaaaaaa", "manylinux_2_34_x86_64")
    build("0.1.0+gbbbbbbb", "manylinux_2_28_x86_64")
    build("0.1.0+gccccccc", "manylinux_2_34_aarch64")
    build("0.1.0+gddddddd", "manylinux_2_34_x86_64")
    (out / "other-1.0-py3-none-any.whl").write_bytes(b"")
    build("0.1.0+geeeeeee", "manylinux_2_34_x86_64")
    assert sorted(os.listdir(out)) == [
        "neardup-0.1.0+gccccccc-py3-none-manylinux_2_34_aarch64.whl",
        "neardup-0.1.0+geeeeeee-py3-none-manylinux_2_34_x86_64.whl",
        "other-1.0-py3-none-any.whl",
    ]
