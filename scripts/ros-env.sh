# shellcheck shell=bash
# Environment for building and running r2r programs (and rclpy peers) against the
# ROS 2 prefix that scripts/setup-ros.sh installs in $REPO/.ros/prefix.
#
#   source scripts/ros-env.sh      # from any directory; safe to source repeatedly
#
# Only `return`s on error (never exits the calling shell). Needs bash (BASH_SOURCE).

if [ -z "${BASH_VERSION:-}" ]; then
  echo "ros-env.sh: source this from bash" >&2
  return 1
fi

_cs_repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
_cs_prefix="${CONTACT_SIM_ROS_PREFIX:-$_cs_repo/.ros/prefix}"

if [ ! -x "$_cs_prefix/bin/python" ] || [ ! -e "$_cs_prefix/lib/librmw_implementation.so" ]; then
  echo "ros-env.sh: no ROS 2 prefix at $_cs_prefix; run scripts/setup-ros.sh first" >&2
  unset _cs_repo _cs_prefix
  return 1
fi

# Prepend a directory to a colon-separated variable, dropping an earlier copy of it.
_cs_prepend() {
  local var="$1" dir="$2" cur
  cur=":${!var:-}:"
  cur="${cur//:$dir:/:}"
  cur="${cur#:}"; cur="${cur%:}"
  printf -v "$var" '%s' "$dir${cur:+:$cur}"
  export "${var?}"
}

export CONTACT_SIM_ROS_PREFIX="$_cs_prefix"
_cs_prepend AMENT_PREFIX_PATH "$_cs_prefix"
_cs_prepend CMAKE_PREFIX_PATH "$_cs_prefix"
_cs_prepend PATH "$_cs_prefix/bin"

# The wheels are ROS 2 Kilted, but r2r 0.9.7 only accepts ROS_DISTRO in
# {foxy, galactic, humble, iron, jazzy, lyrical, rolling}: its build scripts panic with
# "ROS_DISTRO not supported: kilted". The bindings are generated from the installed headers;
# jazzy (the closest API) builds and talks to Kilted's rclpy over DDS.
export ROS_DISTRO=jazzy
# The wheels link rcl straight to Fast DDS; setup-ros.sh links librmw_implementation.so to it.
export RMW_IMPLEMENTATION=rmw_fastrtps_cpp
# Keep DDS discovery on this machine (tests and CI must stay on loopback).
# Override after sourcing (e.g. SUBNET) to talk to a real robot.
export ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST

# Message packages r2r generates bindings for (every extra package costs build time; list
# dependencies too: r2r does not follow them). r2r always adds rcl_interfaces,
# builtin_interfaces, unique_identifier_msgs and action_msgs itself (it needs them for
# parameters and actions). Changing this string rebuilds r2r (about 2 minutes).
export IDL_PACKAGE_FILTER="std_msgs;builtin_interfaces;sensor_msgs;geometry_msgs;trajectory_msgs;rosgraph_msgs;visualization_msgs;diagnostic_msgs;std_srvs;nav_msgs;rcl_interfaces;tf2_msgs"

# libpython: rcl from the wheels loads a Python type-support library at run time and needs
# libpython's symbols (else "undefined symbol: PyExc_RuntimeError"). build.rs links this file.
_cs_pylib="$("$_cs_prefix/bin/python" - <<'EOF'
import os, sysconfig
v = sysconfig.get_config_var
dirs = [v("LIBDIR") or ""]
if v("MULTIARCH"):
    dirs.append(os.path.join(v("LIBDIR") or "", v("MULTIARCH")))
for d in dirs:
    for n in (v("LDLIBRARY"), v("INSTSONAME")):
        if n and (n.endswith(".so") or ".so." in n):
            p = os.path.join(d, n)
            if os.path.exists(p):
                print(p)
                raise SystemExit
EOF
)"
if [ -z "$_cs_pylib" ]; then
  echo "ros-env.sh: shared libpython not found for $_cs_prefix/bin/python" >&2
else
  export CONTACT_SIM_LIBPYTHON="$_cs_pylib"
  _cs_prepend LD_LIBRARY_PATH "$(dirname "$_cs_pylib")"
fi

# Run-time search path: the prefix's lib/ and the ROS wheels' vendored ros_*.libs dirs.
for _cs_d in "$_cs_prefix"/lib/python3*/site-packages/ros_*.libs; do
  [ -d "$_cs_d" ] && _cs_prepend LD_LIBRARY_PATH "$_cs_d"
done
_cs_prepend LD_LIBRARY_PATH "$_cs_prefix/lib"

unset _cs_repo _cs_prefix _cs_pylib _cs_d
unset -f _cs_prepend
return 0 2>/dev/null || true
