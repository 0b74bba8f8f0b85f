#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: bench_cleanup
short_description: End every process of one benchmark run on a node, found by its job id
description:
  - Finds every process on the node whose environment (C(/proc/<pid>/environ)) holds C(GPUFLEET_JOB_ID=<job_id>), the tag
    M(gpufleet.acceptance.bench_run) gives a run and that its ranks inherit (also ranks started on this node by a remote
    C(mpirun) or C(srun)), sends each C(SIGTERM), waits O(grace) seconds, sends C(SIGKILL) to what is left, and looks again
    (up to three rounds, for processes started meanwhile).
  - Run it on every host after every benchmark, and in an C(always:) block, so that nothing of a run survives a hang, a killed
    C(mpirun) or a controller that died.
  - Fails when a tagged process is still alive at the end (for example a process of another user, when not run as root).
version_added: 0.1.0
author:
  - gpufleet engineers (@gpufleet)
options:
  job_id:
    description:
      - The job id given to M(gpufleet.acceptance.bench_run).
    type: str
    required: true
  grace:
    description:
      - Seconds between C(SIGTERM) and C(SIGKILL).
    type: float
    default: 5
  proc_root:
    description:
      - Where the process table is mounted.
    type: path
    default: /proc
extends_documentation_fragment:
  - gpufleet.acceptance.attributes.collector
attributes:
  check_mode:
    support: full
    description: In check mode, reports the processes it would end and ends none.
notes:
  - Reading another user's C(/proc/<pid>/environ) needs root (or the same user); run it with C(become) where ranks run as another user.
seealso:
  - module: gpufleet.acceptance.bench_run
"""

EXAMPLES = r"""
- name: Run the multi-node all-reduce, and clean up on every host whatever happens
  block:
    - name: All-reduce across the fleet
      gpufleet.acceptance.bench_run:
        argv: "{{ gpufleet_launcher.argv_prefix + ['/opt/nccl-tests/build/all_reduce_perf', '-b', '8G', '-e', '8G'] }}"
        job_id: allreduce-multi-1
        timeout: 900
      run_once: true
  always:
    - name: End whatever is left of the run, on every host
      gpufleet.acceptance.bench_cleanup:
        job_id: allreduce-multi-1
"""

RETURN = r"""
job_id:
  description: The job id looked for.
  returned: always
  type: str
  sample: allreduce-multi-1
killed:
  description: The processes found and ended, with the last signal each needed (null in check mode).
  returned: always
  type: list
  elements: dict
  sample: [{"pid": 4711, "cmdline": "python3 all_reduce_perf_standin.py -b 1M", "signal": "SIGKILL"}]
remaining:
  description: Tagged processes still alive at the end (the task fails when there are any, except in check mode).
  returned: always
  type: list
  elements: dict
  sample: []
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.acceptance.plugins.module_utils.bench_process import JOB_ID_RE, kill_job


def main():
    module = AnsibleModule(
        argument_spec={
            "job_id": {"type": "str", "required": True},
            "grace": {"type": "float", "default": 5},
            "proc_root": {"type": "path", "default": "/proc"},
        },
        supports_check_mode=True,
    )
    params = module.params
    if not JOB_ID_RE.match(params["job_id"]):
        module.fail_json(msg="job_id %r: use letters, digits and ._:- only, at most 128 characters" % params["job_id"])
    outcome = kill_job(params["job_id"], grace=params["grace"], proc_root=params["proc_root"], check_mode=module.check_mode)
    result = {"job_id": params["job_id"], "killed": outcome["found"], "remaining": outcome["remaining"]}
    if module.check_mode:
        module.exit_json(changed=False, **result)
    if outcome["remaining"]:
        module.fail_json(msg="%d process(es) of job %s still alive: %s" % (
            len(outcome["remaining"]), params["job_id"], ", ".join(str(item["pid"]) for item in outcome["remaining"])), **result)
    module.exit_json(changed=bool(outcome["found"]), **result)


if __name__ == "__main__":
    main()
