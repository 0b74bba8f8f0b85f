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
# a file deleted in the work tree but still in the index is no part of the copy
(cd "$repo" && git ls-files -z --cached --others --exclude-standard | grep -zv '^collections/' \
    | while IFS= read -r -d '' path; do if [[ -e $path || -L $path ]]; then printf '%s\0' "$path"; fi; done \
    | xargs -0 cp --parents -t "$tree")
cd "$tree"
git init -q && git add -A

# The collection's controller plugins import the gpufleet library (the collection's requirements.txt),
# which ansible-test's import-test virtualenv does not install (it holds ansible-core's own needs only).
# Prime that virtualenv, then give it this tree's library and the library's third-party needs, as a
# controller that installed the collection and `pip install -r requirements.txt` has them.
PATH="$bin_dir:$PATH" "$bin_dir/ansible-test" sanity --local --python "$python_version" --test import --prime-venvs --color no >/dev/null
needs="$("$bin_dir/python" -c 'import sys, tomllib; deps = tomllib.load(open(sys.argv[1], "rb"))["project"]["dependencies"]
print(" ".join(d for d in deps if not d.startswith(("ansible-core", "ansible-runner"))))' "$tree/pyproject.toml")"
# That virtualenv has no pip: the needs are installed beside the tree and both reach it through a .pth file.
# shellcheck disable=SC2086  # one argument per requirement
"$bin_dir/python" -m pip install -q --disable-pip-version-check --target "$work/import-needs" $needs
for venv in ~/.ansible/test/venv/sanity.import.plugin/"$python_version"/*/; do
    site="$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
    printf '%s\n%s\n' "$tree" "$work/import-needs" >"$site/gpufleet-sanity.pth"
done
PATH="$bin_dir:$PATH" "$bin_dir/ansible-test" sanity --local --python "$python_version" --color no
