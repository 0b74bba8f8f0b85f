# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node-side benchmark runner (module_utils/bench_process.py) with real processes.

The commands are small Python/sh programs written here (synthetic, labelled so); the one
launcher text used is the recorded Open MPI failure tests/fixtures/nccl/gcm-openmpi-not-enough-slots-failure.txt,
printed by a fake ``mpirun`` script.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid

import pytest

from ansible_collections.gpufleet.acceptance.plugins.module_utils import bench_process
from ansible_collections.gpufleet.acceptance.plugins.module_utils.bench_process import classify, find_job_processes, kill_job, run_tagged, tag_argv

from gpufleet.results.bench import parse_nccl_run, parse_run

PY = sys.executable
SLOTS_FIXTURE = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "nccl", "gcm-openmpi-not-enough-slots-failure.txt")


def gone(pid):
    """True when ``pid`` no longer runs (a zombie waiting for a parent that does not reap it counts as gone)."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as handle:
            return handle.read().split(b") ", 1)[1][:1] == b"Z"
    except OSError:
        return True


def job():
    return "test-%s" % uuid.uuid4().hex[:12]


# A parent that starts a child, which starts a grandchild that ignores SIGTERM; each writes its pid, then all sleep.
HANG_TREE = r"""
import os, signal, subprocess, sys, time
out = sys.argv[1]
if len(sys.argv) > 2 and sys.argv[2] == "grandchild":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    open(out + ".grandchild", "w").write(str(os.getpid()))
    while True:
        time.sleep(1)
elif len(sys.argv) > 2 and sys.argv[2] == "child":
    subprocess.Popen([sys.executable, __file__, out, "grandchild"])
    open(out + ".child", "w").write(str(os.getpid()))
    while True:
        time.sleep(1)
else:
    subprocess.Popen([sys.executable, __file__, out, "child"])
    print("started", flush=True)
    while True:
        time.sleep(1)
"""


def _wait_for(path, seconds=10):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if os.path.exists(path) and open(path, encoding="utf-8").read().strip():
            return int(open(path, encoding="utf-8").read())
        time.sleep(0.05)
    raise AssertionError("%s never written" % path)


def test_hang_ends_the_whole_group_within_timeout_and_grace(tmp_path):
    script = tmp_path / "tree.py"
    script.write_text(HANG_TREE)
    out = str(tmp_path / "pids")
    timeout, grace = 3.0, 1.0
    started = time.monotonic()
    result = run_tagged([PY, str(script), out], job(), timeout=timeout, grace=grace)
    elapsed = time.monotonic() - started
    assert result["outcome"] == "hang"
    # SIGTERM ended parent and child; the grandchild ignores it and needed SIGKILL after the grace
    assert result["signals"] == ["SIGTERM", "SIGKILL"]
    assert result["reason"] == "no exit within the 3.0s timeout; process group ended with SIGTERM, then SIGKILL"
    assert result["rc"] == -signal.SIGTERM
    assert timeout <= result["duration_s"] and elapsed < timeout + grace + 3, (elapsed, result["duration_s"])
    assert result["stdout"] == "started\n"
    child, grandchild = _wait_for(out + ".child"), _wait_for(out + ".grandchild")
    assert gone(child) and gone(grandchild)
    assert find_job_processes(result["job_id"]) == []


def test_the_job_id_reaches_every_descendant_and_kill_job_ends_processes_outside_the_group(tmp_path):
    """A process that left the runner's group (a daemon, a rank under a remote launcher) is found by its tag."""
    script = tmp_path / "tree.py"
    script.write_text(HANG_TREE)
    out = str(tmp_path / "pids")
    job_id = job()
    env = dict(os.environ, GPUFLEET_JOB_ID=job_id)
    with subprocess.Popen([PY, str(script), out], env=env, stdout=subprocess.DEVNULL, start_new_session=True) as proc:
        pids = {proc.pid, _wait_for(out + ".child"), _wait_for(out + ".grandchild")}
        assert {item["pid"] for item in find_job_processes(job_id)} == pids
        assert find_job_processes(job()) == []  # another job's id finds none of them
        checked = kill_job(job_id, grace=0.5, check_mode=True)
        assert {item["pid"] for item in checked["found"]} == pids and all(gone(pid) is False for pid in pids)
        outcome = kill_job(job_id, grace=0.5)
        proc.wait(timeout=5)
    assert outcome["remaining"] == []
    by_pid = {item["pid"]: item["signal"] for item in outcome["found"]}
    assert set(by_pid) == pids
    assert by_pid[_wait_for(out + ".grandchild")] == "SIGKILL"  # it ignores SIGTERM
    assert by_pid[proc.pid] == "SIGTERM"
    assert all(gone(pid) for pid in pids)


def test_kill_job_with_a_node_ends_that_nodes_processes_of_the_job_only(tmp_path):
    """A second attempt of a job after a lost connection ends what the first left on its node (bench_run
    ``end_earlier``): processes tagged with the job id and GPUFLEET_NODE=a. The job's other end on node b (an iperf3
    server), which shares this /proc as the SSH test fleet's hosts do, stays; so does a process of node a without it."""
    job_id = job()
    sleeper = [PY, "-c", "import time; time.sleep(60)"]
    envs = {"a": dict(os.environ, GPUFLEET_JOB_ID=job_id, GPUFLEET_NODE="a"),
            "b": dict(os.environ, GPUFLEET_JOB_ID=job_id, GPUFLEET_NODE="b"),
            "untagged": dict(os.environ, GPUFLEET_NODE="a")}
    procs = {name: subprocess.Popen(sleeper, env=env, start_new_session=True)  # pylint: disable=consider-using-with
             for name, env in envs.items()}
    try:
        assert [item["pid"] for item in find_job_processes(job_id, node="a")] == [procs["a"].pid]
        outcome = kill_job(job_id, grace=0.5, node="a")
        assert [(item["pid"], item["signal"]) for item in outcome["found"]] == [(procs["a"].pid, "SIGTERM")]
        assert outcome["remaining"] == []
        assert procs["a"].wait(timeout=5) == -signal.SIGTERM
        assert procs["b"].poll() is None and procs["untagged"].poll() is None
    finally:
        for proc in procs.values():
            proc.kill()
            proc.wait()


def test_missing_binary_by_path_and_by_name():
    result = run_tagged(["/nonexistent/gpufleet/all_reduce_perf", "-b", "8G"], job())
    assert result["outcome"] == "missing_binary"
    assert result["reason"] == "/nonexistent/gpufleet/all_reduce_perf: not found (or not executable) on the node"
    assert result["rc"] is None and result["pgid"] is None
    result = run_tagged(["gpufleet-no-such-tool-%s" % uuid.uuid4().hex[:6]], job())
    assert result["outcome"] == "missing_binary"


def test_crash_by_signal():
    result = run_tagged([PY, "-c", "import os, signal; print('row 1', flush=True); os.kill(os.getpid(), signal.SIGSEGV)"], job(), timeout=30)
    assert result["rc"] == -11
    assert result["outcome"] == "crash"
    assert result["reason"] == "killed by SIGSEGV"
    assert result["stdout"] == "row 1\n"


def test_launcher_error_from_the_recorded_open_mpi_text(tmp_path):
    """A fake ``mpirun`` (synthetic script) that prints the RECORDED Open MPI "not enough slots" failure and exits 1."""
    fake = tmp_path / "mpirun"
    fake.write_text("#!/bin/sh\necho \"job=$GPUFLEET_JOB_ID args=$*\"\ncat '%s' >&2\nexit 1\n" % os.path.abspath(SLOTS_FIXTURE))
    fake.chmod(0o755)
    job_id = job()
    result = run_tagged([str(fake), "-np", "16", "all_reduce_perf", ":", "-np", "1", "other"], job_id, timeout=30)
    assert result["outcome"] == "launcher_error"
    assert result["reason"] == "There are not enough slots available in the system to satisfy the 16"
    assert result["rc"] == 1
    # -x GPUFLEET_JOB_ID forwarded for each app context, and the tag is in the launcher's environment
    assert result["cmd"] == [str(fake), "-x", "GPUFLEET_JOB_ID", "-np", "16", "all_reduce_perf", ":", "-x", "GPUFLEET_JOB_ID", "-np", "1", "other"]
    assert result["stdout"] == "job=%s args=-x GPUFLEET_JOB_ID -np 16 all_reduce_perf : -x GPUFLEET_JOB_ID -np 1 other\n" % job_id


def test_plain_failure_and_environment():
    result = run_tagged([PY, "-c", "import os, sys; print(os.environ['NCCL_ALGO']); sys.stderr.write('first\\nboom\\n'); sys.exit(3)"], job(),
                        env={"NCCL_ALGO": "Ring"}, timeout=30)
    assert result["stdout"] == "Ring\n"
    assert (result["outcome"], result["reason"], result["rc"]) == ("failed", "exit status 3: boom", 3)


def test_ok_ends_what_it_left_in_its_group(tmp_path):
    pid_file = tmp_path / "bg.pid"
    result = run_tagged(["/bin/sh", "-c", "sleep 60 & echo $! > '%s'; echo done" % pid_file], job(), timeout=30, grace=2)
    assert result["outcome"] == "ok" and result["rc"] == 0 and result["stdout"] == "done\n"
    assert result["signals"] == ["SIGTERM"]
    assert result["reason"] == "exited 0; processes it left in its group ended with SIGTERM"
    assert gone(int(pid_file.read_text()))


def test_output_cap_keeps_head_and_tail():
    # 20000 numbered lines of 10 bytes: "line 00000\n" ... ; cap 4096 keeps 2048 bytes at each end
    program = "import sys\nfor i in range(20000):\n    sys.stdout.write('line %05d\\n' % i)\n"
    result = run_tagged([PY, "-c", program], job(), timeout=30, max_output=4096)
    total = 20000 * 11
    assert result["outcome"] == "ok"
    assert result["stdout_dropped"] == total - 4096
    assert result["stdout"].startswith("line 00000\nline 00001\n")
    assert result["stdout"].endswith("line 19998\nline 19999\n")
    assert "[gpufleet: %d bytes of output dropped here (output cap 4096 bytes)]" % (total - 4096) in result["stdout"]
    assert len(result["stdout"]) < 4096 + 200


def test_bad_job_id_is_refused():
    with pytest.raises(ValueError):
        run_tagged(["true"], "a b; rm -rf /")


@pytest.mark.parametrize("rc,stdout,stderr,expected", [
    (137, "", "", ("crash", "exit status 137 (128 + SIGKILL)")),
    (-9, "", "", ("crash", "killed by SIGKILL")),
    (1, "", "mpirun noticed that process rank 1 with PID 0 on node gf1h2 exited on signal 9 (Killed).",
     ("crash", "mpirun noticed that process rank 1 with PID 0 on node gf1h2 exited on signal 9 (Killed).")),
    (127, "", "sh: 1: all_reduce_perf: not found", ("missing_binary", "exit status 127: sh: 1: all_reduce_perf: not found")),
    (255, "", "ssh: connect to host 198.18.1.4 port 22: Connection refused\nORTE was unable to reliably start one or more daemons.",
     ("launcher_error", "ssh: connect to host 198.18.1.4 port 22: Connection refused")),
    (2, "", "", ("failed", "exit status 2")),
    (0, "anything", "", ("ok", "")),
])
def test_classify(rc, stdout, stderr, expected):
    assert classify(rc, stdout, stderr) == expected


def test_tag_argv_leaves_other_commands_alone():
    assert tag_argv(["srun", "-N", "2", "all_reduce_perf"]) == ["srun", "-N", "2", "all_reduce_perf"]
    assert tag_argv(["/usr/bin/mpiexec", "-n", "2", "x"])[:3] == ["/usr/bin/mpiexec", "-x", bench_process.JOB_ENV]


def test_tag_argv_forwards_the_env_names_to_every_app_context():
    argv = ["mpirun", "-np", "1", "a", ":", "-np", "1", "b"]
    exports = ["-x", bench_process.JOB_ENV, "-x", "NCCL_ALGO", "-x", "NCCL_DEBUG"]
    assert tag_argv(argv, forward=["NCCL_ALGO", "NCCL_DEBUG"]) == ["mpirun"] + exports + ["-np", "1", "a", ":"] + exports + ["-np", "1", "b"]
    # the tag is not repeated; srun is left alone
    assert tag_argv(["mpirun", "x"], forward=[bench_process.JOB_ENV]) == ["mpirun", "-x", bench_process.JOB_ENV, "x"]
    assert tag_argv(["srun", "x"], forward=["NCCL_DEBUG"]) == ["srun", "x"]


# The benchmark starts a child in a new session (setsid: outside the runner's process group) that keeps
# stdout and stderr open and sleeps; the benchmark itself then hangs (``hang``) or exits at once (``exit``).
SESSION_ESCAPE = r"""
import os, subprocess, sys, time
out, mode = sys.argv[1], sys.argv[2]
child = subprocess.Popen([sys.executable, "-c", "import time\nwhile True: time.sleep(1)"], start_new_session=True)
open(out, "w").write(str(child.pid))
print("started", flush=True)
if mode == "hang":
    while True:
        time.sleep(1)
"""


def _run_bounded(seconds, *args, **kwargs):
    """run_tagged in a thread, so that a runner that never returns fails the test instead of hanging it."""
    box = {}
    worker = threading.Thread(target=lambda: box.update(result=run_tagged(*args, **kwargs)), daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), "run_tagged did not return within %ss" % seconds
    return box["result"]


@pytest.mark.parametrize("mode", ["hang", "exit"])
def test_a_session_escaped_child_holding_the_pipes_cannot_stall_the_runner(tmp_path, mode):
    script = tmp_path / "escape.py"
    script.write_text(SESSION_ESCAPE)
    pid_file = str(tmp_path / "escaped.pid")
    timeout, grace = 2.0, 1.0
    started = time.monotonic()
    result = _run_bounded(40, [PY, str(script), pid_file, mode], job(), timeout=timeout, grace=grace)
    elapsed = time.monotonic() - started
    escaped = _wait_for(pid_file)
    try:
        assert result["stdout"] == "started\n"
        assert result["outcome"] == ("hang" if mode == "hang" else "ok")
        # the escaped child held the pipes: it is found through them and ended, and said so
        assert [item["pid"] for item in result["escaped"]] == [escaped]
        assert result["escaped"][0]["found"] == "pipes"
        assert gone(escaped)
        assert "escaped its process group holding the output pipes" in result["reason"]
        # bounded: the timeout (when it hung), the grace, then at most one more grace for the escaped child
        assert elapsed < (timeout if mode == "hang" else 0) + 2 * grace + 8, elapsed
    finally:
        if not gone(escaped):
            os.kill(escaped, signal.SIGKILL)


# The benchmark starts a child in a new session with its stdin, stdout and stderr on /dev/null (``setsid sleep 600
# </dev/null >/dev/null 2>&1 &``): outside the group and holding no pipe, only its environment (the job's tag) says
# whose it is. ``both`` starts a second one that keeps the output pipes. Then the benchmark exits 0 at once.
QUIET_ESCAPE = r"""
import subprocess, sys
out, mode = sys.argv[1], sys.argv[2]
sleeper = [sys.executable, "-c", "import time; time.sleep(600)"]
quiet = subprocess.Popen(sleeper, start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
holder = subprocess.Popen(sleeper, start_new_session=True) if mode == "both" else None
open(out, "w").write("%d %d" % (quiet.pid, holder.pid if holder else 0))
print("started", flush=True)
"""
SLEEPER_CMDLINE = "%s -c import time; time.sleep(600)" % PY


def _sleeper(job_id):
    """A process of its own session tagged ``job_id``, started here (not by the run), stdio on /dev/null."""
    return subprocess.Popen([PY, "-c", "import time; time.sleep(600)"], env=dict(os.environ, GPUFLEET_JOB_ID=job_id),
                            start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)


@pytest.mark.parametrize("mode", ["quiet", "both"])
def test_a_session_escaped_child_without_the_pipes_is_found_by_its_tag(tmp_path, mode):
    script = tmp_path / "quiet.py"
    script.write_text(QUIET_ESCAPE)
    pid_file = str(tmp_path / "escaped.pids")
    job_id = job()
    # another job's process, and one of this job id that this run did not start (the caller's): both untouched
    bystanders = [_sleeper(job()), _sleeper(job_id)]
    started = time.monotonic()
    result = _run_bounded(40, [PY, str(script), pid_file, mode], job_id, timeout=30, grace=1.0)
    elapsed = time.monotonic() - started
    quiet, holder = (int(pid) for pid in open(pid_file, encoding="utf-8").read().split())
    try:
        assert (result["outcome"], result["rc"], result["stdout"], result["signals"]) == ("ok", 0, "started\n", [])
        tagged = {"pid": quiet, "cmdline": SLEEPER_CMDLINE, "found": "tag"}
        if mode == "quiet":
            assert result["escaped"] == [tagged]
            assert result["reason"] == ("1 process(es) that escaped its process group still tagged with its job id "
                                        "(pid %d) ended with SIGTERM" % quiet)
        else:
            assert result["escaped"] == [{"pid": holder, "cmdline": SLEEPER_CMDLINE, "found": "pipes"}, tagged]
            assert result["reason"] == ("2 process(es) that escaped its process group holding the output pipes "
                                        "(pid %d) or still tagged with its job id (pid %d) ended with SIGTERM"
                                        % (holder, quiet))
        # ended (a zombie until its reaper collects it counts), each once
        assert gone(quiet) and (holder == 0 or gone(holder))
        assert all(item.poll() is None and not gone(item.pid) for item in bystanders)
        # bounded: the group (gone at once), 2 s for the last output, one grace for the escaped
        assert elapsed < 2 * 1.0 + 8, elapsed
    finally:
        for pid in (quiet, holder):
            if pid and not gone(pid):
                os.kill(pid, signal.SIGKILL)
        for item in bystanders:
            item.kill()
            item.wait(timeout=10)


# ---------------------------------------------------------------------------------------
# nccl-tests' JSON document (-J): asked where the binary's -h lists it, read back, else the text
# ---------------------------------------------------------------------------------------
STANDIN = os.path.join(os.path.dirname(__file__), "..", "..", "..", "standin", "all_reduce_perf_standin.py")
RECORDED_TABLE = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "nccl",
                              "h100-8gpu-1node-nvls-allreduce-128M-4G-issue290.txt")
# nccl-tests 2.17.3's -J usage line (src/common.cu); 2.17.1 printed the same usage without it
J_USAGE_LINE = ("[-J,--output_file <file> write output to filepath, if accessible. Infer type from suffix (only json "
                "supported presently.)] \n\t")
# TEST DOUBLE of an nccl-tests binary (synthetic): -h prints $FAKE_USAGE; a run does what $FAKE_MODE says with the
# -J file, then prints the RECORDED table $FAKE_TABLE
FAKE_PERF = r"""
import os, sys
args = sys.argv[1:]
if "-h" in args:
    sys.stdout.write(open(os.environ["FAKE_USAGE"]).read())
    sys.exit(0)
mode = os.environ.get("FAKE_MODE", "")
path = args[args.index("-J") + 1] if "-J" in args else None
if mode == "skip":
    print("# skipping json output; %s not accessible" % path)
if mode == "cut":
    open(path, "w").write('{"version":1,"start_time":"2026-01-01 00:00:00","results":[')
if mode == "big":
    open(path, "w").write('{"version":1,"pad":"%s"}' % ("x" * 5000))
sys.stdout.write(open(os.environ["FAKE_TABLE"]).read())
"""


def usage(with_json):
    """all_reduce_perf's usage text as the stand-in (2.17.3) prints it, or as 2.17.1 printed it: without the -J line."""
    done = subprocess.run([PY, STANDIN, "-h"], capture_output=True, text=True, timeout=60, check=True)
    assert J_USAGE_LINE in done.stdout
    return done.stdout if with_json else done.stdout.replace(J_USAGE_LINE, "")


def fake_perf(tmp_path, with_json):
    """An executable named all_reduce_perf (FAKE_PERF) and the env it reads."""
    binary = tmp_path / "all_reduce_perf"
    binary.write_text("#!%s\n%s" % (PY, FAKE_PERF))
    binary.chmod(0o755)
    usage_file = tmp_path / ("usage-%s.txt" % with_json)
    usage_file.write_text(usage(with_json))
    return str(binary), {"FAKE_USAGE": str(usage_file), "FAKE_TABLE": os.path.abspath(RECORDED_TABLE)}


def standin_binary(tmp_path):
    """The all_reduce_perf stand-in behind an executable named all_reduce_perf, as a node has it."""
    binary = tmp_path / "all_reduce_perf"
    binary.write_text("#!/bin/sh\nexec %s %s \"$@\"\n" % (PY, os.path.abspath(STANDIN)))
    binary.chmod(0o755)
    return str(binary)


def test_json_document_asked_where_the_help_lists_it_and_the_probe_kept(tmp_path):
    binary = standin_binary(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    argv = [binary, "-b", "64K", "-e", "128K", "-f", "2", "-n", "2", "-w", "0", "-d", "int32"]
    result = bench_process.run_with_json(argv, job(), binary, str(work), timeout=120)
    path = str(work / "nccl-tests.json")
    assert result["outcome"] == "ok", result["stderr"]
    assert result["cmd"] == [binary, "-J", path] + argv[1:]  # right after the binary
    assert result["stdout"].startswith("# Writing JSON output to %s\n" % path)
    info = result["nccl_json"]
    assert (info["supported"], info["probe"], info["reason"], info["path"]) == (True, "probed", "", path)
    doc = json.loads(info["document"])
    assert [row["size"] for row in doc["results"]] == [65536, 131072] and doc["results"][0]["type"] == "int32"
    # rank 0's environment comes back as its names only; the file is gone
    assert "PATH" in doc["env"] and "GPUFLEET_JOB_ID" in doc["env"] and not any("=" in item for item in doc["env"])
    assert not os.path.exists(path)

    cached = {"identity": info["identity"], "supported": True}
    again = bench_process.run_with_json(argv, job(), binary, str(work), cached=cached, timeout=120)
    assert again["nccl_json"]["probe"] == "cached" and again["nccl_json"]["document"] is not None
    # the binary changed (another build at the same path): the answer is not trusted, the probe runs again
    with open(binary, "a", encoding="utf-8") as handle:
        handle.write("# rebuilt\n")
    changed = bench_process.json_support(binary, job(), cached=cached)
    assert changed["probe"] == "probed" and changed["identity"] != info["identity"] and changed["supported"] is True


def test_a_binary_whose_help_lacks_json_runs_without_it_and_is_read_from_text(tmp_path):
    binary, env = fake_perf(tmp_path, with_json=False)
    result = bench_process.run_with_json([binary, "-b", "128M", "-e", "4G"], job(), binary, str(tmp_path), env=env,
                                         timeout=60)
    assert result["cmd"] == [binary, "-b", "128M", "-e", "4G"] and result["outcome"] == "ok"
    info = result["nccl_json"]
    reason = "%s -h lists no -J,--output_file (nccl-tests before 2.17.3)" % binary
    assert (info["supported"], info["probe"], info["path"], info["document"]) == (False, "probed", None, None)
    assert info["reason"] == reason
    parsed, error = parse_nccl_run(result["stdout"], info)
    assert error is None and (parsed["parsed_from"], parsed["json_fallback_reason"]) == ("text", reason)
    assert parsed["busbw_at_largest_size_gbs"] == 473.60  # the recording's 4 GiB row


@pytest.mark.parametrize("mode, reason", [
    ("", "no document at {path}: the run did not write one (rank 0 on another host, or it ended before it began the "
         "document)"),
    ("skip", "no document at {path}: # skipping json output; {path} not accessible"),
    ("cut", "nccl-tests.json is not one JSON document (Expecting value: line 1 column 60 (char 59)): the run did not "
            "finish writing it"),
    ("big", "the document is 5022 bytes, more than the 4096 read"),
])
def test_no_readable_document_says_why_and_the_run_is_the_same(tmp_path, mode, reason):
    binary, env = fake_perf(tmp_path, with_json=True)
    env["FAKE_MODE"] = mode
    result = bench_process.run_with_json([binary, "-b", "128M"], job(), binary, str(tmp_path), env=env, timeout=60,
                                         max_output=4096)
    path = str(tmp_path / "nccl-tests.json")
    assert result["cmd"] == [binary, "-J", path, "-b", "128M"] and result["outcome"] == "ok"
    info = result["nccl_json"]
    assert info["supported"] is True and info["document"] is None and info["reason"] == reason.format(path=path)
    parsed, _error = parse_nccl_run(result["stdout"], info)
    assert parsed["parsed_from"] == "text" and parsed["json_fallback_reason"] == info["reason"]


def test_a_probe_without_an_answer_is_bounded_and_the_run_goes_on_without_json(tmp_path):
    binary = tmp_path / "all_reduce_perf"
    binary.write_text("#!/bin/sh\n[ \"$1\" = -h ] && exec sleep 60\necho '# Avg bus bandwidth    : 1.5'\n")
    binary.chmod(0o755)
    started = time.monotonic()
    answer = bench_process.probe_json_option(str(binary), job(), timeout=1, grace=0.5)
    assert time.monotonic() - started < 1 + 2 * 0.5 + 4
    assert answer["supported"] is None
    assert answer["reason"] == ("%s -h printed no usage text (hang: no exit within the 1s timeout; process group ended "
                                "with SIGTERM)" % binary)
    result = bench_process.run_with_json([str(binary)], job(), str(binary), str(tmp_path), timeout=2)
    assert result["cmd"] == [str(binary)] and result["nccl_json"]["supported"] is None and result["outcome"] == "ok"
    assert bench_process.probe_json_option("/nonexistent/all_reduce_perf", job())["reason"] == (
        "/nonexistent/all_reduce_perf: not found (or not executable) on the node, so its -h was not asked")


# ---------------------------------------------------------------------------------------
# perftest's JSON report (--out_json): asked where its --help lists it (or the caller says so), read back as written
# ---------------------------------------------------------------------------------------
PERF_FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "perf")
# the recorded `grep cuda` lines of a --help with perftest's two --out_json usage lines before them (EDITED, SOURCES.md)
PERFTEST_HELP = os.path.join(PERF_FIXTURES, "ib_write_bw-help-out_json-and-cuda-lines-EDITED.txt")
PERFTEST_HELP_PARTIAL = os.path.join(PERF_FIXTURES, "ib_write_bw-help-grep-cuda-mlnx-ofed-5.5-PARTIAL.txt")
PERFTEST_REPORT = os.path.join(PERF_FIXTURES,
                               "SYNTHETIC-ib_write_bw-out_json-25.04-from-roce-cx7-cuda-client-181gbps.json")
PERFTEST_TEXT = os.path.join(PERF_FIXTURES, "ib_write_bw-roce-cx7-cuda-a40-16qp-rdma_cm-client-181gbps.txt")
# TEST DOUBLE of ib_write_bw (synthetic): --help prints $FAKE_HELP; a run copies the SYNTHETIC report $FAKE_REPORT to
# where --out_json_file= says (FAKE_MODE refused: perftest's connection failure, before any report; unwritable: what
# perftest says when it cannot create the file), then prints the RECORDED client text $FAKE_TEXT
FAKE_IB_WRITE_BW = r"""#!/bin/sh
[ "$1" = --help ] && exec cat "$FAKE_HELP"
report=
for arg do
    case "$arg" in --out_json_file=*) report="${arg#--out_json_file=}" ;; esac
done
case "$FAKE_MODE" in
    refused) echo "Couldn't connect to node-b:18515" >&2; exit 1 ;;
    unwritable) echo "failed to open $report" >&2 ;;
    *) [ -n "$report" ] && cp "$FAKE_REPORT" "$report" ;;
esac
exec cat "$FAKE_TEXT"
"""


def fake_ib_write_bw(tmp_path, help_file=PERFTEST_HELP, mode=""):
    binary = tmp_path / "ib_write_bw"
    binary.write_text(FAKE_IB_WRITE_BW)
    binary.chmod(0o755)
    env = {"FAKE_HELP": os.path.abspath(help_file), "FAKE_REPORT": os.path.abspath(PERFTEST_REPORT),
           "FAKE_TEXT": os.path.abspath(PERFTEST_TEXT), "FAKE_MODE": mode}
    return str(binary), env


def test_perftest_report_asked_where_its_help_lists_out_json(tmp_path):
    binary, env = fake_ib_write_bw(tmp_path)
    argv = [binary, "-d", "mlx5_1", "--report_gbits", "node-b"]
    result = bench_process.run_with_json(argv, job(), binary, str(tmp_path), env=env, timeout=60,
                                         fmt=bench_process.PERFTEST)
    path = str(tmp_path / "perftest.json")
    assert result["outcome"] == "ok", result["stderr"]
    assert result["cmd"] == [binary, "--out_json", "--out_json_file=" + path] + argv[1:]  # right after the binary
    info = result["perftest_json"]
    assert "nccl_json" not in result
    assert (info["format"], info["supported"], info["probe"], info["reason"]) == ("perftest", True, "probed", "")
    with open(PERFTEST_REPORT, "r", encoding="utf-8") as handle:
        assert info["document"] == handle.read()  # as perftest wrote it: the controller reads it
    assert not os.path.exists(path)
    parsed, error = parse_run("ib-bw", result["stdout"], info)
    assert error is None and parsed["parsed_from"] == "json" and parsed["results"][0]["bw_avg_gbps"] == 181.46


def test_perftest_answer_given_by_the_caller_is_not_probed(tmp_path):
    # the play's own --help probe said: no --out_json; the node starts no probe (the help file is not even there)
    binary, env = fake_ib_write_bw(tmp_path, help_file=str(tmp_path / "absent"))
    result = bench_process.run_with_json([binary, "-d", "mlx5_1", "node-b"], job(), binary, str(tmp_path), env=env,
                                         timeout=60, fmt=bench_process.PERFTEST, supported=False)
    info = result["perftest_json"]
    assert result["cmd"] == [binary, "-d", "mlx5_1", "node-b"] and result["outcome"] == "ok"
    assert (info["supported"], info["probe"], info["identity"], info["document"]) == (False, "given", None, None)
    assert info["reason"] == ("%s --help lists no --out_json (perftest before 4.5-0.11) (the caller's look at its "
                              "usage)" % binary)
    parsed, _error = parse_run("ib-bw", result["stdout"], info)
    assert (parsed["parsed_from"], parsed["json_fallback_reason"]) == ("text", info["reason"])


@pytest.mark.parametrize("mode, reason", [
    ("refused", "no document at {path}: the run did not write one (perftest writes it with its results: a run that "
                "failed or was ended before them leaves none)"),
    ("unwritable", "no document at {path}: failed to open {path}"),
])
def test_perftest_without_a_report_says_why(tmp_path, mode, reason):
    binary, env = fake_ib_write_bw(tmp_path, mode=mode)
    result = bench_process.run_with_json([binary, "node-b"], job(), binary, str(tmp_path), env=env, timeout=60,
                                         fmt=bench_process.PERFTEST, supported=True)
    path = str(tmp_path / "perftest.json")
    info = result["perftest_json"]
    assert result["cmd"] == [binary, "--out_json", "--out_json_file=" + path, "node-b"]
    assert info["probe"] == "given" and info["document"] is None and info["reason"] == reason.format(path=path)


def test_perftest_help_without_a_usage_text_is_no_answer(tmp_path):
    # the recorded help is PARTIAL (two `grep cuda` lines): no usage header, so no answer either way
    binary, env = fake_ib_write_bw(tmp_path, help_file=PERFTEST_HELP_PARTIAL)
    answer = bench_process.probe_json_option(binary, job(), env=env, fmt=bench_process.PERFTEST)
    assert (answer["supported"], answer["reason"]) == (None, "%s --help printed no usage text (ok)" % binary)
