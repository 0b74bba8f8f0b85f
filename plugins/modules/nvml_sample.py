#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: nvml_sample
short_description: Sample every GPU of the node through NVML at a set interval (temperature, SM clock, power, throttle, ECC, NVLink counters)
description:
  - Opens one NVML session in the module's own process and, every O(interval) seconds for O(duration) seconds, reads
    for each GPU the temperature, the SM clock, the power draw, the cumulative clock-event (throttle) time counters,
    the ECC error counters and the NVLink error counters summed over the active links.
  - Writes the records as JSON Lines to O(output) on the node (a header, one C(sample) per GPU per tick, an C(end)
    trailer), flushed after every tick, so a run that is cut short keeps what it sampled. Without O(output) the
    records are returned (at most O(max_samples) samples). The record format is C(gpufleet.nvml-samples/v1),
    described in C(docs/nvml-sampler.md).
  - Reads NVML through nvidia-ml-py (C(import pynvml)) when the node has it and no O(library_path) is given, else
    through a small ctypes binding shipped with the collection; nothing has to be installed on the node but the driver.
  - A field NVML does not support, a symbol an older driver lacks and a GPU that is lost make that field (or that
    GPU's line) null with the reason in the record's C(errors); they do not fail the task. The task fails when the
    library cannot be loaded, NVML cannot start, or it sees no GPU.
  - The counters are cumulative (the clock-event times in nanoseconds since the driver loaded); judge their
    differences between samples, not the values.
  - For a long run use Ansible C(async) with C(poll) set to 0, then M(ansible.builtin.async_status) to wait (see EXAMPLES).
    C(SIGTERM) or C(SIGINT) ends the run after the current tick (at once between ticks) with an C(end) record whose
    C(reason) is V(signal).
version_added: 0.1.0
author:
  - gpufleet engineers (@gpufleet)
options:
  library_path:
    description:
      - Path of the NVML library to load, for example C(/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1) or a driver
        container's copy. Uses the ctypes binding. Default is C(libnvidia-ml.so.1) found by the dynamic loader.
    type: path
  interval:
    description:
      - Seconds between ticks. Ticks are kept on a fixed grid from the start; a tick that overruns skips the slots it missed.
    type: float
    default: 5
  duration:
    description:
      - Seconds to sample for; ticks at 0, O(interval), 2 x O(interval) ... up to O(duration). V(0) takes one tick.
    type: float
    default: 0
  stop_file:
    description:
      - Path of a file whose appearance ends the run after the next tick (reason V(stopped)), which reads the counters
        at the end; a playbook creates it when the run it samples has ended, so the sampler does not go on for the
        rest of O(duration).
      - A file already there at the start is removed first (it is left from an earlier run).
    type: path
  output:
    description:
      - Path of the JSON Lines file to write on the node (created or truncated; its directory must exist).
      - When left out the records are returned in RV(samples) instead.
      - When the run cannot start (no NVML library, NVML refuses, no GPU) the file holds one C(end) record with
        C(reason) V(failed) and the message in C(error), and the task fails with that message.
    type: path
  max_samples:
    description:
      - The most sample records to take; the run ends (reason V(max_samples)) before a tick that would go past it.
        The first tick is always taken.
      - Defaults to 1000 when the samples are returned, no limit with O(output).
    type: int
  binding:
    description:
      - V(auto) uses nvidia-ml-py when importable and O(library_path) is not set, else the ctypes binding.
    type: str
    choices: [auto, ctypes, nvidia-ml-py]
    default: auto
extends_documentation_fragment:
  - gpufleet.acceptance.attributes.collector
attributes:
  check_mode:
    support: full
    description: Takes one tick and returns it; writes nothing.
notes:
  - The node needs only its OS Python (3.8 or later) and the NVIDIA driver's C(libnvidia-ml.so.1).
  - Ansible's C(async) ends a job that outlives its C(async) seconds with C(SIGKILL), which leaves no C(end) record;
    give C(async) a margin over O(duration) (the records up to the last tick are in O(output) either way).
  - The field ids of three clock-event counters (SW thermal, HW thermal, HW power brake) depend on the driver
    version; on drivers before R575 NVML has no such counters and they are null. NVML has no counter for the
    parent C(HW Slowdown) reason. See C(docs/nvml-sampler.md).
seealso:
  - module: gpufleet.acceptance.gpu_facts
"""

EXAMPLES = r"""
- name: One look at every GPU (returned, nothing written)
  gpufleet.acceptance.nvml_sample:
  register: nvml_now

- name: Sample every 5 s for the hour of the burn-in, in the background
  gpufleet.acceptance.nvml_sample:
    interval: 5
    duration: 3600
    output: /var/tmp/gpufleet-burn-in.nvml.jsonl
  async: 3720
  poll: 0
  register: nvml_job

- name: Wait for the sampler after the load has run
  ansible.builtin.async_status:
    jid: "{{ nvml_job.ansible_job_id }}"
  register: nvml_done
  until: nvml_done.finished
  retries: 120
  delay: 5

- name: Read NVML through a driver container's library
  gpufleet.acceptance.nvml_sample:
    library_path: /run/nvidia/driver/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1
"""

RETURN = r"""
header:
  description: The header record (schema, start time, interval, driver and NVML versions, binding, and the GPUs by index).
  returned: success
  type: dict
  sample:
    type: header
    schema: gpufleet.nvml-samples/v1
    host_time_start: 1784016773.2
    interval_s: 5.0
    driver_version: 590.48.01
    nvml_version: 13.590.48.01
    binding: ctypes
    gpus: [{index: 0, uuid: GPU-00000000-0000-0000-0000-000000000000, name: NVIDIA H100 80GB HBM3, pci_bus_id: "00000000:00:09.0"}]
samples:
  description: The sample records, in order, when O(output) is not set (in check mode always); empty otherwise.
  returned: success
  type: list
  elements: dict
end:
  description: The trailer record (C(type), C(t), C(samples), C(reason)).
  returned: success
  type: dict
  sample: {type: end, t: 1784020373.4, samples: 720, reason: duration}
samples_count:
  description: Sample records taken.
  returned: success
  type: int
  sample: 720
ticks:
  description: Ticks taken.
  returned: success
  type: int
  sample: 720
reason:
  description: Why the run ended, V(duration), V(max_samples), V(signal) or V(stopped) (O(stop_file) appeared).
  returned: success
  type: str
  sample: duration
output:
  description: The file written (null when the samples were returned).
  returned: success
  type: str
  sample: /var/tmp/gpufleet-burn-in.nvml.jsonl
binding:
  description: How NVML was reached, V(nvidia-ml-py) or V(ctypes).
  returned: success
  type: str
  sample: ctypes
gpu_count:
  description: GPUs NVML reported.
  returned: success
  type: int
  sample: 8
field_errors:
  description: Per GPU index (as a string), each field that failed at least once and the last error it gave.
  returned: success
  type: dict
  sample: {"5": {"*": gpu_lost}, "0": {"clock_event_ns.hw_slowdown": not_supported}}
"""

import json
import os
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.acceptance.plugins.module_utils import nvml
from ansible_collections.gpufleet.acceptance.plugins.module_utils.nvml_sampler import (
    INLINE_MAX_SAMPLES,
    JsonLinesWriter,
    Sampler,
    open_backend,
)

START_HINTS = {
    "NVML_ERROR_DRIVER_NOT_LOADED": "the NVIDIA kernel driver is not loaded",
    "NVML_ERROR_NO_PERMISSION": "no permission to open the GPU devices",
    "NVML_ERROR_LIB_RM_VERSION_MISMATCH": "the NVML library and the loaded kernel driver differ in version (reload or reboot)",
}


def fail(module, output, msg, **extra):
    """fail_json, after writing a lone ``end`` record (reason ``failed``, the message in ``error``) to ``output``: a
    reader waiting for the file (bench_run's ``samples_file``) sees at once that no sample will come, and why."""
    if output:
        try:
            with open(output, "w") as handle:
                handle.write(json.dumps({"type": "end", "t": time.time(), "samples": 0, "reason": "failed",
                                         "error": msg}) + "\n")
        except OSError:
            pass  # the task fails with the message either way
    module.fail_json(msg=msg, **extra)


def main():
    module = AnsibleModule(
        argument_spec={
            "library_path": {"type": "path"},
            "interval": {"type": "float", "default": 5},
            "duration": {"type": "float", "default": 0},
            "output": {"type": "path"},
            "max_samples": {"type": "int"},
            "binding": {"type": "str", "choices": ["auto", "ctypes", "nvidia-ml-py"], "default": "auto"},
            "stop_file": {"type": "path"},
        },
        supports_check_mode=True,
    )
    params = module.params
    if params["interval"] <= 0 or params["duration"] < 0:
        module.fail_json(msg="interval must be > 0 and duration >= 0 (got %s, %s)" % (params["interval"], params["duration"]))
    if params["max_samples"] is not None and params["max_samples"] < 1:
        module.fail_json(msg="max_samples must be at least 1")
    output = None if module.check_mode else params["output"]
    if output and not os.path.isdir(os.path.dirname(os.path.abspath(output))):
        module.fail_json(msg="output directory %s does not exist" % os.path.dirname(os.path.abspath(output)))

    try:
        backend = open_backend(params["binding"], params["library_path"])
    except nvml.LibraryNotFound:
        missing = params["library_path"] or nvml.LIBRARY_NAME
        fail(module, output, "%s not found: is the NVIDIA driver installed?" % missing)
    except ValueError as exc:
        fail(module, output, str(exc))

    max_samples = params["max_samples"]
    if max_samples is None and not output:
        max_samples = INLINE_MAX_SAMPLES
    stop_file = params["stop_file"]
    if stop_file and not module.check_mode and os.path.exists(stop_file):
        os.unlink(stop_file)  # left from an earlier run: it must not end this one
    sampler = Sampler(backend, interval=params["interval"], duration=0 if module.check_mode else params["duration"], max_samples=max_samples,
                      stop_when=(lambda: os.path.exists(stop_file)) if stop_file else None)
    try:
        sampler.start()
    except nvml.LibraryNotFound:
        fail(module, output, "%s not found: is the NVIDIA driver installed?" % nvml.LIBRARY_NAME)
    except nvml.NVMLError as exc:
        sampler.close()
        hint = START_HINTS.get(exc.name)
        fail(module, output, "NVML did not start: %s%s" % (exc.name, ": " + hint if hint else ""), nvml_error=exc.name)
    if not sampler.gpus:
        sampler.close()
        fail(module, output, "NVML reports no GPU on this node", header=sampler.header)

    records = []
    field_errors = {}

    def keep(emit):
        def _emit(record):
            if record.get("type") == "sample" and record.get("errors"):
                field_errors.setdefault(str(record["gpu"]), {}).update(record["errors"])
            emit(record)
        return _emit

    try:
        if output:
            with open(output, "w") as handle:
                writer = JsonLinesWriter(handle)
                trailer = sampler.run(keep(writer.emit), writer.flush)
        else:
            trailer = sampler.run(keep(records.append))
    except OSError as exc:
        module.fail_json(msg="cannot write %s: %s" % (output, exc))
    finally:
        sampler.close()

    module.exit_json(
        changed=bool(output),
        header=sampler.header,
        samples=[record for record in records if record.get("type") == "sample"],
        end=trailer,
        samples_count=sampler.samples,
        ticks=sampler.ticks,
        reason=trailer["reason"],
        output=output,
        binding=backend.binding,
        gpu_count=len(sampler.gpus),
        field_errors=field_errors,
    )


if __name__ == "__main__":
    main()
