# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Build the fake libnvidia-ml.so (fake_nvml.c, a test double) with gcc, and locate its data files.

Each variant is built into its own folder as ``libnvidia-ml.so.1`` (so ``LD_LIBRARY_PATH`` finds it under
the real name):

- ``full``: every symbol the sampler uses;
- ``old``: without ``nvmlDeviceGetFieldValues``, ``nvmlDeviceGetNvLinkErrorCounter`` and
  ``nvmlSystemGetNVMLVersion``, as an older driver's library would be (missing symbols).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, "fake_nvml.c")
VARIANTS = {
    "full": [],
    "old": ["-DOMIT_nvmlDeviceGetFieldValues", "-DOMIT_nvmlDeviceGetNvLinkErrorCounter", "-DOMIT_nvmlSystemGetNVMLVersion"],
}


def data_file(name):
    """Path of a data file of this folder (``h100-590-1gpu.data``, ...)."""
    return os.path.join(HERE, name)


def gcc():
    """The C compiler, or None."""
    return shutil.which("gcc")


def build(out_dir):
    """Compile every variant into ``out_dir/<variant>/libnvidia-ml.so.1``; {variant: path}."""
    compiler = gcc()
    if compiler is None:
        raise RuntimeError("gcc is not installed")
    built = {}
    for variant, flags in VARIANTS.items():
        folder = os.path.join(str(out_dir), variant)
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, "libnvidia-ml.so.1")
        cmd = [compiler, "-shared", "-fPIC", "-O1", "-Wall", "-Wextra", "-Werror", "-Wl,-soname,libnvidia-ml.so.1", "-o", path, SOURCE] + flags
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=120, env=dict(os.environ, LC_ALL="C"))
        if proc.returncode != 0:
            raise RuntimeError("gcc failed for %s: %s" % (variant, proc.stderr))
        built[variant] = path
    return built


_BUILT = {}


def require_gcc():
    """Fail the test (a set-up defect, naming the package and the set-up command) when gcc is missing."""
    tools = os.path.join(os.path.dirname(HERE), "tools")
    if tools not in sys.path:
        sys.path.insert(0, tools)
    from system_programs import require_programs  # pylint: disable=import-error,import-outside-toplevel

    require_programs(["gcc"], "it builds the fake libnvidia-ml.so (tests/fakenvml/fake_nvml.c)")


def build_once(tmp_path_factory):
    """``build`` once per pytest session (the test modules share it); fails when gcc is missing."""
    require_gcc()
    if "libs" not in _BUILT:
        _BUILT["libs"] = build(tmp_path_factory.mktemp("fakenvml"))
    return _BUILT["libs"]
