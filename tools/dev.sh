#!/usr/bin/env bash
# The two set-up commands of the README, on a fresh Debian 12 machine:
#   tools/dev.sh demo   build, then the main job on the built-in workload (proxies through the
#                       baseline and tnbc passes on the emulated network, comparison table)
#   tools/dev.sh test   build, then the whole test suite (unit, MPI integration, harness, trace),
#                       then the MPI integration suite again in two more builds (docs/testing.md):
#                       BUILD-asan (ASan+UBSan) and BUILD-mpich (MPICH instead of Open MPI).
#                       DEV_TEST_ASAN=0 / DEV_TEST_MPICH=0 leave one out.
#   tools/dev.sh test MESON_TEST_OPTIONS...   only the main build, with these options
#   tools/dev.sh bench-tools   optional: installs what the benchmarks' breakdowns use (perf)
# Missing Debian packages are installed first (as root, or through sudo).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${TNBC_BUILD_DIR:-build}

sudo_cmd=()
[[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
install_missing() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  ((${#missing[@]})) || return 0
  echo "tnbc: installing Debian packages: ${missing[*]}"
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
}

# Installing MPICH registers Debian alternatives for mpicc/mpif90, mpirun and mpi.h. Open MPI
# must stay the default for everyone else on the machine: put back any that moved.
keep_openmpi_default() {
  local arch name target name_target
  arch=$(gcc -print-multiarch)
  for name_target in "mpi=/usr/bin/mpicc.openmpi" "mpirun=/usr/bin/mpirun.openmpi" \
                     "mpi-$arch=/usr/lib/$arch/openmpi/include"; do
    name=${name_target%%=*}
    target=${name_target#*=}
    [[ -e $target ]] || continue
    if [[ $(update-alternatives --query "$name" 2>/dev/null | sed -n 's/^Value: //p') != "$target" ]]; then
      echo "tnbc: the alternative $name moved away from Open MPI; setting it back to $target"
      "${sudo_cmd[@]}" update-alternatives --set "$name" "$target" >/dev/null
    fi
  done
}

# What the build and the demo need. libucx-dev: UCX's memory events (meson option ucx; without
# them tnbc runs every collective blocking when the MPI library uses UCX). make: the harness
# builds NPB from a source tree with it (--npb-src). libdw-dev: `tnbc report` names the call
# sites' file:line from debug information (elfutils). libsimgrid-dev: `tnbc predict --profile`
# simulates the program at scale with SimGrid (S4U).
install_missing g++ gfortran pkg-config python3 meson ninja-build make openmpi-bin libopenmpi-dev \
                libucx-dev libunwind-dev libdw-dev catch2 iproute2 libsimgrid-dev

# Optional, for benchmarking only (nothing in the build, the demo or the tests needs them):
# linux-perf: `perf record -a` for the CPU breakdown of docs/benchmarks.md ("Core efficiency").
if [[ ${1:-} == bench-tools ]]; then
  install_missing linux-perf
  exit 0
fi

# Open MPI refuses to run as root unless told so (containers and CI run as root).
if [[ $(id -u) -eq 0 ]]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi

# Every build made here requires UCX support (-Ducx=enabled): a machine without UCX's headers
# stops at configure time, with meson's reason, instead of testing a tnbc that runs blocking
# under UCX. An existing build dir gets the option once (reconfiguring costs a regeneration);
# `setup --reconfigure` rather than `configure`: a build dir made before an option existed
# (e.g. an older checkout) does not know it yet and must re-read meson_options.txt.
setup_build() {
  local dir=$1 log
  shift
  log=$(mktemp)
  if [[ ! -f "$dir/build.ninja" ]]; then
    meson setup "$dir" -Ducx=enabled "$@" >"$log" 2>&1 || { grep -E "ERROR|WARNING" "$log" >&2; rm -f "$log"; return 1; }
  elif ! grep -q '"name": "ucx", "value": "enabled"' "$dir/meson-info/intro-buildoptions.json" 2>/dev/null; then
    meson setup --reconfigure "$dir" -Ducx=enabled >"$log" 2>&1 || { grep -E "ERROR|WARNING" "$log" >&2; rm -f "$log"; return 1; }
  fi
  rm -f "$log"
}

# -g1 (line tables: backtraces and tnbc's own file:line stay; no variables for a debugger): the
# build compiles ~22 % quicker than with -g (session 66, a fresh build on 2 CPUs: 182 s against
# 234 s). To debug tnbc itself: meson configure "$BUILD" -Dc_args= -Dcpp_args= (full -g).
# -Dunity=on (every build made here): meson compiles a target's files four at a time, each
# header parsed once per four: a fresh main build 198 -> 145 s, the ASan one 173 -> 85, MPICH's
# 112 -> 58 (2 CPUs, docs/testing.md). The unit tests stay one file at a time (their own header
# is precompiled); file-local names must not clash within a target (the build says where).
setup_build "$BUILD" -Dc_args=-g1 -Dcpp_args=-g1 -Dunity=on
ninja -C "$BUILD" >/dev/null

# Tests marked is_parallel (the offline tools' tests, and MPI tests that mostly wait for a timeout)
# run up to this many at once; every other test runs alone (is_parallel : false).
test_jobs=(--num-processes 6)

# One more build dir that runs only the MPI integration suite: set up, build what the suite
# needs (the `mpi-tests` and `cluster-tests` aliases), run it. Its log joins `logs`; a build
# that fails counts as one failed test. Never stops the script.
logs=("$BUILD/meson-logs/testlog.json")
status=0
broken=0
extra_suite() {
  local dir=$1 label=$2
  shift 2
  echo "tnbc: MPI integration suite, $label ($dir)"
  if ! setup_build "$dir" "$@" || ! ninja -C "$dir" mpi-tests cluster-tests >/dev/null; then
    echo "tnbc: the $label build failed"
    broken=$((broken + 1))
    status=1
    return
  fi
  logs+=("$dir/meson-logs/testlog.json")
  meson test -C "$dir" --no-rebuild --print-errorlogs "${test_jobs[@]}" --suite mpi || status=1
}

case "${1:-}" in
  demo)
    shift
    # Default workload: the built-in proxies, class W — FT's, IS's and the broadcast-heavy one, whose
    # overlap pays where FT's and IS's mostly cannot (docs/benchmarks.md) — on an emulated cluster
    # that fits this machine: one rank per CPU, one emulated node per rank, a Gigabit link (the
    # harness's defaults; --shared-node: all ranks on one node). 6 repetitions:
    # speedups.min_repetitions at the harness's default confidence (0.95), the fewest whose median
    # gets an interval and a verdict (docs/harness.md). Later options win.
    set -- --benchmarks bcast,ft,is --classes W --repeat 6 "$@"
    exec python3 npb-harness/harness.py --tnbc "$BUILD/tools/tnbc" --build-dir "$BUILD" "$@"
    ;;
  test)
    shift
    # The Slurm test (tests/cluster) runs its own one-node cluster: slurmctld, slurmd, munged.
    # chromium: the report test renders the HTML report in a real (headless) browser.
    install_missing slurm-wlm munge chromium
    meson test -C "$BUILD" --print-errorlogs "${test_jobs[@]}" "$@" || status=$?
    if [[ $# -eq 0 && ${DEV_TEST_ASAN:-1} != 0 ]]; then
      # -O0 (buildtype debug) builds in less than half the CPU time and gives ASan its best reports;
      # -g1 (line tables: the reports keep file:line) compiles ~30 % quicker than -g.
      extra_suite "$BUILD-asan" "ASan+UBSan" -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debug \
                  -Dc_args=-g1 -Dcpp_args=-g1 -Dunity=on
    fi
    if [[ $# -eq 0 && ${DEV_TEST_MPICH:-1} != 0 ]]; then
      if install_missing mpich libmpich-dev && keep_openmpi_default; then
        # No debug information (compiles ~30 % quicker; asserts stay): no test there reads it
        # but report-real, whose program is built with -g itself. -O1: ~20 % less compile than
        # -O2 (docs/testing.md); the suite checks results and messages, not speed.
        extra_suite "$BUILD-mpich" "MPICH" -Dmpi=mpich -Ddebug=false -Doptimization=1 -Dunity=on
      else
        echo "tnbc: MPICH could not be installed"
        broken=$((broken + 1))
        status=1
      fi
    fi
    # One closing line that CI (and people) can read, from meson's own logs.
    python3 - "$broken" "${logs[@]}" <<'PY'
import json, sys
counts = {"BROKEN BUILD": int(sys.argv[1])}
for path in sys.argv[2:]:
    for line in open(path):
        r = json.loads(line)["result"]
        counts[r] = counts.get(r, 0) + 1
ok = counts.get("OK", 0) + counts.get("EXPECTEDFAIL", 0)
skipped = counts.get("SKIP", 0)
failed = sum(n for r, n in counts.items() if r not in ("OK", "EXPECTEDFAIL", "SKIP"))
print(f"tests: {ok} passed, {failed} failed, {skipped} skipped")
PY
    exit $status
    ;;
  *)
    echo "usage: tools/dev.sh demo [harness options] | test [meson test options] | bench-tools" >&2
    exit 2
    ;;
esac
