"""The launcher's argv for a run over some hosts (gpufleet/plan/launch.py), mpirun and srun.

The launcher records are shaped as role mpi_fabric writes them (roles/mpi_fabric/tasks/launcher.yml); the host names
and addresses are made up.
"""

import pytest

from gpufleet.plan.launch import LaunchError, launch_argv

MPIRUN = {"kind": "mpirun", "argv_prefix": ["mpirun", "--allow-run-as-root", "--hostfile", "/opt/gpufleet/hostfile",
                                            "--mca", "btl_tcp_if_include", "10.0.0.0/24", "-x", "NCCL_SOCKET_IFNAME"],
          "addresses": {"n1": "10.0.0.1", "n2": "10.0.0.2", "n3": "10.0.0.3"}}
SRUN = {"kind": "srun", "argv_prefix": ["env", "NCCL_SOCKET_IFNAME=eth0", "srun", "--nodelist=node-a,node-b,node-c",
                                        "--nodes=3", "--ntasks-per-node=8", "--export=ALL", "--mpi=pmix"],
        "nodes": {"n1": "node-a", "n2": "node-b", "n3": "node-c"}, "addresses": {"n1": "10.0.0.1"}}


def test_mpirun_drops_the_fleet_hostfile_and_names_the_hosts():
    assert launch_argv(MPIRUN, [("n1", 8), ("n3", 8)]) == [
        "mpirun", "--allow-run-as-root", "--mca", "btl_tcp_if_include", "10.0.0.0/24", "-x", "NCCL_SOCKET_IFNAME",
        "-np", "16", "-H", "10.0.0.1:8,10.0.0.3:8"]
    # a single node over localhost (the single-node run): the given address wins
    assert launch_argv(MPIRUN, [("n2", 4)], addresses={"n2": "localhost"})[-4:] == ["-np", "4", "-H", "localhost:4"]


def test_srun_names_its_own_nodes_and_keeps_the_rest():
    assert launch_argv(SRUN, [("n3", 8), ("n1", 8)]) == [
        "env", "NCCL_SOCKET_IFNAME=eth0", "srun", "--nodelist=node-c,node-a", "--nodes=2", "--ntasks-per-node=8",
        "--export=ALL", "--mpi=pmix"]
    # hosts of different sizes: the total, not a per-node count
    assert launch_argv(SRUN, [("n1", 8), ("n2", 4)])[3:6] == ["--nodelist=node-a,node-b", "--nodes=2", "--ntasks=12"]


def test_no_launcher_is_the_nodes_own_mpirun():
    assert launch_argv(None, [("n1", 1), ("n2", 1)], fallback="/usr/bin/mpirun", addresses={"n1": "a", "n2": "b"}) == [
        "/usr/bin/mpirun", "-np", "2", "-H", "a:1,b:1"]


def test_what_cannot_start_is_said():
    with pytest.raises(LaunchError, match="names no Slurm node for n4: provision again"):
        launch_argv(SRUN, [("n1", 8), ("n4", 8)])
    with pytest.raises(LaunchError, match="names no srun"):
        launch_argv({"kind": "srun", "argv_prefix": ["env"], "nodes": {"n1": "a"}}, [("n1", 1)])
    with pytest.raises(LaunchError, match="no host"):
        launch_argv(MPIRUN, [])
