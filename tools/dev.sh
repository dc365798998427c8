#!/usr/bin/env bash
# The two set-up commands of the README, on a fresh Debian 12 machine:
#   tools/dev.sh demo   build, then the main job on the built-in workload (proxies through the
#                       baseline and tnbc passes on the emulated network, comparison table)
#   tools/dev.sh test   build, then the whole test suite (unit, MPI integration, harness, trace)
# Missing Debian packages are installed first (as root, or through sudo).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${TNBC_BUILD_DIR:-build}

packages=(g++ gfortran pkg-config python3 meson ninja-build openmpi-bin libopenmpi-dev
          libunwind-dev catch2 iproute2)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "tnbc: installing Debian packages: ${missing[*]}"
  sudo_cmd=()
  [[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# Open MPI refuses to run as root unless told so (containers and CI run as root).
if [[ $(id -u) -eq 0 ]]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi

[[ -f "$BUILD/build.ninja" ]] || meson setup "$BUILD" >/dev/null
ninja -C "$BUILD" >/dev/null

case "${1:-}" in
  demo)
    shift
    # Default workload: the built-in proxies, class W, each pass twice (about a minute).
    [[ $# -gt 0 ]] || set -- --classes W --repeat 2
    exec python3 npb-harness/harness.py --tnbc "$BUILD/tools/tnbc" --build-dir "$BUILD" "$@"
    ;;
  test)
    shift
    status=0
    meson test -C "$BUILD" --print-errorlogs --num-processes 1 "$@" || status=$?
    # One closing line that CI (and people) can read, from meson's own log.
    python3 - "$BUILD/meson-logs/testlog.json" <<'PY'
import json, sys
counts = {}
for line in open(sys.argv[1]):
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
    echo "usage: tools/dev.sh demo [harness options] | test [meson test options]" >&2
    exit 2
    ;;
esac
