#!/usr/bin/env bash
# ROS 2 integration tests of contact_sim_node over real DDS (loopback only).
# Installs the ROS 2 prefix if needed (scripts/setup-ros.sh), sources scripts/ros-env.sh, then runs
# the node's unit tests and tests/ros_node.rs (node binary + rclpy peers) with the `ros` feature.
#   ./scripts/ros-test.sh            # release build (default, as scripts/test)
#   ./scripts/ros-test.sh --debug    # debug build
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if ! command -v cargo >/dev/null 2>&1; then
    [ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH" || {
        echo "error: cargo not found: install the Rust toolchain (https://rustup.rs) first" >&2; exit 1; }
fi
profile=(--release)
if [ "${1:-}" = "--debug" ]; then profile=(); fi

./scripts/setup-ros.sh
# shellcheck source=scripts/ros-env.sh
source scripts/ros-env.sh

echo "== ROS node unit tests (rt::, ros::)"
cargo test "${profile[@]}" --features ros --lib -- rt:: ros::
echo "== allocation-free RT loop"
cargo test "${profile[@]}" --features ros --test rt_no_alloc
echo "== bags: the rosbags Python package reads what we write (tests/bag.rs)"
CONTACT_SIM_REQUIRE_ROSBAGS=1 CONTACT_SIM_PYTHON="${CONTACT_SIM_ROS_PREFIX:-$PWD/.ros/prefix}/bin/python3" \
    cargo test "${profile[@]}" --features ros --test bag rosbags
echo "== contact_sim_node over DDS (tests/ros_node.rs)"
cargo test "${profile[@]}" --features ros --test ros_node -- --test-threads=1
