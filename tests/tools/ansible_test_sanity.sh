#!/usr/bin/env bash
# Run `ansible-test sanity --local` on a copy of the tracked tree.
# ansible-test needs the collection at .../ansible_collections/gpufleet/acceptance and rejects
# directory links inside it, so it runs in a fresh copy (a temp dir per run: runs in parallel
# never share one). Usage: tests/tools/ansible_test_sanity.sh VENV_BIN PYTHON_VERSION
set -euo pipefail
bin_dir="$(cd "$1" && pwd)"
python_version="$2"
repo="$(cd "$(dirname "$0")/../.." && pwd)"

# ansible-test downloads a pip bootstrap script from a host these machines cannot reach;
# shared/tools holds a stand-in that bootstraps from the interpreter's own wheel.
if [[ -f "$repo/../shared/tools/get_pip_offline.py" ]]; then
    mkdir -p ~/.ansible/test/cache
    cp "$repo/../shared/tools/get_pip_offline.py" ~/.ansible/test/cache/get_pip_24_2.py
fi

work="$(mktemp -d /tmp/gpufleet-sanity.XXXXXX)"
trap 'rm -rf "$work"' EXIT
tree="$work/ansible_collections/gpufleet/acceptance"
mkdir -p "$tree"
(cd "$repo" && git ls-files -z --cached --others --exclude-standard | grep -zv '^collections/' \
    | xargs -0 cp --parents -t "$tree")
cd "$tree"
git init -q && git add -A
PATH="$bin_dir:$PATH" "$bin_dir/ansible-test" sanity --local --python "$python_version" --color no
