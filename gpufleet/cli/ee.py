"""``gpufleet validate --ee IMAGE``: the playbook run inside an execution environment (AWX / Automation Platform's
image, built from execution-environment.yml), through ansible-runner's process isolation.

The run is the same; what changes is where ansible-playbook runs. The container gets the host's network (the nodes
are reached as from this machine), runs as root (keys readable only by their owner stay readable), and sees the
paths the run needs at the same paths as here: the results directory (written), each inventory's directory and
``~/.ssh`` (keys, known_hosts; read only), and any ``--ee-mount``. The playbook is named by its FQCN (the collection
is installed in the image), and the host's own paths are not handed in: the collections path and ansible.cfg are the
image's (its ENV carries the collection's settings).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable
from typing import Any

PLAYBOOK_FQCN = "gpufleet.acceptance.validate_cluster"
ENGINES = ("podman", "docker")
# runner environment entries that name this machine's paths
HOST_ONLY_ENV = ("ANSIBLE_COLLECTIONS_PATH", "ANSIBLE_CONFIG", "PATH")


class EEError(ValueError):
    """An --ee run that cannot start (no container engine); the message names the fix."""


def engine(found: str | None = None) -> str:
    """The container engine: podman, else docker."""
    for name in ([found] if found else ENGINES):
        if shutil.which(name):
            return name
    raise EEError("--ee runs the playbook in a container: install podman (or docker) on this machine")


def mounts(results_dir: str, inventories: Iterable[str], extra: Iterable[str] = ()) -> list[str]:
    """``SRC:DEST:OPTIONS`` volume mounts: each path at its own path, the results directory writable."""
    out = ["%s:%s:Z" % (results_dir, results_dir)]
    seen = {results_dir}
    readable = [os.path.dirname(path) if os.path.isfile(path) else path for path in inventories if "," not in path]
    readable += [os.path.expanduser("~/.ssh")] + list(extra)
    for path in readable:
        path = os.path.abspath(path)
        if path not in seen and os.path.exists(path):
            seen.add(path)
            out.append("%s:%s:ro,Z" % (path, path))
    return out


def ee_kwargs(kwargs: dict[str, Any], image: str, results_dir: str, extra_mounts: Iterable[str] = (),
              found_engine: str | None = None) -> dict[str, Any]:
    """``ansible_runner.run`` arguments of ``kwargs`` run in the execution environment ``image``."""
    out = dict(kwargs)
    out.update(process_isolation=True, process_isolation_executable=engine(found_engine), container_image=image,
               container_volume_mounts=mounts(results_dir, kwargs.get("inventory") or [], extra_mounts),
               container_options=["--network=host", "--user=0"], playbook=PLAYBOOK_FQCN)
    out["envvars"] = {key: value for key, value in (kwargs.get("envvars") or {}).items() if key not in HOST_ONLY_ENV}
    return out
