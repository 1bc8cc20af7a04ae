#!/usr/bin/env bash
# BENCHMARKS figure for the ROS node: contact_sim_node (release) in realtime mode at 1 kHz on the
# default scene for SECONDS (default 60); the latency probe (examples/ros_latency_probe.rs, r2r)
# sends effort commands at 100 Hz to finger_left_joint (its PD gains set to 0, so the measured
# effort echoes the command exactly) and times command publish -> /joint_states. Prints the
# round-trip p50/p99/max and the node's /diagnostics: loop jitter p50/p99/max, overruns.
#   ./scripts/ros-bench.sh [SECONDS] [extra node --ros-args, e.g. -p rt_policy:=fifo]
#   PROBE_PRIORITY=40 ./scripts/ros-bench.sh 60 -p ros_thread_priority:=40   # ROS side at SCHED_FIFO too
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
secs="${1:-60}"
[ $# -gt 0 ] && shift
./scripts/setup-ros.sh >/dev/null
# shellcheck source=scripts/ros-env.sh
source scripts/ros-env.sh
export ROS_DOMAIN_ID="${ROS_DOMAIN_ID:-$(( 101 + $$ % 60 ))}"
cargo build --release --quiet --features ros --bin contact_sim_node --example ros_latency_probe 2>/dev/null || cargo build --release --features ros --bin contact_sim_node --example ros_latency_probe
log="$(mktemp)"
target/release/contact_sim_node --scene config/default.yaml --ros-args \
    -p gains.finger_left_joint.kp:=0.0 -p gains.finger_left_joint.kd:=0.0 "$@" >"$log" 2>&1 &
node=$!
trap 'kill -INT $node 2>/dev/null || true; wait $node 2>/dev/null || true; rm -f "$log"' EXIT
echo "== load before: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) CPUs; ROS_DOMAIN_ID=$ROS_DOMAIN_ID"
# PROBE_PRIORITY=N runs the probe (a stand-in for a real-time controller) under SCHED_FIFO N
if [ -n "${PROBE_PRIORITY:-}" ]; then probe=(chrt -f "$PROBE_PRIORITY"); else probe=(); fi
"${probe[@]}" target/release/examples/ros_latency_probe --joint finger_left_joint --seconds "$secs" --rate-hz 100
echo "== load after: $(cut -d' ' -f1-3 /proc/loadavg)"
kill -INT $node; wait $node || true
grep -E "real-time loop|WARN|stopped after" "$log" || true
