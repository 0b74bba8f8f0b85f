"""The launcher's command line for a benchmark over some of the fleet's hosts: one rule for mpirun and srun.

Role mpi_fabric records the launcher it provisioned (``gpufleet_launcher``: ``kind`` mpirun or srun, ``argv_prefix``
for the whole fleet, ``addresses`` and, for srun, ``nodes``: each inventory host's Slurm node name). A benchmark run
over other hosts than the whole fleet (one node, a pair of the bad-node search, the fleet less the hosts the preflight
stopped) takes that prefix and names its own hosts:

- mpirun: the fleet's ``--hostfile FILE`` is dropped and ``-np RANKS -H ADDRESS:SLOTS,...`` added;
- srun: ``--nodelist=``, ``--nodes=`` and ``--ntasks-per-node=`` are replaced by this run's (``--ntasks=`` when the
  hosts have different slots), everything else kept (``env NCCL_...``, ``--export=ALL``, ``--mpi=``).

Without a launcher the node's own mpirun is used, as mpirun (``fallback``).
"""

from __future__ import annotations

from typing import Any, List, Mapping, Optional, Sequence, Tuple

# (inventory host, ranks on it)
Slot = Tuple[str, int]
SRUN_HOST_OPTIONS = ("--nodelist=", "--nodes=", "--ntasks-per-node=", "--ntasks=")


class LaunchError(ValueError):
    """A launcher record that cannot start a run over the hosts asked for."""


def _without_hostfile(prefix: Sequence[str]) -> List[str]:
    argv = list(prefix)
    if "--hostfile" in argv:
        at = argv.index("--hostfile")
        del argv[at:at + 2]
    return argv


def _mpirun_argv(prefix: Sequence[str], slots: Sequence[Slot], addresses: Mapping[str, str]) -> List[str]:
    hosts = ",".join("%s:%d" % (addresses.get(host) or host, ranks) for host, ranks in slots)
    return _without_hostfile(prefix) + ["-np", str(sum(ranks for _host, ranks in slots)), "-H", hosts]


def _srun_argv(prefix: Sequence[str], slots: Sequence[Slot], nodes: Mapping[str, str]) -> List[str]:
    missing = [host for host, _ranks in slots if not nodes.get(host)]
    if missing:
        raise LaunchError("the srun launcher names no Slurm node for %s: provision again (role mpi_fabric)"
                          % ", ".join(missing))
    argv = [word for word in prefix if not str(word).startswith(SRUN_HOST_OPTIONS)]
    try:
        at = next(index for index, word in enumerate(argv) if str(word).rsplit("/", 1)[-1] == "srun") + 1
    except StopIteration:
        raise LaunchError("an srun launcher whose argv names no srun: %s" % " ".join(map(str, prefix))) from None
    counts = {ranks for _host, ranks in slots}
    tasks = (["--ntasks-per-node=%d" % counts.pop()] if len(counts) == 1
             else ["--ntasks=%d" % sum(ranks for _host, ranks in slots)])
    own = ["--nodelist=" + ",".join(nodes[host] for host, _ranks in slots), "--nodes=%d" % len(slots)] + tasks
    return argv[:at] + own + argv[at:]


def launch_argv(launcher: Optional[Mapping[str, Any]], slots: Sequence[Slot], fallback: str = "mpirun",
                addresses: Optional[Mapping[str, str]] = None) -> List[str]:
    """The launcher's argv (before the benchmark's) for a run of ``slots`` ranks on their hosts.

    ``addresses`` (inventory host -> cluster address) win over the launcher's own for mpirun's ``-H``.
    """
    if not slots:
        raise LaunchError("a run over no host")
    launcher = launcher or {}
    kind = launcher.get("kind")
    if kind == "srun":
        return _srun_argv(launcher.get("argv_prefix") or [], slots, launcher.get("nodes") or {})
    known = dict(launcher.get("addresses") or {})
    known.update({host: address for host, address in (addresses or {}).items() if address})
    prefix = launcher.get("argv_prefix") if kind == "mpirun" else [fallback]
    return _mpirun_argv(prefix or [fallback], slots, known)
