#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: bench_run
short_description: Run one benchmark command under a timeout, in its own process group, tagged with a job id
description:
  - Runs O(argv) on the node as an argv list (never through a shell), in a new session and process group, with
    C(GPUFLEET_JOB_ID=<job_id>) and O(env) added to its environment, stdin from C(/dev/null).
  - When the command (an C(mpirun)/C(mpiexec)/C(orterun)/C(prterun) launcher) is Open MPI's, C(-x GPUFLEET_JOB_ID) is added
    after the launcher and after every C(:) app-context separator, so the ranks on every host carry the tag too.
  - Waits up to O(timeout) seconds. On timeout the whole process group gets C(SIGTERM), then C(SIGKILL) after O(grace)
    seconds, and the outcome is V(hang). Processes the command left behind in its group after exiting are ended the same way.
    Processes that left the group (a C(setsid) child) are found through the command's output pipes they still hold, or,
    with their output closed, by the job and run tags in their environment (C(GPUFLEET_RUN_ID) is set once per run), and
    ended the same way (RV(escaped)), so the task ends within O(timeout) plus twice O(grace) plus a few seconds whatever
    the command's children do (plus at most 18 seconds for the usage probe of O(json_binary)). Other processes
    outside the group (ranks started by a remote launcher daemon) are ended by M(gpufleet.acceptance.bench_cleanup) with
    the same O(job_id).
  - Reports the outcome as one of V(ok), V(hang), V(missing_binary) (the program, or the program a launcher was asked
    to start, is not there), V(launcher_error) (C(mpirun)/C(srun)/C(ssh) could not start the job, for example
    C(There are not enough slots available)), V(crash) (killed by a signal, exit status 128 or more, or a launcher
    saying a rank died on a signal) and V(failed) (any other non-zero exit), with the line that says why in RV(reason).
  - A benchmark that fails does not fail the task; the outcome says what happened. The task fails only on bad options.
  - With O(json_binary), that binary of O(argv) is asked for its JSON document, in the format O(json_format). Whether it
    writes one is O(json_supported) where the caller knows; else the binary is first asked for its usage (C(<binary>
    -h) for nccl-tests, C(<binary> --help) for perftest, at most 10 seconds, tagged and ended like the run; skipped
    while O(json_cached) holds for the same file).
  - V(nccl-tests) - where the usage lists C(-J,--output_file) (nccl-tests 2.17.3 and later), C(-J <the module's
    temporary directory>/nccl-tests.json) goes right after the binary, and the JSON document rank 0 writes there is read
    back into RV(nccl_json) (its C(env) cut to the variables' names).
  - V(perftest) - where the usage lists C(--out_json) (perftest 4.5-0.11 and later), C(--out_json
    --out_json_file=<the module's temporary directory>/perftest.json) go right after the binary, and the report perftest
    writes there is read back into RV(perftest_json) as written (before perftest 24.01 it is not JSON; the controller
    reads it, C(docs/parsers/perftest_json.md)).
  - The document is read back at most O(max_output) bytes and removed. Without the option, or without a readable
    document, the run is the same and the C(reason) of RV(nccl_json) or RV(perftest_json) says why.
  - With the action plugin of the same name, the output is parsed and recorded on the controller (O(parse_kind), O(run_dir)).
version_added: 0.1.0
author:
  - gpufleet engineers (@gpufleet)
options:
  argv:
    description:
      - The command and its arguments. The first element is a name looked up on C(PATH) (of the node, or O(env)'s C(PATH))
        or a path.
    type: list
    elements: str
    required: true
  env:
    description:
      - Environment variables added for the command (for example C(NCCL_DEBUG), C(NCCL_ALGO)); values are turned into strings.
      - When the command is an Open MPI launcher (C(mpirun), C(mpiexec), C(orterun), C(prterun)) each name is also passed to
        the ranks with C(-x NAME) (as C(GPUFLEET_JOB_ID) is), so the variables reach every host.
    type: dict
    default: {}
  timeout:
    description:
      - Seconds the command may run before it is called a hang and its process group is ended.
    type: float
    default: 600
  grace:
    description:
      - Seconds between C(SIGTERM) and C(SIGKILL) when the process group is ended.
    type: float
    default: 10
  job_id:
    description:
      - The tag put in the environment as C(GPUFLEET_JOB_ID). Letters, digits and C(._:-), at most 128 characters.
      - Use one id per benchmark run, and run M(gpufleet.acceptance.bench_cleanup) with it on every host afterwards.
    type: str
    required: true
  cwd:
    description:
      - Directory to run the command in. Defaults to the module's own working directory.
    type: path
  node:
    description:
      - The name of the node the run is for (the action plugin gives the inventory name). Put in the environment of
        every process of the run as C(GPUFLEET_NODE), beside the job id, so that O(end_earlier) finds this node's
        processes of the job and no other node's.
    type: str
  end_earlier:
    description:
      - Before starting, end the processes an earlier attempt of this job left on this node (those tagged with both
        O(job_id) and O(node)) with C(SIGTERM), then C(SIGKILL) after O(grace) seconds, as
        M(gpufleet.acceptance.bench_cleanup) does. The action plugin sets it on its one second attempt after the
        controller lost its ssh connection to the node mid-run (the first attempt's benchmark may still be running
        there). Needs O(node).
    type: bool
    default: false
  max_output:
    description:
      - Bytes kept of each of stdout and stderr; beyond that the first and last halves are kept with a line saying
        how much was dropped between them.
      - Also the most bytes of the JSON document read back (O(json_binary)).
    type: int
    default: 4194304
  json_binary:
    description:
      - The binary in O(argv) (an element equal to it, after any launcher or wrapper) to ask for its JSON document in
        the format O(json_format), see the description. The action plugin sets it for O(parse_kind=nccl) (O(nccl_json)) and
        for O(parse_kind=ib-bw) and O(parse_kind=ib-lat) (O(perftest_json)) unless given.
    type: str
    aliases: [nccl_json_binary]
  json_format:
    description:
      - Whose JSON document O(json_binary) writes, see the description. The action plugin sets it from O(parse_kind).
    type: str
    choices: [nccl-tests, perftest]
    default: nccl-tests
  json_supported:
    description:
      - Whether O(json_binary) writes its JSON document, as the caller already read it from the binary's usage (the
        C(--help) probe of C(playbooks/benchmark_tasks/perftest.yml) hands it over); the node then does not probe.
        Left out, the node asks the binary (O(json_cached)).
    type: bool
  json_cached:
    description:
      - An earlier answer of the usage probe of O(json_binary) on this node, as RV(nccl_json) or RV(perftest_json)
        returned it (C(identity), C(supported)). Used instead of probing while the binary's C(identity) (inode, size,
        modification time) is the same. The action plugin keeps the answers in the facts C(bench_run_nccl_json_probes)
        and C(bench_run_perftest_json_probes), per host and binary.
    type: dict
    aliases: [nccl_json_cached]
  parse_kind:
    description:
      - Action plugin only. The parser (registry KIND, see C(docs/parsers.md)) to read stdout with on the controller,
        for example V(nccl), V(iperf3), V(ib-bw), V(ib-lat), V(nvbandwidth).
      - V(nccl) reads nccl-tests' JSON document first where the run wrote one (O(nccl_json)), the text table where not;
        V(ib-bw) and V(ib-lat) read perftest's JSON report first the same way (O(perftest_json)); the record's
        C(parsed.parsed_from) says which (C(docs/benchmarks.md)).
    type: str
  nccl_json:
    description:
      - Action plugin only. With O(parse_kind=nccl), ask the nccl-tests binary for its JSON document
        (O(nccl_json_binary) when given, else the first O(argv) element named like an nccl-tests binary,
        C(<name>_perf)). V(false) reads the text only.
    type: bool
    default: true
  perftest_json:
    description:
      - Action plugin only. With O(parse_kind=ib-bw) or O(parse_kind=ib-lat), ask the perftest binary for its JSON
        report (O(json_binary) when given, else the first O(argv) element named like a perftest binary,
        C(ib_write_bw), C(ib_read_lat)...). V(false) reads the text only.
    type: bool
    default: true
  run_dir:
    description:
      - Action plugin only. The results directory to record the run in (raw output and a benchmark record,
        C(docs/results-schema.md)). Not recorded when left out.
    type: path
  record_host:
    description:
      - Action plugin only. The host whose record gets the benchmark. Defaults to C(inventory_hostname).
    type: str
  name:
    description:
      - Action plugin only. The record's C(name). Defaults to the basename of the program run (the one after the launcher
        for C(mpirun)/C(srun) is not guessed, so name it).
    type: str
  kind:
    description:
      - Action plugin only. The record's C(kind).
    type: str
    choices: [allreduce_single, allreduce_multi, allreduce_pair, iperf3, iperf3_concurrent, ib_write_bw, ib_write_lat,
              nvbandwidth, ib_counters, gpu_compute]
  hosts:
    description:
      - Action plugin only. The inventory names of the hosts the run involves. Defaults to O(record_host) alone.
    type: list
    elements: str
  message_size_bytes:
    description:
      - Action plugin only. The message size the record's figure is for.
    type: int
  algorithm:
    description:
      - Action plugin only. The algorithm the run was pinned to or used (C(NCCL_ALGO) of O(env) when left out).
    type: str
  repeat:
    description:
      - Action plugin only. Which repeat of the same benchmark this is (1 for the first).
    type: int
    default: 1
  round:
    description:
      - Action plugin only. The round of a pairwise search this run belongs to.
    type: int
  group:
    description:
      - Action plugin only. A label for runs that belong together (for example the rack of a concurrent C(iperf3)).
    type: str
  samples_file:
    description:
      - Action plugin only. The path on the node of the JSON Lines file an NVML sampler (M(gpufleet.acceptance.nvml_sample),
        started beside the run with C(async)) writes. After the run the file is read from the node until it holds a tick at or
        after the run's end (or its C(end) record), for at most O(samples_wait) seconds, and the per-GPU summary of the samples
        taken during the run goes into the record's C(samples) (C(docs/results-schema.md)). Needs O(run_dir).
    type: str
  samples_wait:
    description:
      - Action plugin only. The most seconds to wait for the sampler's tick after the run (O(samples_file)).
    type: float
    default: 10
extends_documentation_fragment:
  - gpufleet.acceptance.attributes.collector
attributes:
  check_mode:
    support: partial
    description: Runs nothing in check mode; the task reports C(skipped) and records nothing.
    details: A benchmark cannot be measured without running it, so check mode only validates the options.
notes:
  - The node needs only its OS Python (3.8 or later); parsing happens on the controller.
  - Nothing printed by the node reaches a shell; the command is never formatted into one.
seealso:
  - module: gpufleet.acceptance.bench_cleanup
"""

EXAMPLES = r"""
- name: Single-node all-reduce, pinned to Ring, judged at 8 GiB, recorded
  gpufleet.acceptance.bench_run:
    argv: [/opt/nccl-tests/build/all_reduce_perf, -b, 8G, -e, 8G, -g, "8"]
    env:
      NCCL_ALGO: Ring
      NCCL_DEBUG: INFO
    timeout: 600
    job_id: "allreduce-{{ inventory_hostname }}-1"
    parse_kind: nccl
    kind: allreduce_single
    message_size_bytes: 8589934592
    run_dir: results/acceptance-2026-01
  register: allreduce_single

- name: Leave nothing of that run behind
  gpufleet.acceptance.bench_cleanup:
    job_id: "allreduce-{{ inventory_hostname }}-1"
"""

RETURN = r"""
cmd:
  description: The argv as run (with C(-x GPUFLEET_JOB_ID) added for an Open MPI launcher).
  returned: always
  type: list
  elements: str
  sample: [mpirun, -x, GPUFLEET_JOB_ID, -np, "16", all_reduce_perf, -b, 8G, -e, 8G]
rc:
  description: Exit status; negative when a signal ended the command (C(-9) for SIGKILL); null when it did not start.
  returned: always
  type: int
  sample: 0
stdout:
  description: What the command printed, capped at O(max_output) bytes.
  returned: always
  type: str
stderr:
  description: What the command printed on stderr, capped at O(max_output) bytes.
  returned: always
  type: str
stdout_dropped:
  description: Bytes of stdout dropped by the cap (0 when none).
  returned: always
  type: int
  sample: 0
stderr_dropped:
  description: Bytes of stderr dropped by the cap (0 when none).
  returned: always
  type: int
  sample: 0
duration_s:
  description: Wall time from start until the process group was gone.
  returned: always
  type: float
  sample: 61.204
outcome:
  description: V(ok), V(hang), V(missing_binary), V(launcher_error), V(crash) or V(failed).
  returned: always
  type: str
  sample: hang
reason:
  description: Why the outcome is what it is, in one line (empty for V(ok)).
  returned: always
  type: str
  sample: "no exit within the 600.0s timeout; process group ended with SIGTERM, then SIGKILL"
job_id:
  description: The job id the command's processes carry as C(GPUFLEET_JOB_ID).
  returned: always
  type: str
  sample: allreduce-node-a-1
started:
  description: When the command started, ISO 8601 UTC.
  returned: always
  type: str
  sample: "2026-01-31T12:00:00Z"
pgid:
  description: The process group the command ran in; null when it did not start.
  returned: always
  type: int
  sample: 41237
signals:
  description: The signals sent to the process group after the timeout or the exit (empty when none was needed).
  returned: always
  type: list
  elements: str
  sample: [SIGTERM, SIGKILL]
escaped:
  description:
    - Processes outside the process group (a C(setsid) child) left after the group was gone, found holding the
      command's output pipes (C(found=pipes)) or, with their output closed, by the job and run tags in their
      environment (C(found=tag)); each ended with C(SIGTERM), then C(SIGKILL) after O(grace); RV(reason) says so.
  returned: always
  type: list
  elements: dict
  sample: [{"pid": 41301, "cmdline": "sleep 600", "found": "tag"}]
earlier_ended:
  description:
    - With O(end_earlier), the processes of an earlier attempt of the job found on this node before the run and ended,
      with the last signal each needed.
  returned: when O(end_earlier) is true
  type: list
  elements: dict
  sample: [{"pid": 41377, "cmdline": "iperf3 -c 198.18.1.2 -J", "signal": "SIGTERM"}]
earlier_remaining:
  description: With O(end_earlier), the processes of an earlier attempt still alive after that (the task then fails).
  returned: when O(end_earlier) is true
  type: list
  elements: dict
  sample: []
nccl_json:
  description:
    - The nccl-tests JSON document of the run (O(nccl_json_binary)). C(binary); C(supported) (whether its C(-h) lists
      C(-J); null when the probe got no usage text); C(probe) (V(probed) or V(cached)); C(identity)
      (C(inode:size:mtime_ns) of the binary probed); C(path) (where C(-J) pointed; null without C(-J)); C(document) (the
      text read back, null when none; the action plugin returns its length in C(document_bytes) instead); C(reason)
      (why there is no document; empty when there is one).
  returned: when O(json_binary) is given with O(json_format=nccl-tests)
  type: dict
  sample: {"binary": "/opt/nccl-tests/build/all_reduce_perf", "format": "nccl-tests", "supported": false,
           "probe": "probed", "identity": "1835:1203456:1767225600000000000", "path": null, "document": null,
           "reason": "/opt/nccl-tests/build/all_reduce_perf -h lists no -J,--output_file (nccl-tests before 2.17.3)"}
perftest_json:
  description:
    - The perftest JSON report of the run (O(json_binary) with O(json_format=perftest)), the keys of RV(nccl_json);
      C(probe) is V(given) when O(json_supported) said, and C(document) is the report as perftest wrote it.
  returned: when O(json_binary) is given with O(json_format=perftest)
  type: dict
  sample: {"binary": "ib_write_bw", "format": "perftest", "supported": true, "probe": "given", "identity": null,
           "path": "/tmp/ansible-moduletmp-1767225600.1-x1y2/perftest.json", "document": null,
           "reason": "no document at /tmp/ansible-moduletmp-1767225600.1-x1y2/perftest.json: the run did not write one
                      (perftest writes it with its results: a run that failed or was ended before them leaves none)"}
parsed:
  description:
    - What the O(parse_kind) parser made of stdout (action plugin; null without O(parse_kind) or when it cannot be
      read).
    - For V(nccl), the JSON document's reading where there is one, with the text's NCCL lines; for V(ib-bw) and
      V(ib-lat), perftest's report where there is one, with the text's other sizes and lines. C(parsed_from) (V(json)
      or V(text)), C(json_fallback_reason) and C(json_text_disagreements) say how (C(docs/benchmarks.md)).
  returned: always
  type: raw
parse_error:
  description: Why stdout could not be parsed, naming the line (action plugin; null when it could, or was not asked to).
  returned: always
  type: str
samples_error:
  description: Why the record has no NVML samples of the run (action plugin, with O(samples_file); null when it has them).
  returned: when O(samples_file) is given
  type: str
record:
  description: The benchmark record written into O(run_dir) (action plugin; null without O(run_dir)).
  returned: always
  type: dict
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.acceptance.plugins.module_utils.bench_process import (
    JOB_ID_RE, JSON_FORMATS, MAX_OUTPUT_BYTES, NODE_ENV, kill_job, run_tagged, run_with_json)


def main():
    module = AnsibleModule(
        argument_spec={
            "argv": {"type": "list", "elements": "str", "required": True},
            "env": {"type": "dict", "default": {}},
            "timeout": {"type": "float", "default": 600},
            "grace": {"type": "float", "default": 10},
            "job_id": {"type": "str", "required": True},
            "cwd": {"type": "path"},
            "node": {"type": "str"},
            "end_earlier": {"type": "bool", "default": False},
            "max_output": {"type": "int", "default": MAX_OUTPUT_BYTES},
            "json_binary": {"type": "str", "aliases": ["nccl_json_binary"]},
            "json_format": {"type": "str", "choices": sorted(JSON_FORMATS), "default": "nccl-tests"},
            "json_supported": {"type": "bool"},
            "json_cached": {"type": "dict", "aliases": ["nccl_json_cached"]},
            "parse_kind": {"type": "str"},
            "nccl_json": {"type": "bool", "default": True},
            "perftest_json": {"type": "bool", "default": True},
            "run_dir": {"type": "path"},
            "record_host": {"type": "str"},
            "name": {"type": "str"},
            "kind": {"type": "str", "choices": ["allreduce_single", "allreduce_multi", "allreduce_pair", "iperf3", "iperf3_concurrent",
                                                "ib_write_bw", "ib_write_lat", "nvbandwidth", "ib_counters", "gpu_compute"]},
            "hosts": {"type": "list", "elements": "str"},
            "message_size_bytes": {"type": "int"},
            "algorithm": {"type": "str"},
            "repeat": {"type": "int", "default": 1},
            "round": {"type": "int"},
            "group": {"type": "str"},
            "samples_file": {"type": "str"},
            "samples_wait": {"type": "float", "default": 10},
        },
        supports_check_mode=True,
    )
    params = module.params
    if not params["argv"]:
        module.fail_json(msg="argv must hold at least the program to run")
    if not JOB_ID_RE.match(params["job_id"]):
        module.fail_json(msg="job_id %r: use letters, digits and ._:- only, at most 128 characters" % params["job_id"])
    if params["timeout"] <= 0 or params["grace"] < 0:
        module.fail_json(msg="timeout must be > 0 and grace >= 0 (got %s, %s)" % (params["timeout"], params["grace"]))
    if params["max_output"] < 1024:
        module.fail_json(msg="max_output must be at least 1024 bytes")
    if params["end_earlier"] and not params["node"]:
        module.fail_json(msg="end_earlier needs node: the processes of an earlier attempt are found by job id and node")
    if module.check_mode:
        module.exit_json(changed=False, skipped=True, msg="check mode: the benchmark is not run", job_id=params["job_id"])
    if params["node"]:
        # every process of the run (and of the usage probe) inherits it from here
        os.environ[NODE_ENV] = params["node"]
    earlier = {}
    if params["end_earlier"]:
        ended = kill_job(params["job_id"], grace=params["grace"], node=params["node"])
        earlier = {"earlier_ended": ended["found"], "earlier_remaining": ended["remaining"]}
        if ended["remaining"]:
            pids = ", ".join(str(item["pid"]) for item in ended["remaining"])
            module.fail_json(msg="an earlier attempt of job %s left processes on this node that could not be ended: %s"
                             % (params["job_id"], pids), **earlier)
    run = {"env": params["env"], "timeout": params["timeout"], "grace": params["grace"], "cwd": params["cwd"],
           "max_output": params["max_output"]}
    if params["json_binary"]:
        # the module's own temporary directory: removed when the module exits
        result = run_with_json(params["argv"], params["job_id"], params["json_binary"], module.tmpdir,
                               cached=params["json_cached"], fmt=JSON_FORMATS[params["json_format"]],
                               supported=params["json_supported"], **run)
    else:
        result = run_tagged(params["argv"], params["job_id"], **run)
    result.update(earlier)
    module.exit_json(changed=True, **result)


if __name__ == "__main__":
    main()
