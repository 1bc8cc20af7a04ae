#!/usr/bin/env python3
"""Demo command publisher for contact_sim_node (rclpy).

    python3 scripts/ros_demo.py [SCENE.yaml]   (default: config/default.yaml)

Replays the scene's `script` keyframes (position targets, linearly interpolated) as
sensor_msgs/JointState commands on `joint_commands` at 100 Hz, like a ros2_control
topic-based hardware interface would: on the default scene the arm pushes the box and the
quadruped crouches and rises. At the start of every cycle it calls ~/reset. Ctrl-C stops it.
"""
import signal
import sys
import time
from pathlib import Path

import rclpy
import yaml
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_srvs.srv import Trigger

RATE_HZ = 100.0


def tracks(script):
    """joint -> [(t, q)] from the keyframes."""
    out = {}
    for k in script:
        for j, q in (k.get("positions") or {}).items():
            out.setdefault(j, []).append((float(k["time_s"]), float(q)))
    return out


def sample(track, t):
    if t <= track[0][0]:
        return track[0][1]
    for (t0, q0), (t1, q1) in zip(track, track[1:]):
        if t < t1:
            return q0 + (q1 - q0) * (t - t0) / (t1 - t0) if t1 > t0 else q1
    return track[-1][1]


def main():
    scene = Path(sys.argv[1] if len(sys.argv) > 1 else "config/default.yaml")
    doc = yaml.safe_load(scene.read_text())
    tr = tracks(doc.get("script") or [])
    if not tr:
        print(f"ros_demo: {scene} has no script keyframes to replay", file=sys.stderr)
        return 1
    duration = float(doc.get("duration_s") or max(t for track in tr.values() for t, _ in track) + 1.0)
    rclpy.init()
    node = Node("contact_sim_demo")
    pub = node.create_publisher(JointState, "joint_commands", 10)
    reset = node.create_client(Trigger, "/contact_sim_node/reset")
    stop = []
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    print("ros_demo: waiting for contact_sim_node ...", flush=True)
    while not stop and (pub.get_subscription_count() == 0 or not reset.service_is_ready()):
        rclpy.spin_once(node, timeout_sec=0.1)
    names = sorted(tr)
    cycle = 0
    while not stop:
        cycle += 1
        f = reset.call_async(Trigger.Request())
        end = time.monotonic() + 5.0
        while not stop and not f.done() and time.monotonic() < end:
            rclpy.spin_once(node, timeout_sec=0.05)
        print(f"ros_demo: cycle {cycle}: {len(names)} joints, {duration:.1f} s (reset, then the scene's script)", flush=True)
        t0 = time.monotonic()
        next_t = t0
        while not stop:
            t = time.monotonic() - t0
            if t > duration:
                break
            m = JointState()
            m.header.stamp = node.get_clock().now().to_msg()
            m.name = names
            m.position = [sample(tr[j], t) for j in names]
            pub.publish(m)
            next_t += 1.0 / RATE_HZ
            rclpy.spin_once(node, timeout_sec=max(0.0, next_t - time.monotonic()))
    node.destroy_node()
    rclpy.try_shutdown()
    print("ros_demo: stopped", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
