# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""roles/gpu_bench/files/gpubench.cu compiles and links against cuBLASLt with nvcc, as the role builds it.

The flags are the role's own (roles/gpu_bench/defaults/main.yml: gpu_bench_cflags, then gpu_bench_default_gencode:
sm_80, sm_90, sm_100 and compute_100 PTX), so a warning the role's build would print fails here: the build must
print none. This machine has the CUDA toolkit but no GPU: the program is run only where it touches no GPU (-V and
a bad argument). cuBLASLt comes from the CUDA toolkit (CUDA_HOME/include, CUDA_HOME/lib64) or, where the toolkit has
no cuBLAS, from the nvidia-cublas wheel installed in the virtual environment (nvidia/cu*/include, nvidia/cu*/lib). A
missing nvcc or cuBLASLt fails the test (the suite never skips on a missing program). One compile for three
architectures: about 20 s on 2 idle cores.
"""

from __future__ import annotations

import glob
import os
import subprocess

import pytest
import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
SOURCE = os.path.join(REPO, "roles", "gpu_bench", "files", "gpubench.cu")  # gpubench_logic.h beside it
DEFAULTS = os.path.join(REPO, "roles", "gpu_bench", "defaults", "main.yml")
CUDA_HOME = os.environ.get("CUDA_HOME", "/usr/local/cuda")


def role_flags() -> list:
    """nvcc's flags as the role passes them: gpu_bench_cflags, then gpu_bench_default_gencode."""
    with open(DEFAULTS, "r", encoding="utf-8") as handle:
        defaults = yaml.safe_load(handle)
    flags = [str(word) for word in defaults["gpu_bench_cflags"] + defaults["gpu_bench_default_gencode"]]
    # the shipped set this test is meant to hold the source to: a change of it is a change here too
    assert "-Xcompiler=-Wall,-Wextra" in flags and "arch=compute_100,code=[sm_100,compute_100]" in flags, flags
    return flags


def cublaslt_dirs() -> tuple:
    """(include dir, library file) of cuBLASLt: the toolkit's, else the nvidia-cublas wheel's."""
    if os.path.exists(os.path.join(CUDA_HOME, "include", "cublasLt.h")):
        libraries = sorted(glob.glob(os.path.join(CUDA_HOME, "lib64", "libcublasLt.so*")))
        if libraries:
            return os.path.join(CUDA_HOME, "include"), libraries[0]
    try:
        import nvidia  # pylint: disable=import-outside-toplevel
    except ImportError:
        return None, None
    for root in list(nvidia.__path__):
        for home in sorted(glob.glob(os.path.join(root, "cu*"))):
            libraries = sorted(glob.glob(os.path.join(home, "lib", "libcublasLt.so*")))
            if os.path.exists(os.path.join(home, "include", "cublasLt.h")) and libraries:
                return os.path.join(home, "include"), libraries[0]
    return None, None


@pytest.fixture(name="gpubench", scope="module")
def gpubench_fixture(tmp_path_factory) -> tuple:
    """(binary, environment to run it): built once for the tests of this module."""
    nvcc = os.path.join(CUDA_HOME, "bin", "nvcc")
    assert os.access(nvcc, os.X_OK), "nvcc not found at %s: install the CUDA toolkit or set CUDA_HOME" % nvcc
    include, library = cublaslt_dirs()
    assert include, ("cuBLASLt not found in %s nor the nvidia-cublas wheel (a test extra of pyproject.toml): "
                     "install it with .venv/bin/pip install -e '.[test]'" % CUDA_HOME)
    build = tmp_path_factory.mktemp("gpubench")
    # -lcublasLt links libcublasLt.so; a wheel ships only the versioned file
    os.symlink(library, str(build / "libcublasLt.so"))
    binary = build / "gpubench"
    proc = subprocess.run(
        [nvcc] + role_flags() + ["-I" + include, "-L" + str(build), "-o", str(binary), SOURCE, "-lcublasLt"],
        capture_output=True, text=True, check=False, timeout=900)
    assert proc.returncode == 0, proc.stderr[-4000:]
    # nvcc, the host compiler (-Wall -Wextra) and the device compiler all print to stderr: nothing at all
    assert "warning" not in (proc.stdout + proc.stderr).lower(), (proc.stdout + proc.stderr)[-4000:]
    environment = dict(os.environ, LD_LIBRARY_PATH=os.path.dirname(library))
    return str(binary), environment


def test_gpubench_compiles_and_links_cublaslt(gpubench):
    binary = gpubench[0]
    assert os.access(binary, os.X_OK)
    # the binary names cuBLASLt among what it needs from the loader: the link is real
    dynamic = subprocess.run(["readelf", "-d", binary], capture_output=True, text=True, check=True).stdout
    assert "libcublasLt.so" in dynamic


def test_gpubench_prints_its_version(gpubench):
    binary, environment = gpubench
    proc = subprocess.run([binary, "-V"], capture_output=True, text=True, check=False, timeout=60, env=environment)
    assert (proc.returncode, proc.stdout) == (0, "gpubench version=1.1\n"), proc.stderr


@pytest.mark.parametrize("args, message", [
    (["-m", "16", "-n", "100"], "-n 100: SIZE must be a multiple of 16 from 256 to 32768"),
    (["-f", "2"], "-f 2: FAST_ACCUM must be 0 (precise) or 1 (fast)"),
    (["-x", "1"], "unknown option -x"),
    (["-s"], "option -s needs a value"),
])
def test_gpubench_refuses_bad_arguments_with_usage_and_exit_2(gpubench, args, message):
    binary, environment = gpubench
    proc = subprocess.run([binary] + args, capture_output=True, text=True, check=False, timeout=60, env=environment)
    assert proc.returncode == 2
    assert proc.stdout == ""  # nothing the parser could take for a run
    assert proc.stderr.startswith("gpubench: " + message + "\nusage: gpubench "), proc.stderr
