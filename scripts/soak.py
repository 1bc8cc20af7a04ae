#!/usr/bin/env python3
"""Soak test of contact_sim_node under a command flood (rclpy; run it through scripts/soak).

    scripts/soak [--duration S] [--rate-hz HZ] [--publishers N] [--bad-share F] [--json OUT]

Starts the node (realtime, 1 kHz, the default scene, recording a bag) and floods
`joint_commands` from several publishers at a total of --rate-hz JointState messages per second
(default 10 000), a share --bad-share of them malformed (unknown joint, length mismatch, NaN,
beyond the joint limits). Samples the node's resident memory every 5 s and its /diagnostics, and
at the end stops it with SIGINT and counts the bag's messages. Prints and optionally writes:
memory at start and end (and its growth over the second half of the run), commands
received / applied / rejected / dropped, cycles, overruns, worst execution time, bag messages
recorded and dropped. Exit 1 when memory grows by more than 10 % over the second half, when the
node died, or when the bag lost messages.
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from rclpy.node import Node
from sensor_msgs.msg import JointState

REPO = Path(__file__).resolve().parent.parent
ARM = ["arm_joint1", "arm_joint2", "arm_joint3", "arm_joint4", "arm_joint5", "arm_joint6", "arm_joint7"]


def rss_kib(pid):
    """Resident set size of a process (KiB), None when it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def command(k, bad_share):
    """The k-th flood message: a valid position target for the arm, or one of four malformed ones."""
    msg = JointState()
    msg.name = list(ARM)
    msg.position = [0.0, 0.1 + 1e-4 * (k % 100), 0.0, 2.0, 0.0, 1.0, 0.0]
    if (k * 7919) % 1000 < bad_share * 1000:
        kind = k % 4
        if kind == 0:
            msg.name[0] = "no_such_joint"
        elif kind == 1:
            msg.position = msg.position[:-1]
        elif kind == 2:
            msg.position[3] = float("nan")
        else:
            msg.position[3] = 1e3  # beyond the joint's limits
    return msg


class Watcher(Node):
    """Subscribes to the node's diagnostics; keeps the latest values by key."""

    def __init__(self):
        super().__init__("soak_watcher")
        self.latest = {}
        # the worst cycle of every statistics period: (µs, cause, description)
        self.worst = []
        self.create_subscription(DiagnosticArray, "diagnostics", self.on_diag, 10)

    def on_diag(self, msg):
        for st in msg.status:
            values = {kv.key: kv.value for kv in st.values}
            self.latest.update(values)
            if "worst_cycle_us" in values and values.get("worst_cycle", "none") != "none":
                self.worst.append((float(values["worst_cycle_us"]), values.get("worst_cycle_cause", ""), values["worst_cycle"]))


def flood(rate_hz, publishers, bad_share, stop, sent):
    """Publishes from `publishers` publishers, round robin, at `rate_hz` in total."""
    node = Node("soak_flood")
    pubs = [node.create_publisher(JointState, "joint_commands", 100) for _ in range(publishers)]
    period = 1.0 / rate_hz
    k = 0
    t_next = time.perf_counter()
    while not stop.is_set():
        pubs[k % publishers].publish(command(k, bad_share))
        k += 1
        sent[0] = k
        t_next += period
        delay = t_next - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        elif delay < -0.1:
            t_next = time.perf_counter()  # fell behind: do not burst
    node.destroy_node()


def over_1ms_by_cause(worst):
    """How many statistics periods had a worst cycle over 1 ms (the 1 kHz period), by cause."""
    out = {}
    for us, cause, _ in worst:
        if us > 1000.0:
            out[cause] = out.get(cause, 0) + 1
    return out


def bag_counts(bag_dir):
    """Message count per topic of the bag's metadata.yaml (rosbag2 layout)."""
    import yaml

    meta = yaml.safe_load((Path(bag_dir) / "metadata.yaml").read_text())
    info = meta["rosbag2_bagfile_information"]
    return {t["topic_metadata"]["name"]: t["message_count"] for t in info["topics_with_message_count"]}, info["message_count"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--duration", type=float, default=3600.0, help="seconds (default 3600)")
    ap.add_argument("--rate-hz", type=float, default=10000.0, help="total command rate (default 10 000 /s)")
    ap.add_argument("--publishers", type=int, default=4)
    ap.add_argument("--bad-share", type=float, default=0.1, help="share of malformed commands (default 0.1)")
    ap.add_argument("--node-bin", default=str(REPO / "target/release/contact_sim_node"))
    ap.add_argument("--scene", default=str(REPO / "config/default.yaml"))
    ap.add_argument("--json", help="write the figures here")
    ap.add_argument("--keep-bag", action="store_true", help="keep the recorded bag (about 4 GB per 15 min) instead of deleting it")
    args = ap.parse_args()

    bag_dir = Path(tempfile.mkdtemp(prefix="contact_sim_soak_")) / "bag"
    node = subprocess.Popen(
        [args.node_bin, "--scene", args.scene, "--ros-args", "--params-file", str(REPO / "config/contact_sim_node.params.yaml"), "-p", f"record_bag:={bag_dir}", "-p", "watchdog_timeout_s:=0.0"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    rclpy.init()
    watcher = Watcher()
    executor = rclpy.executors.MultiThreadedExecutor()
    executor.add_node(watcher)
    spin = threading.Thread(target=executor.spin, daemon=True)
    spin.start()
    time.sleep(3.0)  # node start-up (scene load, DDS discovery)
    stop, sent = threading.Event(), [0]
    flooder = threading.Thread(target=flood, args=(args.rate_hz, args.publishers, args.bad_share, stop, sent), daemon=True)
    start = time.monotonic()
    flooder.start()
    memory = []  # (t, KiB)
    while time.monotonic() - start < args.duration and node.poll() is None:
        kib = rss_kib(node.pid)
        if kib is not None:
            memory.append((time.monotonic() - start, kib))
        time.sleep(min(5.0, max(0.1, args.duration - (time.monotonic() - start))))
    stop.set()
    flooder.join(timeout=5)
    time.sleep(2.0)  # the last diagnostics period
    diag = dict(watcher.latest)
    alive = node.poll() is None
    if alive:
        node.send_signal(signal.SIGINT)
    try:
        _, err = node.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        node.kill()
        _, err = node.communicate()
    executor.shutdown()
    rclpy.shutdown()

    half = [k for (t, k) in memory if t >= args.duration / 2]
    growth = (half[-1] - half[0]) / half[0] if len(half) >= 2 else 0.0
    counts, total = bag_counts(bag_dir) if (bag_dir / "metadata.yaml").exists() else ({}, 0)
    bag_files = sorted(p.name for p in bag_dir.glob("*.mcap")) if bag_dir.exists() else []
    bag_bytes = sum((bag_dir / f).stat().st_size for f in bag_files)
    if not args.keep_bag:
        shutil.rmtree(bag_dir.parent, ignore_errors=True)
    # resident memory once a minute (the trace of any growth)
    memory_per_minute = {}
    for t, k in memory:
        memory_per_minute.setdefault(int(t // 60), [round(t), k])
    memory_per_minute = list(memory_per_minute.values())
    figures = {
        "duration_s": round(time.monotonic() - start, 1),
        "commands_sent": sent[0],
        "command_rate_hz": args.rate_hz,
        "bad_share": args.bad_share,
        "rss_start_kib": memory[0][1] if memory else None,
        "rss_end_kib": memory[-1][1] if memory else None,
        "rss_growth_second_half": round(growth, 4),
        "node_alive_at_end": alive,
        "diagnostics": {k: diag.get(k) for k in ["cycles", "overruns", "skipped_deadlines", "exec_mean_us", "exec_max_us", "jitter_max_us", "commands_received", "commands_applied", "commands_rejected", "commands_dropped", "samples_dropped", "bag_messages_dropped", "bag_queue_peak_bytes", "unconverged_steps", "failed_steps"]},
        "periods_with_a_cycle_over_1ms_by_cause": over_1ms_by_cause(watcher.worst),
        "slowest_cycles": [d for (_, _, d) in sorted(set(watcher.worst), reverse=True)[:5]],
        "bag_messages": total,
        "bag_joint_commands": counts.get("/joint_commands", counts.get("joint_commands")),
        "bag_joint_states": counts.get("/joint_states", counts.get("joint_states")),
        "bag_files": len(bag_files),
        "bag_bytes": bag_bytes,
        "rss_kib_per_minute": memory_per_minute,
    }
    print(json.dumps(figures, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n")
    problems = []
    if not alive:
        problems.append(f"the node died: {err[-500:]}")
    if growth > 0.10:
        problems.append(f"memory grew {100 * growth:.1f} % over the second half")
    if diag.get("bag_messages_dropped") not in (None, "0"):
        problems.append(f"the bag dropped {diag['bag_messages_dropped']} messages")
    received = diag.get("commands_received")
    if received is not None and figures["bag_joint_commands"] is not None and int(received) != figures["bag_joint_commands"]:
        problems.append(f"the node received {received} commands but the bag holds {figures['bag_joint_commands']}")
    for p in problems:
        print("soak: " + p, file=sys.stderr)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
