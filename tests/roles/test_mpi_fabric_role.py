# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""roles/mpi_fabric with ansible-playbook on localhost: the launcher it generates for OpenMPI 4
and 5 and for Slurm, the NCCL variables it forwards, the fleet's key pair, its preflight refusals,
and playbooks/return_nodes.yml taking it all back.

The role wires a whole play (hostfile, known_hosts, ranks, the launcher kind are the play's). Its playbook runs:

- the fleet: n1 and n2 on Open MPI 4 (Slurm's sinfo answers there, but without this node, so mpirun), each with
  its own authorized_keys holding the owner's line, n1 with a gpufleet key pair planted by whoever had the node
  and n2 authorizing that planted key, and what nccl_env and nccl_tests leave on a node; converged twice (the
  second run changes nothing), then returned by playbooks/return_nodes.yml, then returned again on n1 alone (the
  nodes are alike once returned: one shows that a second return changes nothing). One module-scoped fixture makes
  these runs and keeps the files after each: the tests of the launcher, of the planted key and of the return read them;
- the refused play: a node without an address on its cluster network (a preflight refusal read from the node's own
  interfaces, before the key pair), and one with values meta/argument_specs.yml refuses, in one run where every
  host fails. The other preflight refusals (no GPU count, no cluster network, an mpirun that is not Open MPI) are
  evaluated in-process as below: the role's own fail tasks, the first of them met by the real run.

Open MPI 5 (oversubscribed, 2 slots, kept on 127.0.0.0/8,lo) and Slurm (srun, --mpi=pmix) change derived values
only (the version read from ``mpirun --version``, Slurm found by ``sinfo``, the argv, the slots): for those the
role's own tasks (preflight.yml, launcher.yml: its set_fact, fail, command and slurp tasks, in order, for every
host of the play) are evaluated in-process by Ansible's Templar, the command tasks running the doubles here.

TEST DOUBLES, written here: ``mpirun`` scripts printing the first line of ``mpirun --version``
as Open MPI 4.1.4 (Debian's openmpi-bin, the one installed on this machine) and Open MPI 5.0.3
print it, and as MPICH's ``mpirun`` (Hydra) prints it; ``srun``/``sinfo`` scripts answering
``--version`` and ``--noheader --Node --format=%N``. The host key is a real ed25519 key made
with ssh-keygen. The interface is ``lo`` (127.0.0.1): every host here is this machine. The
gpufleet_gpu and gpufleet_nccl_env facts are SYNTHETIC (set as variables).
The real cross-host run of a generated launcher is the Molecule scenario molecule/provision.
"""

from __future__ import annotations

import base64
import json
import os
import shlex
import socket
import subprocess
import sys

import pytest
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from ansible_output import failures  # noqa: E402  pylint: disable=import-error,wrong-import-position

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
ROLE = os.path.join(REPO_ROOT, "roles", "mpi_fabric")
HOSTFILE_TASK = "Mpi_fabric | Hostfile (cluster addresses, slots = GPUs per node)"

NODE = "gpu-h100-590-1gpu.yml"  # any node file: the runner builds replay wrappers the role does not use
NCCL_ENV = "# Written by gpufleet (role nccl_env)\nNCCL_IB_DISABLE=1\nNCCL_SOCKET_IFNAME==lo\nNCCL_BAD=$(touch /tmp/x)\nNOT_NCCL=1\n"
OWNER_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOwnerOwnerOwnerOwnerOwnerOwnerOwnerOwnerOwn owner@laptop"


def write_exe(path, text):
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.chmod(path, 0o755)


def make_site(root):
    """The doubles, a host key and the NCCL env file of one fleet under ``root``; their paths."""
    os.makedirs(root)
    paths = {"root": root}
    for name, line in (("mpirun4", "mpirun (Open MPI) 4.1.4"), ("mpirun5", "mpirun (Open MPI) 5.0.3"),
                       ("mpich", "HYDRA build details:")):
        paths[name] = os.path.join(root, name)
        write_exe(paths[name], "#!/bin/sh\necho '%s'\necho\necho 'Report bugs to http://www.open-mpi.org/community/help/'\n" % line)
    short = socket.gethostname().split(".")[0]
    paths["short"] = short
    paths["srun"] = os.path.join(root, "srun")
    write_exe(paths["srun"], "#!/bin/sh\necho 'slurm 23.11.4'\n")
    paths["sinfo_in"] = os.path.join(root, "sinfo-in")
    write_exe(paths["sinfo_in"], "#!/bin/sh\nprintf 'node-a\\n%s\\nnode-b\\n'\n" % short)
    paths["sinfo_out"] = os.path.join(root, "sinfo-out")
    write_exe(paths["sinfo_out"], "#!/bin/sh\nprintf 'node-a\\nnode-b\\n'\n")
    key = os.path.join(root, "host_ed25519")
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "test-host", "-f", key], check=True)
    paths["host_key"] = key + ".pub"
    with open(paths["host_key"], "r", encoding="utf-8") as handle:
        paths["host_key_line"] = " ".join(handle.read().split()[:2])
    paths["env_file"] = os.path.join(root, "nccl.env")
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

# Runs whose results no test reads end before the runner's dump (a copy on every host: two module runs a host).
UNREAD = TASKS + [{"name": "End before the runner's dump (no test reads this run's results)",
                   "ansible.builtin.meta": "end_play"}]


def agent(site, name):
    ssh = site["root"] + "/" + name + "/ssh"
    return ("ssh -i %s/gpufleet_ed25519 -o UserKnownHostsFile=%s/gpufleet_known_hosts -o StrictHostKeyChecking=yes -o BatchMode=yes "
            "-o IdentitiesOnly=yes" % (ssh, ssh))


def read(path):
    with open(path, "r", encoding="utf-8") as handle:
        return handle.read()


def snapshot(root):
    """``{path relative to root: (text, mode)}`` of every file under ``root``, read before a later run changes it."""
    files = {}
    for folder, _dirs, names in os.walk(root):
        for name in names:
            path = os.path.join(folder, name)
            with open(path, "r", encoding="utf-8", errors="replace") as handle:
                files[os.path.relpath(path, root)] = (handle.read(), os.stat(path).st_mode & 0o777)
    return files


def _key_pair(root, comment):
    """A real ed25519 key pair made with ssh-keygen in ``root`` (the planted one); its public line."""
    os.makedirs(root, exist_ok=True)
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", root + "/gpufleet_ed25519"],
                   check=True)
    return " ".join(read(root + "/gpufleet_ed25519.pub").split()[:2])


def _return_nodes(tmp_path, extra_args=()):
    """playbooks/return_nodes.yml on the inventory run_playbook wrote into ``tmp_path``, with ``extra_args``."""
    env = dict(os.environ)
    env.update({"ANSIBLE_CONFIG": os.path.join(REPO_ROOT, "ansible.cfg"),
                "ANSIBLE_COLLECTIONS_PATH": os.path.join(REPO_ROOT, "collections"),
                "ANSIBLE_NOCOLOR": "1", "ANSIBLE_LOCAL_TEMP": str(tmp_path / "ansible-local")})
    cmd = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", str(tmp_path / "inventory.yml"),
           os.path.join(REPO_ROOT, "playbooks", "return_nodes.yml")] + list(extra_args)
    return subprocess.run(cmd, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)


@pytest.fixture(name="fleet", scope="module")
def fleet_fixture(tmp_path_factory, node_file, run_playbook):
    """The fleet converged twice, then returned, then n1 returned again: ``{"site", "planted", "run", "again",
    "provisioned", "converged", "back", "back_again"}`` (``provisioned``/``converged``: the files after the
    first/second run)."""
    tmp_path = tmp_path_factory.mktemp("fleet")
    site = make_site(str(tmp_path / "site"))
    # n1 already holds a gpufleet key pair, planted by whoever had the node (its comment even says gpufleet-mpi);
    # each node has its own authorized_keys here, as separate servers do
    planted = _key_pair(site["root"] + "/n1/ssh", "gpufleet-mpi")
    hosts = {}
    for name in ("n1", "n2"):
        base = site["root"] + "/" + name
        os.makedirs(base + "/etc", exist_ok=True)
        with open(base + "/authorized_keys", "w", encoding="utf-8") as handle:
            handle.write(OWNER_KEY + "\n")
            if name == "n2":
                handle.write(planted + " gpufleet-mpi\n")  # an earlier gpufleet line that is not this fleet's key
        # what nccl_env leaves on a node: its block in nccl.conf (after a line of the owner's) and its env file
        with open(base + "/etc/nccl.conf", "w", encoding="utf-8") as handle:
            handle.write("NCCL_DEBUG=WARN\n# BEGIN gpufleet nccl_env\nNCCL_IB_DISABLE=1\n# END gpufleet nccl_env\n")
        os.makedirs(base + "/gpufleet/etc", exist_ok=True)
        with open(base + "/gpufleet/etc/nccl.env", "w", encoding="utf-8") as handle:
            handle.write("NCCL_IB_DISABLE=1\n")
        # an install prefix of nccl_tests with a build in it
        os.makedirs(base + "/gpufleet/opt/nccl-tests-2.17.3/build", exist_ok=True)
        hosts[name] = host(node_file, site, name, mpi_fabric_authorized_keys_file=base + "/authorized_keys",
                           mpi_fabric_prefix=base + "/gpufleet/mpi",
                           mpi_fabric_manifest_dir=base + "/gpufleet/installed.d",
                           gpufleet_manifest_dir=base + "/gpufleet/installed.d",
                           nccl_env_conf_path=base + "/etc/nccl.conf",
                           nccl_env_env_file=base + "/gpufleet/etc/nccl.env", nccl_tests_prefix=base + "/gpufleet/opt",
                           burn_in_gpu_burn_prefix=base + "/gpufleet/opt", gpufleet_become=False)
    hosts["n2"]["vars"]["gpufleet_gpu"] = {"gpu_count": 4}
    out = {"site": site, "planted": planted}
    out["run"] = run_playbook(tmp_path / "run", hosts, TASKS)
    out["provisioned"] = snapshot(site["root"])
    out["again"] = run_playbook(tmp_path / "again", hosts, UNREAD)
    out["converged"] = snapshot(site["root"])
    out["back"] = _return_nodes(tmp_path / "run")
    # a second return on one node: once returned, n1 and n2 hold the same (the owner's line, no gpufleet file)
    out["back_again"] = _return_nodes(tmp_path / "run", ["--limit", "n1"])
    return out


def test_openmpi4_two_nodes(fleet):
    site, run, again, files = fleet["site"], fleet["run"], fleet["again"], fleet["converged"]
    assert run.rc == 0, run.stdout + run.stderr
    launcher = run.results["n1"]["launcher"]
    prefix = site["root"] + "/n1/gpufleet/mpi"
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
    # the files as the second run left them (it changed none of them, asserted below)
    # slots: GPUs per node from the facts, one line per node in play order
    assert files["n1/gpufleet/mpi/hostfile"][0].splitlines()[1:] == ["127.0.0.1 slots=8", "127.0.0.1 slots=4"]
    assert files["n1/ssh/gpufleet_known_hosts"][0].splitlines()[1:] == ["127.0.0.1 " + site["host_key_line"]] * 2
    # one key pair, the same on both nodes, authorized once
    pub1, pub2 = files["n1/ssh/gpufleet_ed25519.pub"][0], files["n2/ssh/gpufleet_ed25519.pub"][0]
    assert pub1 == pub2 and pub1.startswith("ssh-ed25519 ")
    assert files["n1/authorized_keys"][0].splitlines() == [OWNER_KEY, pub1.strip()]
    assert oct(files["n2/ssh/gpufleet_ed25519"][1]) == "0o600"
    # the script runs exactly that argv, then its own arguments (as sh splits its exec line)
    script, mode = files["n1/gpufleet/mpi/gpufleet-launch"]
    exec_line = [line for line in script.splitlines() if line.startswith("exec ")]
    assert shlex.split(exec_line[0]) == ["exec"] + launcher["argv_prefix"] + ["$@"]
    assert mode & 0o111 == 0o111
    # the launcher reaches the benchmark phase without a fact cache: the install manifest on the node holds it, program included
    assert launcher["program"] == site["mpirun4"]
    manifest = json.loads(files["n1/gpufleet/installed.d/mpi_fabric.json"][0])
    assert manifest == {"role": "gpufleet.acceptance.mpi_fabric", "launcher": launcher}

    # the second converge
    assert again.rc == 0, again.stdout + again.stderr
    # hosts finish in either order under forks
    # no task changed anything (the runner's dump, which did, is not run: UNREAD)
    assert sorted(line for line in again.stdout.splitlines() if line.startswith("changed:")) == []
    assert pub1 == fleet["provisioned"]["n1/ssh/gpufleet_ed25519.pub"][0]


def test_a_key_planted_on_one_node_is_never_authorized_elsewhere(fleet):
    run, files, planted = fleet["run"], fleet["provisioned"], fleet["planted"]
    assert run.rc == 0, run.stdout + run.stderr
    ours = files["controller-key/gpufleet_ed25519.pub"][0].strip()
    assert ours.endswith(" gpufleet-mpi") and planted not in ours
    for name in ("n1", "n2"):
        # every node holds the controller's pair (n1's planted one replaced) and authorizes that key alone
        assert files["%s/ssh/gpufleet_ed25519.pub" % name][0].strip() == ours
        assert files["%s/ssh/gpufleet_ed25519" % name][0] == files["controller-key/gpufleet_ed25519"][0]
        assert planted not in files["%s/authorized_keys" % name][0]
    # the user's own line stays, beside ours; n2's planted gpufleet line is gone
    assert files["n1/authorized_keys"][0].splitlines() == [OWNER_KEY, ours]
    assert files["n2/authorized_keys"][0].splitlines() == [OWNER_KEY, ours]


def test_return_nodes_leaves_nothing_of_ours(fleet):
    site, run, back, again = fleet["site"], fleet["run"], fleet["back"], fleet["back_again"]
    assert run.rc == 0, run.stdout + run.stderr
    assert "n1/gpufleet/mpi/gpufleet-launch" in fleet["converged"]
    assert "n1/gpufleet/installed.d/mpi_fabric.json" in fleet["converged"]

    assert back.returncode == 0, back.stdout + back.stderr
    for name in ("n1", "n2"):
        base = site["root"] + "/" + name
        assert sorted(os.listdir(base + "/ssh")) == []  # key pair and known_hosts gone
        assert read(base + "/authorized_keys") == OWNER_KEY + "\n"
        assert read(base + "/etc/nccl.conf") == "NCCL_DEBUG=WARN\n"
        # prefixes, env file, launcher, install manifest directory: the whole gpufleet tree of the node
        assert sorted(os.listdir(base)) == ["authorized_keys", "etc", "ssh"]
    assert not os.path.exists(site["root"] + "/controller-key")
    assert again.returncode == 0 and "changed=0" in again.stdout, again.stdout + again.stderr


class RoleLogic:
    """The role's own tasks that compute (preflight.yml, launcher.yml: set_fact, fail, and the command and slurp
    tasks whose results they read), evaluated in-process by Ansible's Templar in the role's order, each task for
    every host still in the play before the next (as the linear strategy runs them); the other tasks (files, keys,
    setup) are not run: their facts are given."""

    KINDS = ("ansible.builtin.set_fact", "ansible.builtin.fail", "ansible.builtin.command", "ansible.builtin.slurp")

    def __init__(self):
        self.loader = DataLoader()
        self.tasks, self.hostfile_task = [], None
        for name in ("preflight.yml", "launcher.yml"):
            loaded = self.loader.load_from_file(os.path.join(ROLE, "tasks", name), trusted_as_template=True)
            self.tasks.extend(task for task in loaded if any(kind in task for kind in self.KINDS))
            hostfile = [task for task in loaded if task["name"] == HOSTFILE_TASK]
            self.hostfile_task = self.hostfile_task or (hostfile[0] if hostfile else None)
        self.defaults = self.loader.load_from_file(os.path.join(ROLE, "defaults", "main.yml"), trusted_as_template=True)

    def template(self, task, value, variables):
        """``value`` (from ``task``) templated with ``variables`` and the task's own ``vars``."""
        return Templar(loader=self.loader, variables=dict(variables, **task.get("vars", {}))).template(value)

    def runs(self, task, variables):
        """Whether ``task``'s ``when`` holds for a host with ``variables``."""
        when = task.get("when", [])
        templar = Templar(loader=self.loader, variables=dict(variables, **task.get("vars", {})))
        return all(templar.evaluate_conditional(item) for item in (when if isinstance(when, list) else [when]))

    def play(self, hosts):
        """Run the tasks for ``hosts`` ({name: variables}, role defaults first); ``{name: refusal}`` of the hosts
        a fail task removed from the play. The variables gain the facts and registered results."""
        play_hosts = list(hosts)
        for variables in hosts.values():
            variables.update(hostvars=hosts, ansible_play_hosts=play_hosts)
        refused = {}
        for task in self.tasks:
            for name in list(play_hosts):
                variables = hosts[name]
                if not self.runs(task, variables):
                    if task.get("register"):
                        variables[task["register"]] = {"skipped": True, "changed": False}
                    continue
                if "ansible.builtin.set_fact" in task:
                    variables.update({key: self.template(task, value, variables)
                                      for key, value in task["ansible.builtin.set_fact"].items() if key != "cacheable"})
                elif "ansible.builtin.fail" in task:
                    refused[name] = self.template(task, task["ansible.builtin.fail"]["msg"], variables)
                    play_hosts.remove(name)
                elif "ansible.builtin.command" in task:
                    argv = self.template(task, task["ansible.builtin.command"]["argv"], variables)
                    argv = [str(part) for part in argv]
                    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
                    variables[task["register"]] = {"rc": proc.returncode, "stdout": proc.stdout.rstrip("\n"),
                                                   "stdout_lines": proc.stdout.splitlines(), "stderr": proc.stderr}
                else:  # slurp
                    with open(self.template(task, task["ansible.builtin.slurp"]["src"], variables), "rb") as handle:
                        variables[task["register"]] = {"content": base64.b64encode(handle.read()).decode()}
        return refused

    def hostfile(self, variables):
        """The hostfile's text (the copy task's content) for a host of the play."""
        return self.template(self.hostfile_task, self.hostfile_task["ansible.builtin.copy"]["content"], variables)


def derived(site, nodes):
    """The role's derived values for ``nodes`` ({name: host variables}), every node this machine as ``setup`` and
    ``getent`` see it (SYNTHETIC facts: lo at 127.0.0.1, the short host name): ``(refused, {name: variables})``."""
    logic = RoleLogic()
    hosts = {}
    for name, values in nodes.items():
        hosts[name] = dict(logic.defaults, **values)
        hosts[name].update({
            "inventory_hostname": name, "ansible_check_mode": False,
            "ansible_facts": {"hostname": site["short"], "interfaces": ["lo"],
                              "lo": {"ipv4": {"address": "127.0.0.1"}}},
            "getent_passwd": {"root": ["x", "0", "0", "root", "/root", "/bin/sh"]},
        })
    refused = logic.play(hosts)
    for variables in hosts.values():
        variables["hostfile_text"] = logic.hostfile(variables)
    return refused, hosts


@pytest.fixture(name="flavours", scope="module")
def flavours_fixture(tmp_path_factory, node_file):
    """Open MPI 5 on one node and Slurm on two, in-process: ``{flavour: (site, refused, {name: variables})}``."""
    site = make_site(str(tmp_path_factory.mktemp("flavours") / "site"))
    openmpi5 = {"n1": host(node_file, site, "n1", mpi_fabric_mpirun_path=site["mpirun5"], mpi_fabric_oversubscribe=True,
                           mpi_fabric_slots=2, mpi_fabric_if_include="127.0.0.0/8,lo")["vars"]}
    slurm = {name: host(node_file, site, name, mpi_fabric_sinfo_path=site["sinfo_in"],
                        mpi_fabric_srun_mpi="pmix")["vars"] for name in ("n1", "n2")}
    return {"openmpi5": (site,) + derived(site, openmpi5), "slurm": (site,) + derived(site, slurm)}


def test_slurm_detected_or_not(flavours, fleet):
    site, refused, hosts = flavours["slurm"]
    assert refused == {}
    launcher = hosts["n1"]["gpufleet_launcher"]
    assert launcher["kind"] == "srun" and launcher["hostfile"] is None
    # every node of the play by its Slurm name (both are this machine here), GPUs per node as tasks
    assert launcher["argv_prefix"] == ["env", "NCCL_IB_DISABLE=1", "NCCL_SOCKET_IFNAME==lo", site["srun"],
                                       "--nodelist=%s,%s" % (site["short"], site["short"]),
                                       "--nodes=2", "--ntasks-per-node=8", "--export=ALL", "--mpi=pmix",
                                       # a node Slurm cannot give ends the run at once, in Slurm's words
                                       "--immediate=120"]
    # the fleet's playbook run: sinfo answers, but without this node: mpirun
    other = fleet["run"]
    assert other.rc == 0, other.stdout + other.stderr
    assert other.results["n1"]["launcher"]["kind"] == "mpirun"


def test_openmpi5_oversubscribe_and_slots_override(flavours):
    site, refused, hosts = flavours["openmpi5"]
    assert refused == {}
    launcher = hosts["n1"]["gpufleet_launcher"]
    prefix = site["root"] + "/n1/mpi"
    assert launcher["openmpi_major"] == 5 and launcher["ranks"] == 2
    assert launcher["argv_prefix"][:12] == [
        site["mpirun5"], "--allow-run-as-root", "--hostfile", prefix + "/hostfile", "--map-by", ":OVERSUBSCRIBE",
        "--prtemca", "plm_ssh_agent", agent(site, "n1"), "--prtemca", "oob_tcp_if_include", "127.0.0.0/8,lo"]
    assert launcher["argv_prefix"][12:15] == ["--mca", "btl_tcp_if_include", "127.0.0.0/8,lo"]
    assert hosts["n1"]["hostfile_text"].splitlines()[1:] == ["127.0.0.1 slots=2"]


@pytest.fixture(name="refused", scope="module")
def refused_fixture(tmp_path_factory, node_file, run_playbook):
    """One run where every host fails before the key pair (noiface in the preflight, badargs before it), and the
    other preflight refusals in-process (noslots, nonet: the fail task noiface meets in the run; mpich, its mpirun
    run here): ``(site, run, {host: refusal})``, each refusal's text with its whitespace folded as ``failures``
    folds it."""
    tmp_path = tmp_path_factory.mktemp("refused")
    site = make_site(str(tmp_path / "site"))
    hosts = {
        "noiface": host(node_file, site, "noiface", gpufleet_nccl_env={"NCCL_SOCKET_IFNAME": "=eth77"}),
        # meta/argument_specs.yml: the launcher is one of auto, mpirun, srun; slots an integer
        "badargs": host(node_file, site, "badargs", mpi_fabric_launcher="pdsh", mpi_fabric_slots="eight"),
    }
    run = run_playbook(tmp_path / "run", hosts, TASKS)
    computed, _hosts = derived(site, {
        "noslots": host(node_file, site, "noslots", gpufleet_gpu={})["vars"],
        "nonet": host(node_file, site, "nonet", gpufleet_nccl_env={"NCCL_SOCKET_IFNAME": "^docker,lo"})["vars"],
        "mpich": host(node_file, site, "mpich", mpi_fabric_mpirun_path=site["mpich"])["vars"],
    })
    refusals = dict(failures(run.stdout), **{name: " ".join(text.split()) for name, text in computed.items()})
    return site, run, refusals


def test_preflight_refusals(refused):
    site, run, failed = refused
    assert run.rc != 0
    assert ("mpi_fabric: slots unknown: no GPU count in the gpu_facts (gpufleet_gpu) of noslots; "
            "set mpi_fabric_slots.") in failed["noslots"]
    assert ("mpi_fabric: no cluster network to keep Open MPI on: run the nccl_env role first "
            "(gpufleet_nccl_env.NCCL_SOCKET_IFNAME), or set gpufleet_cluster_cidr or mpi_fabric_if_include."
            in failed["nonet"])
    assert "mpi_fabric: noiface has no IPv4 address on eth77 (interfaces: " in failed["noiface"]
    assert ("mpi_fabric: %s is not Open MPI 4 or 5 (HYDRA build details:). Install Open MPI" % site["mpich"]
            in failed["mpich"])
    assert not os.path.exists(site["root"] + "/authorized_keys")


def test_argument_specs_refuse_a_bad_value_before_anything_runs(refused):
    site, run, _refusals = refused
    assert run.rc != 0
    out = " ".join(run.stdout.split())
    assert "Validating arguments against arg spec 'main'" in out
    refusal = failures(run.stdout)["badargs"]
    assert "mpi_fabric_launcher" in refusal and "auto, mpirun, srun" in refusal and "pdsh" in refusal
    assert "mpi_fabric_slots" in refusal
    # badargs went no further than the validation: no task of the role ran for it
    assert not os.path.exists(site["root"] + "/badargs")
