#!/usr/bin/env bash
# Installs gpufleet both ways from a clean copy of the tree and checks that each works:
#   (a) `pip install COPY` (not editable) in a fresh venv, then `gpufleet demo` from another directory;
#   (b) `pip wheel --no-deps COPY`: the wheel carries a profile, a report template, and the
#       collection's playbooks and modules;
#   (c) `ansible-galaxy collection build` in the copy and `collection install -p DIR` of the tarball
#       (which must not carry the gpufleet library), then, with the library from (a) in the same venv,
#       `ansible-playbook gpufleet.acceptance.validate_cluster` by name against two hosts of the demo
#       inventory that (a) laid out, with no ansible.cfg: it must run the verdict phase and judge both.
# The copy is the tracked files plus the untracked ones git does not ignore (what a commit would
# hold), so nothing built in the checkout (.venv, collections/, tests/output) helps.
#
# Usage: tests/install/check_install.sh [REPO_ROOT]   (default: the repository holding this script)
# Environment: PYTHON (default python3), KEEP_WORKDIR=1 keeps the temporary directory.
set -euo pipefail

PYTHON=${PYTHON:-python3}
script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "${1:-$script_dir/../..}" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/gpufleet-install.XXXXXX")
copy=$work/src
venv=$work/venv
started=$SECONDS
step_started=$SECONDS

cleanup() {
    if [[ ${KEEP_WORKDIR:-0} == 1 ]]; then
        echo "check_install: kept $work"
    else
        rm -rf "$work"
    fi
}
trap cleanup EXIT

step() {
    step_started=$SECONDS
    echo "check_install: $*"
}

done_step() {
    echo "check_install:   ok ($((SECONDS - step_started)) s)"
}

fail() {
    echo "check_install: FAILED: $*" >&2
    exit 1
}

# Ansible must see only what each step sets up: no configuration or collections of the caller.
unset ANSIBLE_CONFIG ANSIBLE_COLLECTIONS_PATH ANSIBLE_COLLECTIONS_PATHS ANSIBLE_INVENTORY VIRTUAL_ENV

step "copying the tracked and untracked-not-ignored files of $repo"
mkdir -p "$copy"
(
    cd "$repo"
    # a file deleted in the work tree but still in the index is no part of the copy
    git ls-files -z --cached --others --exclude-standard |
        while IFS= read -r -d '' path; do
            if [[ -e $path || -L $path ]]; then printf '%s\0' "$path"; fi
        done |
        tar --null --files-from=- -cf -
) | tar -xf - -C "$copy"
echo "check_install:   $(find "$copy" -type f | wc -l) files"
# Every later step runs from here: an ansible.cfg where the script was started (the checkout's names
# its collections/ link, where gpufleet.acceptance already is) must not take part.
cd "$work"
done_step

# (a) pip install, then the demo from a directory that is neither the copy nor the checkout
step "(a) fresh venv, pip install $copy (not editable)"
"$PYTHON" -m venv "$venv"
"$venv/bin/pip" install -q "$copy"
bundled=$("$venv/bin/python" -c \
    'from gpufleet import collection; print(collection.collection_root() if collection.is_bundled() else "")')
[[ $bundled == "$venv"/* ]] ||
    fail "the installed gpufleet does not find its collection copy in the venv (got '$bundled')"
echo "check_install:   collection copy: $bundled"
done_step

step "(a) gpufleet demo from another directory"
elsewhere=$work/elsewhere
mkdir -p "$elsewhere"
set +e
(cd "$elsewhere" && "$venv/bin/gpufleet" demo >"$work/demo.out" 2>"$work/demo.err")
demo_rc=$?
set -e
tail -n 25 "$work/demo.out"
if [[ $demo_rc != 0 ]]; then
    tail -n 40 "$work/demo.err" >&2
    fail "gpufleet demo exited $demo_rc"
fi
grep -qE '\bACCEPT\b' "$work/demo.out" || fail "the demo summary shows no ACCEPT verdict"
grep -qE '\bREJECT\b' "$work/demo.out" || fail "the demo summary shows no REJECT verdict"
grep -qE '^fleet (ACCEPT|REJECT)' "$work/demo.out" || fail "the demo printed no fleet line"
# no ansible.cfg where it ran: the collection's own settings (forks, pipelining, ssh keepalives, the exit-code
# callback) are used, from the wheel's copy, and said
grep -qE "^gpufleet: Ansible settings from $venv/.*/gpufleet/_collection/ansible_collections/gpufleet/acceptance/ansible\.cfg \(the collection's" \
    "$work/demo.err" || fail "gpufleet demo did not use the collection's ansible.cfg: $(grep -m1 'Ansible settings' "$work/demo.err")"
demo_workdir=$elsewhere/gpufleet-demo
demo_inventory=$demo_workdir/inventories/simulated/hosts.yml
[[ -f $demo_inventory ]] || fail "no demo inventory copied to $demo_inventory"
[[ -d $demo_workdir/tests/output/simulated ]] || fail "no fleet built in $demo_workdir/tests/output/simulated"
compgen -G "$demo_workdir/results/*/fleet.json" >/dev/null ||
    fail "no results with fleet.json in $demo_workdir/results/"
done_step

# (b) the wheel's contents
step "(b) pip wheel --no-deps"
"$venv/bin/pip" wheel -q --no-deps -w "$work/dist" "$copy"
wheels=("$work"/dist/gpufleet-*.whl)
[[ -f ${wheels[0]} ]] || fail "pip wheel made no gpufleet wheel"
unzip -l "${wheels[0]}" >"$work/wheel.txt"
bundle_prefix=gpufleet/_collection/ansible_collections/gpufleet/acceptance
for pattern in 'gpufleet/profiles/[^/]+\.yml$' \
    'gpufleet/report/templates/[^/]+\.j2$' \
    "$bundle_prefix/playbooks/validate_cluster\\.yml\$" \
    "$bundle_prefix/plugins/modules/node_facts\\.py\$" \
    "$bundle_prefix/galaxy\\.yml\$" \
    "$bundle_prefix/ansible\\.cfg\$"; do
    grep -qE "$pattern" "$work/wheel.txt" || fail "the wheel has no file matching $pattern"
done
# Every file of the library (a package-data pattern pyproject.toml lacks leaves one out).
(cd "$copy" && find gpufleet -type f ! -path '*/__pycache__/*' ! -name '*.py[co]' | sort) >"$work/library-files.txt"
awk '{print $4}' "$work/wheel.txt" | sort >"$work/wheel-files.txt"
missing=$(comm -23 "$work/library-files.txt" "$work/wheel-files.txt")
[[ -z $missing ]] ||
    fail "the wheel lacks these files of gpufleet/ (package data in pyproject.toml?): $(echo "$missing" | tr '\n' ' ')"
echo "check_install:   $(basename "${wheels[0]}"): $(wc -l <"$work/library-files.txt") library files," \
    "$(grep -c "$bundle_prefix/" "$work/wheel.txt") collection files"
done_step

# (c) the Galaxy route: the collection artifact, installed by name, the library from pip
step "(c) ansible-galaxy collection build and install -p"
(cd "$copy" && "$venv/bin/ansible-galaxy" collection build --output-path "$work/galaxy" >/dev/null)
tarballs=("$work"/galaxy/gpufleet-acceptance-*.tar.gz)
[[ -f ${tarballs[0]} ]] || fail "ansible-galaxy collection build made no tarball"
tar -tzf "${tarballs[0]}" >"$work/galaxy.txt"
for unwanted in '^gpufleet/' '^tests/output/' '^build/' '\.egg-info/' '^benchmarks/' '^setup\.py$'; do
    if grep -qE "$unwanted" "$work/galaxy.txt"; then
        fail "the collection artifact carries $unwanted (galaxy.yml build_ignore)"
    fi
done
grep -qx 'playbooks/validate_cluster.yml' "$work/galaxy.txt" ||
    fail "the collection artifact has no playbooks/validate_cluster.yml"
# --force: a gpufleet.acceptance already in the user's collections path (~/.ansible/collections) would otherwise make
# ansible-galaxy say "already installed" and put nothing in DIR
"$venv/bin/ansible-galaxy" collection install --force -p "$work/collections" "${tarballs[0]}" >/dev/null
installed=$work/collections/ansible_collections/gpufleet/acceptance
[[ -f $installed/MANIFEST.json ]] || fail "ansible-galaxy collection install put nothing in $installed"
echo "check_install:   $(basename "${tarballs[0]}"): $(wc -l <"$work/galaxy.txt") entries"
done_step

step "(c) ansible-playbook gpufleet.acceptance.validate_cluster on the demo inventory"
galaxy_results=$work/galaxy-results
# Two hosts of the demo fleet, one it accepts and one it rejects: every host runs the same modules, and (a) ran the
# whole fleet already
galaxy_hosts=della-h100-1gpu,frontend-1g-copper
set +e
(
    cd "$elsewhere"
    [[ ! -e ansible.cfg ]] || fail "$elsewhere has an ansible.cfg"
    ANSIBLE_COLLECTIONS_PATH=$work/collections ANSIBLE_NOCOLOR=1 \
        "$venv/bin/ansible-playbook" gpufleet.acceptance.validate_cluster -i "$demo_inventory" \
        --limit "$galaxy_hosts" -e "gpufleet_results_dir=$galaxy_results" -e gpufleet_fail_on_verdict=false \
        >"$work/playbook.out" 2>&1
)
playbook_rc=$?
set -e
tail -n 15 "$work/playbook.out"
# the demo fleet rejects nodes on purpose: report-only (gpufleet_fail_on_verdict=false), so any non-zero exit is a failure
[[ $playbook_rc == 0 ]] || fail "ansible-playbook exited $playbook_rc"
grep -q 'TASK \[Verdict | judge the whole fleet' "$work/playbook.out" ||
    fail "the playbook did not run the verdict phase"
# Fact failures are recorded and ignored by the playbook; one naming a file of the installed venv is
# an installation fault (a file the wheel lacks), not a node's.
if grep -E 'FAILED!|ERROR' "$work/playbook.out" | grep -qF "$venv/"; then
    grep -E 'FAILED!|ERROR' "$work/playbook.out" | grep -F "$venv/" | head -n 5 >&2
    fail "a task failed on a file of the installed venv"
fi
[[ -f $galaxy_results/fleet.json ]] || fail "no fleet.json in $galaxy_results"
for host in ${galaxy_hosts//,/ }; do
    [[ -f $galaxy_results/hosts/$host.json ]] || fail "no record of $host in $galaxy_results/hosts"
done
grep -qF "$installed/playbooks" "$galaxy_results/run.json" ||
    fail "run.json does not name the Galaxy-installed playbook"
done_step

echo "check_install: all passed in $((SECONDS - started)) s"
