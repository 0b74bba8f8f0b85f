# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""roles/gpu_bench/files/gpubench.cu compiles and links against cuBLASLt with nvcc, as the role builds it.

This machine has the CUDA toolkit but no GPU: the program is built, never run, here. cuBLASLt comes from the CUDA
toolkit (CUDA_HOME/include, CUDA_HOME/lib64) or, where the toolkit has no cuBLAS, from the nvidia-cublas wheel
installed in the virtual environment (nvidia/cu*/include, nvidia/cu*/lib). A missing nvcc or cuBLASLt fails the
test (the suite never skips on a missing program).
"""

from __future__ import annotations

import glob
import os
import subprocess

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
SOURCE = os.path.join(REPO, "roles", "gpu_bench", "files", "gpubench.cu")
CUDA_HOME = os.environ.get("CUDA_HOME", "/usr/local/cuda")


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


def test_gpubench_compiles_and_links_cublaslt(tmp_path):
    nvcc = os.path.join(CUDA_HOME, "bin", "nvcc")
    assert os.access(nvcc, os.X_OK), "nvcc not found at %s: install the CUDA toolkit or set CUDA_HOME" % nvcc
    include, library = cublaslt_dirs()
    assert include, ("cuBLASLt not found in %s nor the nvidia-cublas wheel (a test extra of pyproject.toml): "
                     "install it with .venv/bin/pip install -e '.[test]'" % CUDA_HOME)
    # -lcublasLt links libcublasLt.so; a wheel ships only the versioned file
    os.symlink(library, str(tmp_path / "libcublasLt.so"))
    binary = tmp_path / "gpubench"
    proc = subprocess.run(
        [nvcc, "-O2", "-std=c++17", "-Xcompiler", "-Wall", "-gencode=arch=compute_90,code=sm_90", "-I" + include,
         "-L" + str(tmp_path), "-o", str(binary), SOURCE, "-lcublasLt"],
        capture_output=True, text=True, check=False, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "warning" not in proc.stderr.lower(), proc.stderr[-4000:]
    assert os.access(str(binary), os.X_OK)
    # the binary names cuBLASLt among what it needs from the loader: the link is real
    dynamic = subprocess.run(["readelf", "-d", str(binary)], capture_output=True, text=True, check=True).stdout
    assert "libcublasLt.so" in dynamic
