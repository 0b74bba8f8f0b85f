# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The results directory: atomic writes, records as results arrive, a killed run resumed, schema v1."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap

import pytest

from gpufleet.results import store as results_store
from gpufleet.results.store import (SCHEMA, ResultsError, RunDir, safe_name, split_fact_results, write_bytes_atomic,
                                    write_json_atomic)

TOPO_TEXT = "\tGPU0\tGPU1\nGPU0\t X \tNV12\nGPU1\tNV12\t X \n"


def _ok(group, facts, raw=None):
    return {"changed": False, "ansible_facts": {results_store.FACT_GROUPS[group]: facts}, "raw": raw or {}}


def _tool(cmd, stdout="", rc=0, stderr="", error=None, duration=0.25):
    return {"cmd": cmd, "rc": rc, "stdout": stdout, "stderr": stderr, "duration_s": duration, "error": error}


def _healthy_results():
    return {
        "topology": _ok("topology", {"summary": {"gpu_count": 2}}, raw={"topo_m": _tool(["nvidia-smi", "topo", "-m"], TOPO_TEXT)}),
        "gpu": _ok("gpu", {"gpu_count": 2}),
        "nic": _ok("nic", {"interfaces": []}, raw={
            "ethtool": {"eth0": _tool(["ethtool", "eth0"], "Speed: 100000Mb/s\n"), "../evil": _tool(["ethtool", "x"], "x\n")},
            "ibstat": _tool(["ibstat"], rc=None, error="not_found", duration=0.0),
            "sysfs": {"net": [{"name": "eth0"}]},
        }),
        "host": _ok("host", {"summary": []}),
    }


def test_atomic_write_replaces_whole_or_not_at_all(tmp_path, monkeypatch):
    target = tmp_path / "doc.json"
    write_json_atomic(str(target), {"v": 1})
    assert json.loads(target.read_text()) == {"v": 1}

    def crash(src, dst):
        raise OSError("disk gone")

    monkeypatch.setattr(results_store.os, "replace", crash)
    with pytest.raises(OSError):
        write_json_atomic(str(target), {"v": 2})
    # the old document is intact and no temporary file is left behind
    assert json.loads(target.read_text()) == {"v": 1}
    assert sorted(os.listdir(tmp_path)) == ["doc.json"]


def test_safe_name_keeps_files_inside_their_directory():
    assert safe_name("node-a.example") == "node-a.example"
    evil = safe_name("../../etc/passwd")
    assert "/" not in evil and not evil.startswith(".")
    # two names that clean to the same text still get different files
    assert safe_name("/proc/sys/x") != safe_name("_proc_sys_x")
    assert safe_name("") == "unnamed-da39a3ee"


def test_split_fact_results():
    results = _healthy_results()
    results["gpu"] = {"failed": True, "msg": "node: `nvidia-smi -q -x` exited 9:\n NVIDIA-SMI has failed"}
    results["host"] = {"skipped": True}
    facts, errors, unreachable = split_fact_results(results)
    assert unreachable is None
    assert facts["topology"] == {"summary": {"gpu_count": 2}} and facts["gpu"] is None and facts["host"] is None
    assert errors == {"gpu": "node: `nvidia-smi -q -x` exited 9: NVIDIA-SMI has failed"}

    gone = {"topology": {"unreachable": True, "msg": "Failed to connect to the host via ssh: port 1: Connection refused"},
            "gpu": {"skipped": True}, "nic": {"skipped": True}, "host": {"skipped": True}}
    facts, errors, unreachable = split_fact_results(gone)
    assert unreachable == "Failed to connect to the host via ssh: port 1: Connection refused"
    assert errors == {} and set(facts.values()) == {None}

    # answered one task, then the connection dropped: reachable, the rest are fact errors
    dropped = dict(_healthy_results(), nic={"unreachable": True, "msg": "timed out"}, host={"unreachable": True, "msg": "timed out"})
    facts, errors, unreachable = split_fact_results(dropped)
    assert unreachable is None
    assert errors == {"nic": "host became unreachable: timed out", "host": "host became unreachable: timed out"}


def test_record_facts_writes_host_and_raw(tmp_path):
    run = RunDir.create(str(tmp_path / "run"), inventory=["inv.yml"], playbook="validate_cluster.yml", hosts=["node-a"])
    claim = {"gpu_count": 2, "interconnect": "nvswitch"}
    record = run.record_facts("node-a", _healthy_results(), claim=claim, settings={"gpufleet_nccl_env": {"NCCL_IB_HCA": "mlx5_0"}})
    on_disk = json.loads((tmp_path / "run" / "hosts" / "node-a.json").read_text())
    assert on_disk == record
    assert on_disk["schema"] == SCHEMA and on_disk["host"] == "node-a"
    assert on_disk["phases"]["facts"]["complete"] is True and on_disk["unreachable"] is None
    assert on_disk["claim"] == claim and on_disk["settings"] == {"gpufleet_nccl_env": {"NCCL_IB_HCA": "mlx5_0"}}
    assert on_disk["facts"]["gpu"] == {"gpu_count": 2} and on_disk["fact_errors"] == {}
    topo = on_disk["raw"]["topology"]["topo_m"]
    assert topo == {"path": "raw/node-a/topology/topo_m.txt", "stderr_path": None, "cmd": ["nvidia-smi", "topo", "-m"],
                    "rc": 0, "duration_s": 0.25, "error": None}
    assert (tmp_path / "run" / topo["path"]).read_text() == TOPO_TEXT
    nic = on_disk["raw"]["nic"]
    assert (tmp_path / "run" / nic["ethtool.eth0"]["path"]).read_text() == "Speed: 100000Mb/s\n"
    # a hostile interface name stays inside raw/node-a/nic/
    evil = nic["ethtool.../evil"]["path"]
    assert os.path.dirname(evil) == "raw/node-a/nic" and os.path.exists(tmp_path / "run" / evil)
    # a tool that never ran has no output file, only its error
    assert nic["ibstat"]["path"] is None and nic["ibstat"]["error"] == "not_found"
    assert json.loads((tmp_path / "run" / nic["sysfs"]["path"]).read_text()) == {"net": [{"name": "eth0"}]}


def test_stderr_kept_beside_stdout(tmp_path):
    run = RunDir.create(str(tmp_path / "run"))
    results = _healthy_results()
    results["gpu"] = {"failed": True, "msg": "exited 127", "raw": {"query_xml": _tool(["nvidia-smi", "-q", "-x"], "", rc=127, stderr="no recording\n")}}
    record = run.record_facts("n", results)
    entry = record["raw"]["gpu"]["query_xml"]
    assert entry["rc"] == 127 and entry["path"] == "raw/n/gpu/query_xml.txt"
    assert (tmp_path / "run" / entry["stderr_path"]).read_text() == "no recording\n"
    assert record["fact_errors"] == {"gpu": "exited 127"}
    assert record["phases"]["facts"]["complete"] is True


def test_truncation_kept_in_the_raw_index(tmp_path):
    run = RunDir.create(str(tmp_path / "run"))
    results = _healthy_results()
    # what node_collect returns for an output cut while it was read: the kept text, the flag and the sizes seen
    query = dict(_tool(["nvidia-smi", "-q", "-x"], "<nvidia_smi_log>"), truncated=True, stdout_bytes=209715200, stderr_bytes=0)
    results["gpu"] = {"failed": True, "msg": "cannot read", "raw": {"query_xml": query}}
    entry = run.record_facts("n", results)["raw"]["gpu"]["query_xml"]
    assert (entry["truncated"], entry["stdout_bytes"], entry["stderr_bytes"]) == (True, 209715200, 0)
    assert "truncated" not in run.record_facts("m", _healthy_results())["raw"]["topology"]["topo_m"]


def test_judgement_and_fleet_files(tmp_path):
    run = RunDir.create(str(tmp_path / "run"), hosts=["a", "b"])
    run.record_facts("a", _healthy_results())
    run.record_facts("b", {"topology": {"unreachable": True, "msg": "refused"}})
    check = {"id": "facts.gpu", "status": "fail", "subject": "gpu", "measured": None, "expected": None,
             "threshold_source": None, "message": "could not gather gpu facts: x"}
    report = {
        "nodes": {
            "a": {"verdict": "REJECT", "unreachable": None, "profile": "generic", "checks": [check], "failed": ["facts.gpu"]},
            "b": {"verdict": "UNREACHABLE", "unreachable": "refused", "profile": None, "checks": [], "failed": []},
        },
        "fleet": {"verdict": "REJECT", "counts": {"ACCEPT": 0, "ACCEPT WITH WARNINGS": 0, "REJECT": 1, "UNREACHABLE": 1}, "nodes": 2},
    }
    run.write_judgement("a", report["nodes"]["a"], profile={"name": "generic", "reason": "test"})
    run.write_judgement("b", report["nodes"]["b"], profile={"name": None, "reason": "unreachable"})
    fleet = run.write_fleet(report)
    on_disk = json.loads((tmp_path / "run" / "fleet.json").read_text())
    assert on_disk == fleet
    assert on_disk["schema"] == SCHEMA and on_disk["verdict"] == "REJECT" and on_disk["nodes"] == 2
    assert on_disk["node_verdicts"]["a"] == {"verdict": "REJECT", "failed": ["facts.gpu"], "unreachable": None, "profile": "generic",
                                             "record": "hosts/a.json"}
    assert on_disk["node_verdicts"]["b"]["verdict"] == "UNREACHABLE"
    host_a = run.read_host("a")
    assert host_a["checks"] == [check] and host_a["verdict"] == "REJECT" and host_a["phases"]["checks"]["complete"] is True
    assert run.read_host("b")["unreachable"] == "refused"
    run_record = run.read_run()
    assert run_record["status"] == "finished" and run_record["finished"] is not None


def test_reopen_keeps_start_and_refuses_other_schema(tmp_path):
    first = RunDir.create(str(tmp_path / "run"), hosts=["a"])
    started = first.read_run()["started"]
    again = RunDir.create(str(tmp_path / "run"), hosts=["a"])
    record = again.read_run()
    assert record["started"] == started and record["run_id"] == "run" and len(record["resumed"]) == 1
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "run.json").write_text(json.dumps({"schema": "gpufleet.results/v0"}))
    with pytest.raises(ResultsError, match="gpufleet.results/v0"):
        RunDir.open(str(tmp_path / "other"))
    with pytest.raises(ResultsError, match="not found"):
        RunDir.open(str(tmp_path / "nowhere"))


def test_benchmark_records_are_validated(tmp_path):
    run = RunDir.create(str(tmp_path / "run"))
    path = run.write_benchmark_raw("a", "all_reduce_perf", "# out\n")
    bench = {"name": "all_reduce_perf", "command": ["all_reduce_perf", "-b", "16G", "-e", "16G", "-g", "8"], "environment": {"NCCL_NVLS_ENABLE": "1"},
             "message_size_bytes": 17179869184, "algorithm": None, "raw_output_path": path, "parsed": {"busbw_gbs": 480.1},
             "started": "2026-01-31T12:00:00Z", "duration_s": 41.5}
    assert run.add_benchmark("a", bench)["benchmarks"] == [bench]
    assert (tmp_path / "run" / path).read_text() == "# out\n"
    with pytest.raises(ResultsError) as caught:
        run.add_benchmark("a", dict(bench, message_size_bytes="16G", colour="red"))
    assert "message_size_bytes must be int/NoneType" in str(caught.value) and "unknown field colour" in str(caught.value)


KILLED_RUN = textwrap.dedent(
    """
    import os, signal, sys
    sys.path.insert(0, sys.argv[2])
    from gpufleet.results import store as results_store
    run = results_store.RunDir.create(sys.argv[1], hosts=["a", "b", "c"])
    ok = {"ansible_facts": {"gpufleet_topology": {"summary": {}}}, "raw": {"topo_m": {"cmd": ["nvidia-smi", "topo", "-m"], "rc": 0,
          "stdout": "GPU0 X\\n", "stderr": "", "duration_s": 0.1, "error": None}}}
    groups = {"topology": ok, "gpu": {"failed": True, "msg": "no GPUs"}, "nic": {"failed": True, "msg": "no NIC"}, "host": {"failed": True, "msg": "x"}}
    run.record_facts("a", groups)
    run.record_facts("b", groups)
    real_replace = os.replace
    def die(src, dst):
        if dst.endswith(os.path.join("hosts", "c.json")):
            os.kill(os.getpid(), signal.SIGKILL)   # killed between writing the temporary file and renaming it
        return real_replace(src, dst)
    results_store.os.replace = die
    run.record_facts("c", groups)
    print("not reached")
    """
)


def test_killed_mid_run_keeps_finished_hosts_and_resumes(tmp_path):
    collections = os.path.abspath(os.path.join(os.path.dirname(results_store.__file__), "..", "..", "..", "..", ".."))
    run_dir = tmp_path / "run"
    proc = subprocess.run([sys.executable, "-c", KILLED_RUN, str(run_dir), collections], capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert "not reached" not in proc.stdout
    # a and b were finished before the kill: their files are whole and of this schema
    for host in ("a", "b"):
        record = json.loads((run_dir / "hosts" / ("%s.json" % host)).read_text())
        assert record["schema"] == SCHEMA and record["host"] == host and record["phases"]["facts"]["complete"] is True
        assert (run_dir / "raw" / host / "topology" / "topo_m.txt").read_text() == "GPU0 X\n"
    # c's record was never renamed into place: only a hidden temporary file is left, which readers ignore
    assert not (run_dir / "hosts" / "c.json").exists()
    assert [name for name in os.listdir(run_dir / "hosts") if name.startswith(".c.json.")]
    run_record = json.loads((run_dir / "run.json").read_text())
    assert run_record["schema"] == SCHEMA and run_record["status"] == "running" and run_record["finished"] is None
    assert not (run_dir / "fleet.json").exists()
    resume = RunDir.open(str(run_dir)).resume(hosts=["a", "b", "c"])
    assert resume["complete"] == ["a", "b"] and resume["missing"] == ["c"]
    assert resume["incomplete"] == [] and resume["unreachable"] == [] and resume["damaged"] == []
    assert sorted(RunDir(str(run_dir)).host_records()) == ["a", "b"]
    # a reader may leave keys out as each record is read; the files keep them
    light = RunDir(str(run_dir)).host_records(without=("raw", "facts", "no_such_key"))
    assert "raw" not in light["a"] and "facts" not in light["b"] and light["a"]["host"] == "a"
    assert json.loads((run_dir / "hosts" / "a.json").read_text())["raw"]["topology"]["topo_m"]["path"]


def test_resume_sorts_hosts_by_what_is_left(tmp_path):
    run = RunDir.create(str(tmp_path / "run"), hosts=["ok", "gone", "half", "bad"])
    run.record_facts("ok", _healthy_results())
    run.record_facts("gone", {"topology": {"unreachable": True, "msg": "refused"}})
    run.record_facts("half", {"topology": _healthy_results()["topology"]})   # the other groups were not run
    (tmp_path / "run" / "hosts" / "bad.json").write_text("{ half a reco")
    resume = run.resume(hosts=["ok", "gone", "half", "bad", "new"])
    assert resume["complete"] == ["ok"] and resume["unreachable"] == ["gone"] and resume["incomplete"] == ["half"]
    assert resume["damaged"] == ["bad.json"] and resume["missing"] == ["bad", "new"]


def test_a_damaged_record_is_set_aside_and_its_host_gathered_again(tmp_path, monkeypatch):
    path = str(tmp_path / "run")
    run = RunDir.create(path, hosts=["ok", "cut"])
    run.record_facts("ok", _healthy_results())
    run.record_facts("cut", _healthy_results())
    whole = (tmp_path / "run" / "hosts" / "cut.json").read_text()
    (tmp_path / "run" / "hosts" / "cut.json").write_text(whole[: len(whole) // 2])  # truncated: a full disk, a killed copy
    with pytest.raises(ResultsError):
        run.read_host("cut")  # what made every resume fail: the re-gathering read it first
    monkeypatch.setattr(results_store.datetime, "datetime", _FixedNow)
    reopened = RunDir.create(path, hosts=["ok", "cut"])
    resume = reopened.resume(hosts=["ok", "cut"])
    assert resume["complete"] == ["ok"] and resume["damaged"] == ["cut.json"] and resume["missing"] == ["cut"]
    assert resume["set_aside"] == ["hosts/cut.json.damaged-20260131T120000Z"]
    # the damaged bytes are kept, out of the way; the host is gathered again and its record written whole
    assert (tmp_path / "run" / "hosts" / "cut.json.damaged-20260131T120000Z").read_text() == whole[: len(whole) // 2]
    record = reopened.record_facts("cut", _healthy_results())
    assert record["host"] == "cut" and record["phases"]["facts"]["complete"] is True
    assert sorted(reopened.host_records()) == ["cut", "ok"]
    # a second resume finds nothing damaged; the set-aside file stays
    again = reopened.resume(hosts=["ok", "cut"])
    assert again["complete"] == ["cut", "ok"] and again["damaged"] == [] and again["set_aside"] == []
    assert sorted(os.listdir(tmp_path / "run" / "hosts")) == ["cut.json", "cut.json.damaged-20260131T120000Z", "ok.json"]


def test_reopening_removes_the_temporary_files_of_a_killed_run(tmp_path):
    path = tmp_path / "run"
    run = RunDir.create(str(path), hosts=["a"])
    run.record_facts("a", _healthy_results())
    # what atomic_open leaves when the process dies between mkstemp and rename
    stale = [path / "hosts" / ".b.json.k3j2x9.tmp", path / ".run.json.q81zz0.tmp", path / "raw" / "a" / "topology" / ".topo_m.txt.p0p0p0.tmp"]
    for item in stale:
        item.write_text("{ half")
    kept = path / "raw" / "a" / "topology" / "notes.tmp"  # not one of ours: no leading dot
    kept.write_text("kept")
    RunDir.create(str(path), hosts=["a"])
    assert [item.exists() for item in stale] == [False, False, False]
    assert kept.exists() and (path / "hosts" / "a.json").exists()
    assert sorted(os.listdir(path / "hosts")) == ["a.json"]


def test_the_same_playbook_run_opening_it_again_is_no_resume(tmp_path):
    # the free strategy runs the run_once "create or reopen" task once per host, at the same time
    path = tmp_path / "run"
    RunDir.create(str(path), hosts=["a", "b"], invocation="4242:1001")
    in_flight = path / ".run.json.x1y2z3.tmp"  # another host's writer between mkstemp and rename
    in_flight.write_text("{ half")
    RunDir.create(str(path), hosts=["a", "b"], invocation="4242:1001")
    record = json.loads((path / "run.json").read_text())
    assert record["resumed"] == [] and record["invocation"] == "4242:1001"
    assert in_flight.exists()
    # another invocation (gpufleet resume, a second ansible-playbook): a resume, and the leftovers are stale
    RunDir.create(str(path), hosts=["a", "b"], invocation="5151:2002")
    record = json.loads((path / "run.json").read_text())
    assert len(record["resumed"]) == 1 and record["invocation"] == "5151:2002"
    assert not in_flight.exists()


def test_openers_of_one_invocation_at_once_all_succeed(tmp_path):
    # four processes open the same new run at once (what failed one run in four under the free strategy)
    path = tmp_path / "run"
    script = textwrap.dedent("""
        import sys
        from gpufleet.results.store import RunDir
        for _round in range(20):
            RunDir.create(sys.argv[1], hosts=["a", "b", "c", "d"], invocation="77:1")
    """)
    procs = [subprocess.Popen([sys.executable, "-c", script, str(path)], stderr=subprocess.PIPE, text=True)
             for _index in range(4)]
    errors = [proc.communicate(timeout=120)[1] for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0, 0, 0], errors
    assert json.loads((path / "run.json").read_text())["resumed"] == []


class _FixedNow(results_store.datetime.datetime):
    """datetime whose now() is 2026-01-31 12:00:00 UTC (the set-aside file's name)."""

    @classmethod
    def now(cls, tz=None):
        return cls(2026, 1, 31, 12, 0, 0, tzinfo=tz)


def test_an_atomic_write_takes_pieces_and_one_that_fails_leaves_the_old_file(tmp_path):
    path = tmp_path / "junit.xml"
    write_bytes_atomic(str(path), [b"<a>", b"", b"</a>\n"])
    assert path.read_bytes() == b"<a></a>\n"

    def pieces():
        yield b"<b>"
        raise ValueError("a node's testsuite could not be built")

    with pytest.raises(ValueError, match="could not be built"):
        write_bytes_atomic(str(path), pieces())
    assert path.read_bytes() == b"<a></a>\n" and sorted(os.listdir(tmp_path)) == ["junit.xml"]


def test_a_staged_file_is_put_in_place_only_when_committed(tmp_path):
    page = tmp_path / "report.html"
    page.write_text("old", encoding="utf-8")
    tmp = results_store.staged_write(str(page), b"new")
    assert page.read_text(encoding="utf-8") == "old"
    assert os.path.dirname(tmp) == str(tmp_path) and os.path.basename(tmp).startswith(".report.html.")
    results_store.commit_staged([(tmp, str(page))])
    assert page.read_text(encoding="utf-8") == "new" and sorted(os.listdir(str(tmp_path))) == ["report.html"]
    assert oct(os.stat(str(page)).st_mode & 0o777) == "0o644"


def test_a_staged_write_that_fails_leaves_no_file(tmp_path, monkeypatch):
    def full(_handle):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(results_store.os, "fsync", full)
    with pytest.raises(results_store.ResultsWriteError) as raised:
        results_store.staged_write(str(tmp_path / "report.html"), b"new")
    assert raised.value.errno == 28
    assert os.listdir(str(tmp_path)) == []


def test_a_commit_that_fails_leaves_no_staged_file(tmp_path):
    (tmp_path / "b.html").mkdir()  # a directory where the second file goes: it cannot be replaced
    staged = [(results_store.staged_write(str(tmp_path / name), name.encode()), str(tmp_path / name))
              for name in ("a.html", "b.html", "c.html")]
    with pytest.raises(results_store.ResultsWriteError):
        results_store.commit_staged(staged)
    assert (tmp_path / "a.html").read_text(encoding="utf-8") == "a.html"
    assert sorted(os.listdir(str(tmp_path))) == ["a.html", "b.html"]  # c.html was never put in place
