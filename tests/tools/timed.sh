#!/usr/bin/env bash
# Usage: tests/tools/timed.sh LABEL COMMAND...: runs COMMAND, then prints "timings: LABEL N s (exit RC)" and exits
# with COMMAND's status (`make test` prints each part's wall time this way).
set -uo pipefail
label="$1"
shift
started=$SECONDS
"$@"
rc=$?
echo "timings: $label $((SECONDS - started)) s (exit $rc)"
exit "$rc"
