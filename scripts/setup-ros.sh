#!/usr/bin/env bash
# Install a real ROS 2 (Kilted) prefix from PyPI wheels into $REPO/.ros/prefix
# (a Python venv whose root is an ament prefix: share/, include/, lib/).
# Idempotent: a second run only checks a stamp file and exits in well under a second.
# Non-interactive (CI): never reads stdin.
# Afterwards: `source scripts/ros-env.sh` to build/run r2r programs.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PREFIX="${CONTACT_SIM_ROS_PREFIX:-$REPO/.ros/prefix}"
PYTHON="${CONTACT_SIM_PYTHON:-python3}"
STAMP="$PREFIX/.contact_sim_ready"

# ROS 2 Kilted wheels from PyPI (pinned so every machine gets the same prefix),
# plus rosbags (pure-Python bag reader used by tests).
PACKAGES=(
  ros-rclpy==9.1.2
  ros-rmw-fastrtps-cpp==9.3.3
  ros-builtin-interfaces==2.3.0
  ros-rcl-interfaces==2.3.0
  ros-action-msgs==2.3.0
  ros-unique-identifier-msgs==2.7.0
  ros-std-msgs==5.5.1
  ros-std-srvs==5.5.1
  ros-sensor-msgs==5.5.1
  ros-geometry-msgs==5.5.1
  ros-trajectory-msgs==5.5.1
  ros-rosgraph-msgs==2.3.0
  ros-visualization-msgs==5.5.1
  ros-diagnostic-msgs==5.5.1
  ros-nav-msgs==5.5.1
  rosbags==0.11.9
)
EXPECTED="$(printf '%s\n' "${PACKAGES[@]}")"

log() { printf 'setup-ros: %s\n' "$*"; }

have_libclang() {
  [ "$(dpkg-query -W -f='${Status}' libclang-dev 2>/dev/null || true)" = "install ok installed" ]
}

# Fast path: everything already done.
if have_libclang && [ -x "$PREFIX/bin/python" ] && [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$EXPECTED" ] \
   && [ -L "$PREFIX/lib/librmw_implementation.so" ] && [ -e "$PREFIX/lib/librmw_implementation.so" ]; then
  log "ROS 2 prefix ready at $PREFIX (nothing to do)"
  exit 0
fi

# 1. libclang-dev (bindgen in r2r's build scripts needs it).
if have_libclang; then
  log "libclang-dev already installed"
else
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo -n"; fi
  export DEBIAN_FRONTEND=noninteractive DEBCONF_NOWARNINGS=yes
  policy="$(apt-cache policy libclang-dev 2>/dev/null || true)"
  if [[ "$policy" != *"Candidate: "[0-9]* ]]; then
    log "apt-get update (libclang-dev not in the package lists)"
    $SUDO apt-get update -qq </dev/null >/dev/null
  fi
  log "apt-get install libclang-dev"
  $SUDO apt-get install -y -qq --no-install-recommends libclang-dev </dev/null >/dev/null
fi

# 2. The venv prefix.
if [ -x "$PREFIX/bin/python" ]; then
  log "venv already exists at $PREFIX"
else
  log "creating venv at $PREFIX with $("$PYTHON" --version 2>&1) ($(command -v "$PYTHON"))"
  mkdir -p "$(dirname "$PREFIX")"
  "$PYTHON" -m venv "$PREFIX"
fi

# 3. The wheels.
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$EXPECTED" ]; then
  log "ROS 2 wheels already installed"
else
  rm -f "$STAMP"
  log "pip install ${#PACKAGES[@]} packages (about a minute)"
  "$PREFIX/bin/pip" install --quiet --disable-pip-version-check --no-input "${PACKAGES[@]}" </dev/null
fi

# 4. r2r links -lrmw_implementation; the wheels link rcl straight to rmw_fastrtps_cpp
#    and ship no librmw_implementation.so.
if [ ! -e "$PREFIX/lib/librmw_fastrtps_cpp.so" ]; then
  log "ERROR: $PREFIX/lib/librmw_fastrtps_cpp.so missing after install" >&2
  exit 1
fi
log "linking lib/librmw_implementation.so -> librmw_fastrtps_cpp.so"
ln -sf librmw_fastrtps_cpp.so "$PREFIX/lib/librmw_implementation.so"

# 5. Stamp.
printf '%s\n' "$EXPECTED" > "$STAMP"
log "ROS 2 prefix ready at $PREFIX"
