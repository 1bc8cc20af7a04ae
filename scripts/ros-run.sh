#!/usr/bin/env bash
# Starts contact_sim_node (release build) on the default scene together with a demo command
# publisher (scripts/ros_demo.py: the arm pushes the box, the quadruped crouches), and prints where
# to look. Ctrl-C stops both cleanly.
#   ./scripts/ros-run.sh                 # default scene, realtime, 1 kHz
#   ./scripts/ros-run.sh SCENE.yaml [--ros-args -p time_mode:=sim_time ...]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if ! command -v cargo >/dev/null 2>&1; then
    [ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH" || {
        echo "error: cargo not found: install the Rust toolchain (https://rustup.rs) first" >&2; exit 1; }
fi
./scripts/setup-ros.sh
# shellcheck source=scripts/ros-env.sh
source scripts/ros-env.sh
echo "== building contact_sim_node (release)"
cargo build --release --quiet --features ros --bin contact_sim_node
scene="${1:-config/default.yaml}"
[ $# -gt 0 ] && shift
extra=("$@")
[ ${#extra[@]} -eq 0 ] && extra=(--ros-args --params-file config/contact_sim_node.params.yaml)

target/release/contact_sim_node --scene "$scene" "${extra[@]}" &
node_pid=$!
python3 scripts/ros_demo.py "$scene" &
demo_pid=$!
stop() {
    trap - INT TERM
    echo; echo "== stopping"
    kill -INT "$demo_pid" 2>/dev/null || true
    kill -INT "$node_pid" 2>/dev/null || true
    wait "$demo_pid" 2>/dev/null || true
    wait "$node_pid" 2>/dev/null || true
    exit 0
}
trap stop INT TERM
cat <<INFO
== contact_sim_node is running on $scene (pid $node_pid); demo commands from scripts/ros_demo.py (pid $demo_pid)
   In another shell:  source scripts/ros-env.sh, then use rclpy (ros2cli is not on PyPI), e.g.
     python3 -c "import rclpy; from rclpy.node import Node; from sensor_msgs.msg import JointState as J; rclpy.init(); n=Node('look'); n.create_subscription(J,'/joint_states',lambda m: print(m.name[:3], [round(x,3) for x in m.position[:3]]),1); rclpy.spin(n)"
   Topics:   /joint_states (sensor_msgs/JointState, 1 kHz), /odom (nav_msgs/Odometry, quadruped base),
             /diagnostics (1 Hz: loop jitter p50/p99/max, overruns, rejected commands, solver stats, real-time factor)
   Commands: /joint_commands (sensor_msgs/JointState), /<robot>/commands (std_msgs/Float64MultiArray),
             /joint_trajectory (trajectory_msgs/JointTrajectory)
   Services: /contact_sim_node/reset, /contact_sim_node/pause (SetBool), /contact_sim_node/step
   Ctrl-C stops everything.
INFO
wait "$node_pid"
kill -INT "$demo_pid" 2>/dev/null || true
wait "$demo_pid" 2>/dev/null || true
