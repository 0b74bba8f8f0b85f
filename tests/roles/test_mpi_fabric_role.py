# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""roles/mpi_fabric with ansible-playbook on localhost: the launcher it generates for OpenMPI 4
and 5 and for Slurm, the NCCL variables it forwards, and its preflight refusals.

TEST DOUBLES, written here: ``mpirun`` scripts printing the first line of ``mpirun --version``
as Open MPI 4.1.4 (Debian's openmpi-bin, the one installed on this machine) and Open MPI 5.0.3
print it, and as MPICH's ``mpirun`` (Hydra) prints it; ``srun``/``sinfo`` scripts answering
``--version`` and ``--noheader --Node --format=%N``. The host key is a real ed25519 key made
with ssh-keygen. The interface is ``lo`` (127.0.0.1): every host here is this machine. The
gpufleet_gpu and gpufleet_nccl_env facts are SYNTHETIC (set as variables).
The real cross-host run of a generated launcher is the Molecule scenario molecule/provision.
"""

from __future__ import annotations

import json
import os
import shlex
import socket
import subprocess
import sys

import pytest

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

NODE = "gpu-h100-590-1gpu.yml"  # any node file: the runner builds replay wrappers the role does not use
NCCL_ENV = "# Written by gpufleet (role nccl_env)\nNCCL_IB_DISABLE=1\nNCCL_SOCKET_IFNAME==lo\nNCCL_BAD=$(touch /tmp/x)\nNOT_NCCL=1\n"


def write_exe(path, text):
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.chmod(path, 0o755)


@pytest.fixture(name="site")
def site_fixture(tmp_path):
    root = tmp_path / "site"
    root.mkdir()
    paths = {"root": str(root)}
    for name, line in (("mpirun4", "mpirun (Open MPI) 4.1.4"), ("mpirun5", "mpirun (Open MPI) 5.0.3"),
                       ("mpich", "HYDRA build details:")):
        paths[name] = str(root / name)
        write_exe(paths[name], "#!/bin/sh\necho '%s'\necho\necho 'Report bugs to http://www.open-mpi.org/community/help/'\n" % line)
    short = socket.gethostname().split(".")[0]
    paths["short"] = short
    paths["srun"] = str(root / "srun")
    write_exe(paths["srun"], "#!/bin/sh\necho 'slurm 23.11.4'\n")
    paths["sinfo_in"] = str(root / "sinfo-in")
    write_exe(paths["sinfo_in"], "#!/bin/sh\nprintf 'node-a\\n%s\\nnode-b\\n'\n" % short)
    paths["sinfo_out"] = str(root / "sinfo-out")
    write_exe(paths["sinfo_out"], "#!/bin/sh\nprintf 'node-a\\nnode-b\\n'\n")
    key = str(root / "host_ed25519")
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "test-host", "-f", key], check=True)
    paths["host_key"] = key + ".pub"
    with open(paths["host_key"], "r", encoding="utf-8") as handle:
        paths["host_key_line"] = " ".join(handle.read().split()[:2])
    paths["env_file"] = str(root / "nccl.env")
    with open(paths["env_file"], "w", encoding="utf-8") as handle:
        handle.write(NCCL_ENV)
    return paths


def host(node_file, site, name, **extra):
    values = {
        "mpi_fabric_user": "root",
        "mpi_fabric_ssh_dir": site["root"] + "/" + name + "/ssh",
        "mpi_fabric_authorized_keys_file": site["root"] + "/authorized_keys",
        "mpi_fabric_host_key_file": site["host_key"],
        "mpi_fabric_prefix": site["root"] + "/" + name + "/mpi",
        # the install manifest goes under the test's root, never into this machine's /var/lib
        "mpi_fabric_manifest_dir": site["root"] + "/" + name + "/installed.d",
        # the fleet's key pair is made on the controller: under the test's root, never in this machine's ~/.gpufleet
        "mpi_fabric_key_dir": site["root"] + "/controller-key",
        "mpi_fabric_env_file": site["env_file"],
        "mpi_fabric_mpirun_path": site["mpirun4"],
        "mpi_fabric_sinfo_path": site["sinfo_out"],
        "mpi_fabric_srun_path": site["srun"],
        "gpufleet_nccl_env": {"NCCL_SOCKET_IFNAME": "=lo", "NCCL_IB_DISABLE": "1"},
        "gpufleet_gpu": {"gpu_count": 8},
    }
    values.update(extra)
    return {"node_file": node_file(NODE), "vars": values}


TASKS = [
    {"name": "Wire", "ansible.builtin.include_role": {"name": "gpufleet.acceptance.mpi_fabric"}},
    {"name": "Keep", "ansible.builtin.set_fact": {"dumped": {"launcher": "{{ gpufleet_launcher | default(None) }}"}}},
]


def agent(site, name):
    ssh = site["root"] + "/" + name + "/ssh"
    return ("ssh -i %s/gpufleet_ed25519 -o UserKnownHostsFile=%s/gpufleet_known_hosts -o StrictHostKeyChecking=yes -o BatchMode=yes "
            "-o IdentitiesOnly=yes" % (ssh, ssh))


def read(path):
    with open(path, "r", encoding="utf-8") as handle:
        return handle.read()


def test_openmpi4_two_nodes(tmp_path, node_file, site, run_playbook):
    hosts = {"n1": host(node_file, site, "n1"), "n2": host(node_file, site, "n2", gpufleet_gpu={"gpu_count": 4})}
    run = run_playbook(tmp_path / "run", hosts, TASKS)
    assert run.rc == 0, run.stdout + run.stderr
    launcher = run.results["n1"]["launcher"]
    prefix = site["root"] + "/n1/mpi"
    assert launcher["kind"] == "mpirun" and launcher["openmpi_major"] == 4 and launcher["ranks"] == 12
    assert launcher["hostfile"] == prefix + "/hostfile" and launcher["env_file"] == site["env_file"]
    # each node's cluster address by inventory name (the pair search's -H uses them): lo's 127.0.0.1 here
    assert launcher["addresses"] == {"n1": "127.0.0.1", "n2": "127.0.0.1"}
    # the NCCL_* lines of the env file, in file order; the $(...) line and the non-NCCL line are not forwarded
    assert launcher["argv_prefix"] == [
        site["mpirun4"], "--allow-run-as-root", "--hostfile", prefix + "/hostfile",
        "--mca", "plm_rsh_agent", agent(site, "n1"),
        "--mca", "oob_tcp_if_include", "lo", "--mca", "btl_tcp_if_include", "lo",
        "-x", "LD_LIBRARY_PATH", "-x", "PATH", "-x", "NCCL_IB_DISABLE=1", "-x", "NCCL_SOCKET_IFNAME==lo"]
    # slots: GPUs per node from the facts, one line per node in play order
    assert read(prefix + "/hostfile").splitlines()[1:] == ["127.0.0.1 slots=8", "127.0.0.1 slots=4"]
    assert read(site["root"] + "/n1/ssh/gpufleet_known_hosts").splitlines()[1:] == ["127.0.0.1 " + site["host_key_line"]] * 2
    # one key pair, the same on both nodes, authorized once
    pub1, pub2 = read(site["root"] + "/n1/ssh/gpufleet_ed25519.pub"), read(site["root"] + "/n2/ssh/gpufleet_ed25519.pub")
    assert pub1 == pub2 and pub1.startswith("ssh-ed25519 ")
    assert read(site["root"] + "/authorized_keys").splitlines() == [pub1.strip()]
    assert oct(os.stat(site["root"] + "/n2/ssh/gpufleet_ed25519").st_mode & 0o777) == "0o600"
    # the script runs exactly that argv, then its own arguments (as sh splits its exec line)
    exec_line = [line for line in read(prefix + "/gpufleet-launch").splitlines() if line.startswith("exec ")]
    assert shlex.split(exec_line[0]) == ["exec"] + launcher["argv_prefix"] + ["$@"]
    assert os.access(prefix + "/gpufleet-launch", os.X_OK)
    # the launcher reaches the benchmark phase without a fact cache: the install manifest on the node holds it, program included
    assert launcher["program"] == site["mpirun4"]
    with open(site["root"] + "/n1/installed.d/mpi_fabric.json", encoding="utf-8") as handle:
        assert json.load(handle) == {"role": "gpufleet.acceptance.mpi_fabric", "launcher": launcher}

    again = run_playbook(tmp_path / "again", hosts, TASKS)
    assert again.rc == 0, again.stdout + again.stderr
    # hosts finish in either order under forks
    assert sorted(line for line in again.stdout.splitlines() if line.startswith("changed:")) == ["changed: [n1]", "changed: [n2]"]  # the dump only
    assert read(site["root"] + "/n1/ssh/gpufleet_ed25519.pub") == pub1


def test_openmpi5_oversubscribe_and_slots_override(tmp_path, node_file, site, run_playbook):
    hosts = {"n1": host(node_file, site, "n1", mpi_fabric_mpirun_path=site["mpirun5"], mpi_fabric_oversubscribe=True, mpi_fabric_slots=2,
                        mpi_fabric_if_include="127.0.0.0/8,lo")}
    run = run_playbook(tmp_path / "run", hosts, TASKS)
    assert run.rc == 0, run.stdout + run.stderr
    launcher = run.results["n1"]["launcher"]
    prefix = site["root"] + "/n1/mpi"
    assert launcher["openmpi_major"] == 5 and launcher["ranks"] == 2
    assert launcher["argv_prefix"][:12] == [
        site["mpirun5"], "--allow-run-as-root", "--hostfile", prefix + "/hostfile", "--map-by", ":OVERSUBSCRIBE",
        "--prtemca", "plm_ssh_agent", agent(site, "n1"), "--prtemca", "oob_tcp_if_include", "127.0.0.0/8,lo"]
    assert launcher["argv_prefix"][12:15] == ["--mca", "btl_tcp_if_include", "127.0.0.0/8,lo"]
    assert read(prefix + "/hostfile").splitlines()[1:] == ["127.0.0.1 slots=2"]


def test_slurm_detected_or_not(tmp_path, node_file, site, run_playbook):
    slurm = {"n1": host(node_file, site, "n1", mpi_fabric_sinfo_path=site["sinfo_in"], mpi_fabric_srun_mpi="pmix")}
    run = run_playbook(tmp_path / "run", slurm, TASKS)
    assert run.rc == 0, run.stdout + run.stderr
    launcher = run.results["n1"]["launcher"]
    assert launcher["kind"] == "srun" and launcher["hostfile"] is None
    assert launcher["argv_prefix"] == ["env", "NCCL_IB_DISABLE=1", "NCCL_SOCKET_IFNAME==lo", site["srun"], "--nodelist=" + site["short"],
                                       "--nodes=1", "--ntasks-per-node=8", "--export=ALL", "--mpi=pmix"]
    # sinfo answers, but without this node: mpirun
    other = {"n1": host(node_file, site, "n1")}
    run = run_playbook(tmp_path / "run2", other, TASKS)
    assert run.rc == 0, run.stdout + run.stderr
    assert run.results["n1"]["launcher"]["kind"] == "mpirun"


def test_preflight_refusals(tmp_path, node_file, site, run_playbook):
    hosts = {
        "noslots": host(node_file, site, "noslots", gpufleet_gpu={}),
        "nonet": host(node_file, site, "nonet", gpufleet_nccl_env={"NCCL_SOCKET_IFNAME": "^docker,lo"}),
        "noiface": host(node_file, site, "noiface", gpufleet_nccl_env={"NCCL_SOCKET_IFNAME": "=eth77"}),
        "mpich": host(node_file, site, "mpich", mpi_fabric_mpirun_path=site["mpich"]),
    }
    run = run_playbook(tmp_path / "run", hosts, TASKS)
    assert run.rc != 0
    out = " ".join(run.stdout.split())
    assert "mpi_fabric: slots unknown: no GPU count in the gpu_facts (gpufleet_gpu) of noslots; set mpi_fabric_slots." in out
    assert ("mpi_fabric: no cluster network to keep Open MPI on: run the nccl_env role first (gpufleet_nccl_env.NCCL_SOCKET_IFNAME), "
            "or set gpufleet_cluster_cidr or mpi_fabric_if_include.") in out
    assert "mpi_fabric: noiface has no IPv4 address on eth77 (interfaces: " in out
    assert "mpi_fabric: %s is not Open MPI 4 or 5 (HYDRA build details:). Install Open MPI" % site["mpich"] in out
    assert not os.path.exists(site["root"] + "/authorized_keys")


def test_argument_specs_refuse_a_bad_value_before_anything_runs(tmp_path, node_file, site, run_playbook):
    # meta/argument_specs.yml: the launcher is one of auto, mpirun, srun; slots an integer
    hosts = {"n1": host(node_file, site, "n1", mpi_fabric_launcher="pdsh", mpi_fabric_slots="eight")}
    run = run_playbook(tmp_path / "run", hosts, TASKS)
    assert run.rc != 0
    out = " ".join(run.stdout.split())
    assert "Validating arguments against arg spec 'main'" in out
    assert "mpi_fabric_launcher" in out and "auto, mpirun, srun" in out and "pdsh" in out
    assert "mpi_fabric_slots" in out
    assert not os.path.exists(site["root"] + "/authorized_keys")


def _key_pair(root, comment):
    """A real ed25519 key pair made with ssh-keygen in ``root`` (the planted one); its public line."""
    os.makedirs(root, exist_ok=True)
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", root + "/gpufleet_ed25519"], check=True)
    return " ".join(read(root + "/gpufleet_ed25519.pub").split()[:2])


def test_a_key_planted_on_one_node_is_never_authorized_elsewhere(tmp_path, node_file, site, run_playbook):
    # n1 already holds a gpufleet key pair, planted by whoever had the node (its comment even says gpufleet-mpi);
    # each node has its own authorized_keys here, as separate servers do
    planted = _key_pair(site["root"] + "/n1/ssh", "gpufleet-mpi")
    os.makedirs(site["root"] + "/n2", exist_ok=True)
    with open(site["root"] + "/n2/authorized_keys", "w", encoding="utf-8") as handle:
        handle.write("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOwnerOwnerOwnerOwnerOwnerOwnerOwnerOwnerOwn owner@laptop\n")
        handle.write(planted + " gpufleet-mpi\n")  # an earlier gpufleet line that is not this fleet's key
    hosts = {name: host(node_file, site, name, mpi_fabric_authorized_keys_file=site["root"] + "/" + name + "/authorized_keys")
             for name in ("n1", "n2")}
    run = run_playbook(tmp_path / "run", hosts, TASKS)
    assert run.rc == 0, run.stdout + run.stderr
    ours = read(site["root"] + "/controller-key/gpufleet_ed25519.pub").strip()
    assert ours.endswith(" gpufleet-mpi") and planted not in ours
    for name in ("n1", "n2"):
        # every node holds the controller's pair (n1's planted one replaced) and authorizes that key alone
        assert read(site["root"] + "/%s/ssh/gpufleet_ed25519.pub" % name).strip() == ours
        assert read(site["root"] + "/%s/ssh/gpufleet_ed25519" % name) == read(site["root"] + "/controller-key/gpufleet_ed25519")
        assert planted not in read(site["root"] + "/%s/authorized_keys" % name)
    assert read(site["root"] + "/n1/authorized_keys").splitlines() == [ours]
    # the user's own line stays
    assert read(site["root"] + "/n2/authorized_keys").splitlines() == [
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOwnerOwnerOwnerOwnerOwnerOwnerOwnerOwnerOwn owner@laptop", ours]


def _return_nodes(tmp_path):
    """playbooks/return_nodes.yml on the inventory run_playbook wrote into ``tmp_path``."""
    env = dict(os.environ)
    env.update({"ANSIBLE_CONFIG": os.path.join(REPO_ROOT, "ansible.cfg"), "ANSIBLE_COLLECTIONS_PATH": os.path.join(REPO_ROOT, "collections"),
                "ANSIBLE_NOCOLOR": "1", "ANSIBLE_LOCAL_TEMP": str(tmp_path / "ansible-local")})
    cmd = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", str(tmp_path / "inventory.yml"),
           os.path.join(REPO_ROOT, "playbooks", "return_nodes.yml")]
    return subprocess.run(cmd, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)


def test_return_nodes_leaves_nothing_of_ours(tmp_path, node_file, site, run_playbook):
    hosts = {}
    for name in ("n1", "n2"):
        base = site["root"] + "/" + name
        os.makedirs(base + "/etc", exist_ok=True)
        # what nccl_env leaves on a node: its block in nccl.conf (after a line of the owner's) and its env file
        with open(base + "/etc/nccl.conf", "w", encoding="utf-8") as handle:
            handle.write("NCCL_DEBUG=WARN\n# BEGIN gpufleet nccl_env\nNCCL_IB_DISABLE=1\n# END gpufleet nccl_env\n")
        os.makedirs(base + "/gpufleet/etc", exist_ok=True)
        with open(base + "/gpufleet/etc/nccl.env", "w", encoding="utf-8") as handle:
            handle.write("NCCL_IB_DISABLE=1\n")
        # an install prefix of nccl_tests with a build in it
        os.makedirs(base + "/gpufleet/opt/nccl-tests-2.17.1/build", exist_ok=True)
        with open(base + "/authorized_keys", "w", encoding="utf-8") as handle:
            handle.write("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOwnerOwnerOwnerOwnerOwnerOwnerOwnerOwnerOwn owner@laptop\n")
        hosts[name] = host(node_file, site, name, mpi_fabric_authorized_keys_file=base + "/authorized_keys",
                           mpi_fabric_prefix=base + "/gpufleet/mpi", mpi_fabric_manifest_dir=base + "/gpufleet/installed.d",
                           gpufleet_manifest_dir=base + "/gpufleet/installed.d", nccl_env_conf_path=base + "/etc/nccl.conf",
                           nccl_env_env_file=base + "/gpufleet/etc/nccl.env", nccl_tests_prefix=base + "/gpufleet/opt",
                           burn_in_gpu_burn_prefix=base + "/gpufleet/opt", gpufleet_become=False)
    run = run_playbook(tmp_path / "run", hosts, TASKS)
    assert run.rc == 0, run.stdout + run.stderr
    assert os.path.exists(site["root"] + "/n1/gpufleet/mpi/gpufleet-launch")
    assert os.path.exists(site["root"] + "/n1/gpufleet/installed.d/mpi_fabric.json")

    back = _return_nodes(tmp_path / "run")
    assert back.returncode == 0, back.stdout + back.stderr
    for name in ("n1", "n2"):
        base = site["root"] + "/" + name
        assert sorted(os.listdir(base + "/ssh")) == []  # key pair and known_hosts gone
        assert read(base + "/authorized_keys") == "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOwnerOwnerOwnerOwnerOwnerOwnerOwnerOwnerOwn owner@laptop\n"
        assert read(base + "/etc/nccl.conf") == "NCCL_DEBUG=WARN\n"
        # prefixes, env file, launcher, install manifest directory: the whole gpufleet tree of the node
        assert sorted(os.listdir(base)) == ["authorized_keys", "etc", "ssh"]
    assert not os.path.exists(site["root"] + "/controller-key")
    again = _return_nodes(tmp_path / "run")
    assert again.returncode == 0 and "changed=0" in again.stdout, again.stdout + again.stderr
