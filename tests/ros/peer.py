#!/usr/bin/env python3
"""rclpy test peer for contact_sim_node (driven by tests/ros_node.rs).

    python3 tests/ros/peer.py SCENARIO

Each scenario talks to a running contact_sim_node over real DDS, collects measurements and prints
one line `RESULT {json}` on success (the Rust test asserts on the numbers). Any failure to
observe what a scenario waits for raises SystemExit with a message (non-zero exit code). Every
wait is bounded.
"""
import json
import math
import sys
import time

import rclpy
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.parameter_client import AsyncParameterClient

import xml.etree.ElementTree as ET

from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

from builtin_interfaces.msg import Duration as DurationMsg
from nav_msgs.msg import Odometry
from rcl_interfaces.msg import Log, ParameterEvent
from std_msgs.msg import String
from tf2_msgs.msg import TFMessage
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import WrenchStamped
from visualization_msgs.msg import MarkerArray
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from std_srvs.srv import SetBool, Trigger
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

NODE = "/contact_sim_node"
DISCOVERY_TIMEOUT = 40.0


def stamp_s(stamp):
    return stamp.sec + stamp.nanosec * 1e-9


class Peer(Node):
    def __init__(self):
        super().__init__("contact_sim_test_peer")
        self.states = []  # (monotonic receive time, stamp s, names, position, velocity, effort)
        self.diag = {}  # key -> value (latest), over all statuses
        self.diag_count = 0
        self.clock = []  # (monotonic receive time, clock s)
        self.create_subscription(JointState, "/joint_states", self._on_state, 100)
        self.create_subscription(DiagnosticArray, "/diagnostics", self._on_diag, 10)
        self.create_subscription(Clock, "/clock", self._on_clock, 100)
        self.cmd_pub = self.create_publisher(JointState, "joint_commands", 10)
        self.traj_pub = self.create_publisher(JointTrajectory, "joint_trajectory", 10)
        self.group_pubs = {}

    # -- callbacks ------------------------------------------------------------------------------
    def _on_state(self, m):
        self.states.append((time.monotonic(), stamp_s(m.header.stamp), list(m.name), list(m.position), list(m.velocity), list(m.effort)))

    def _on_diag(self, m):
        for s in m.status:
            for kv in s.values:
                self.diag[kv.key] = kv.value
            lvl = s.level if isinstance(s.level, int) else int.from_bytes(s.level, "little")
            self.diag[s.name + ".level"] = lvl
            self.diag[s.name + ".message"] = s.message
        self.diag_count += 1

    def _on_clock(self, m):
        self.clock.append((time.monotonic(), stamp_s(m.clock)))

    # -- helpers --------------------------------------------------------------------------------
    def spin_for(self, seconds):
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            rclpy.spin_once(self, timeout_sec=min(0.01, max(0.0, end - time.monotonic())))

    def spin_until(self, cond, timeout, what):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if cond():
                return
            rclpy.spin_once(self, timeout_sec=0.01)
        if cond():
            return
        raise SystemExit(f"peer: timed out after {timeout} s waiting for {what}")

    def discover(self, need_commands=True):
        t0 = time.monotonic()
        self.spin_until(lambda: self.count_publishers("/joint_states") > 0, DISCOVERY_TIMEOUT, "a /joint_states publisher")
        if need_commands:
            self.spin_until(lambda: self.cmd_pub.get_subscription_count() > 0, DISCOVERY_TIMEOUT, "the joint_commands subscriber")
            self.spin_until(lambda: self.traj_pub.get_subscription_count() > 0, DISCOVERY_TIMEOUT, "the joint_trajectory subscriber")
        self.spin_until(lambda: len(self.states) > 0, DISCOVERY_TIMEOUT, "a first /joint_states message")
        return time.monotonic() - t0

    def group_pub(self, topic):
        if topic not in self.group_pubs:
            p = self.create_publisher(Float64MultiArray, topic, 10)
            self.spin_until(lambda: p.get_subscription_count() > 0, DISCOVERY_TIMEOUT, f"the {topic} subscriber")
            self.group_pubs[topic] = p
        return self.group_pubs[topic]

    def command(self, names, position=(), velocity=(), effort=()):
        m = JointState()
        m.header.stamp = self.get_clock().now().to_msg()
        m.name = list(names)
        m.position = [float(x) for x in position]
        m.velocity = [float(x) for x in velocity]
        m.effort = [float(x) for x in effort]
        self.cmd_pub.publish(m)

    def trajectory(self, names, points, stamp=None):
        """points: [(time_from_start_s, positions, velocities or None)]"""
        m = JointTrajectory()
        if stamp is not None:
            m.header.stamp = stamp
        m.joint_names = list(names)
        for t, pos, vel in points:
            p = JointTrajectoryPoint()
            p.positions = [float(x) for x in pos]
            if vel is not None:
                p.velocities = [float(x) for x in vel]
            p.time_from_start = DurationMsg(sec=int(math.floor(t)), nanosec=int(round((t - math.floor(t)) * 1e9)))
            m.points.append(p)
        self.traj_pub.publish(m)

    def call(self, srv_type, name, request, timeout=20.0):
        c = self.create_client(srv_type, name)
        if not c.wait_for_service(timeout_sec=DISCOVERY_TIMEOUT):
            raise SystemExit(f"peer: service {name} not available")
        f = c.call_async(request)
        self.spin_until(f.done, timeout, f"the response of {name}")
        r = f.result()
        self.destroy_client(c)
        return r

    def diag_int(self, key):
        return int(self.diag.get(key, "-1"))

    def wait_diag(self, cond, timeout, what):
        self.spin_until(lambda: self.diag_count > 0 and cond(), timeout, what)

    def states_since(self, t):
        return [s for s in self.states if s[0] >= t]

    def params_client(self):
        pc = AsyncParameterClient(self, NODE)
        if not pc.wait_for_services(timeout_sec=DISCOVERY_TIMEOUT):
            raise SystemExit("peer: parameter services not available")
        return pc

    def list_parameters(self):
        pc = self.params_client()
        f = pc.list_parameters()
        self.spin_until(f.done, 20.0, "list_parameters")
        return sorted(f.result().result.names)

    def set_parameters(self, params):
        pc = self.params_client()
        f = pc.set_parameters(params)
        self.spin_until(f.done, 20.0, "set_parameters")
        return [(r.successful, r.reason) for r in f.result().results]


def mean(xs):
    return sum(xs) / len(xs) if xs else float("nan")


# ---- scenarios ------------------------------------------------------------------------------------


def scenario_wrench(p):
    """F/T sensor, contact wrench and marker topics (scene tests/data/ros_wrench.yaml)."""
    got = {}

    def sub(topic):
        got[topic] = []
        p.create_subscription(WrenchStamped, topic, lambda m: got[topic].append(m), 1000)

    for t in ["wrist/wrench", "wrist/wrench_ideal", "contact_wrenches/box", "contact_wrenches/box/local"]:
        sub(t)
    markers = []
    p.create_subscription(MarkerArray, "contact_markers", lambda m: markers.append(m), 10)
    p.discover(need_commands=False)
    p.spin_for(1.0)  # settle (the box lands, the arm holds)
    for v in got.values():
        v.clear()
    markers.clear()
    p.spin_for(2.0)
    for t, v in got.items():
        if len(v) < 50:
            raise SystemExit(f"peer: only {len(v)} messages on {t}")
    if not markers:
        raise SystemExit("peer: no contact_markers")

    def series(t):
        return [[m.wrench.force.x, m.wrench.force.y, m.wrench.force.z, m.wrench.torque.x, m.wrench.torque.y, m.wrench.torque.z] for m in got[t]]

    def col_mean(rows, k):
        return mean([r[k] for r in rows])

    def col_std(rows, k):
        mu = col_mean(rows, k)
        return math.sqrt(mean([(r[k] - mu) ** 2 for r in rows]))

    out = {}
    for t in got:
        rows = series(t)
        out[t] = {
            "frame_id": got[t][0].header.frame_id,
            "count": len(rows),
            "mean": [col_mean(rows, k) for k in range(6)],
            "std": [col_std(rows, k) for k in range(6)],
        }
    # the emulated reading's noise about the ideal one, matched by stamp
    ideal = {(m.header.stamp.sec, m.header.stamp.nanosec): m.wrench.force.z for m in got["wrist/wrench_ideal"]}
    diffs = [m.wrench.force.z - ideal[k] for m in got["wrist/wrench"] if (k := (m.header.stamp.sec, m.header.stamp.nanosec)) in ideal]
    out["noise_fz"] = {"count": len(diffs), "mean": mean(diffs), "std": math.sqrt(mean([(d - mean(diffs)) ** 2 for d in diffs]))}
    last = markers[-1]
    out["markers"] = {
        "count": len(markers),
        "actions": [mk.action for mk in last.markers],
        "namespaces": sorted({mk.ns for mk in last.markers if mk.ns}),
        "frame_id": last.markers[-1].header.frame_id,
        "arrows": [[[pt.x, pt.y, pt.z] for pt in mk.points] for mk in last.markers if mk.ns == "contact_forces"],
    }
    return out



def scenario_up(p):
    discovery_s = p.discover()
    t0 = time.monotonic()
    p.spin_for(2.0)
    window = p.states_since(t0)
    stamps = [s[1] for s in window]
    p.wait_diag(lambda: "jitter_p99_us" in p.diag, 20.0, "/diagnostics")
    ours = lambda: sorted(n for n, _ in p.get_service_names_and_types() if n.startswith(NODE + "/"))
    want = [NODE + "/reset", NODE + "/pause", NODE + "/step"]
    p.spin_until(lambda: all(w in ours() for w in want), DISCOVERY_TIMEOUT, "the node's services")
    services = ours()
    return {
        "discovery_s": discovery_s,
        "rate_hz": len(window) / 2.0,
        "names": window[-1][2],
        "stamps_increasing": all(b >= a for a, b in zip(stamps, stamps[1:])),
        "lengths_ok": all(len(s[3]) == len(s[2]) == len(s[4]) == len(s[5]) for s in window),
        "diag": p.diag,
        "services": services,
        "params": p.list_parameters(),
    }


def scenario_effort(p):
    """Node: effort pendulum, sim_time (rtf 1), start_paused, no watchdog. Apply tau, then run."""
    tau = 2.0
    p.discover()
    for _ in range(3):
        p.command(["pendulum_joint"], effort=[tau])
        p.spin_for(0.1)
    p.spin_for(0.3)
    r = p.call(SetBool, NODE + "/pause", SetBool.Request(data=False))
    if not r.success:
        raise SystemExit(f"peer: ~/pause false failed: {r.message}")
    p.spin_until(lambda: p.states and p.states[-1][1] >= 1.0, 30.0, "1 s of sim time")
    moving = [s for s in p.states if s[1] > 0.0]
    return {"t": [s[1] for s in moving], "q": [s[3][0] for s in moving], "v": [s[4][0] for s in moving], "effort": [s[5][0] for s in moving], "tau": tau}


def scenario_position(p):
    """Node: position pendulum (kp 50, kd 10), realtime. Group command, then a trajectory."""
    p.discover()
    topic = "pendulum/commands"
    pub = p.group_pub(topic)
    target = 0.5
    end = time.monotonic() + 3.0
    while time.monotonic() < end:  # a controller at 50 Hz
        pub.publish(Float64MultiArray(data=[target]))
        p.spin_for(0.02)
    t0 = time.monotonic()
    p.spin_for(0.3)
    q_group = mean([s[3][0] for s in p.states_since(t0)])
    # joint_trajectory: to -0.3 rad in 1 s (cubic), then held
    p.trajectory(["pendulum_joint"], [(0.5, [0.1], None), (1.0, [-0.3], None)])
    t1 = time.monotonic()
    p.spin_for(3.0)
    traj_states = p.states_since(t1)
    t2 = time.monotonic()
    p.spin_for(0.3)
    q_traj = mean([s[3][0] for s in p.states_since(t2)])
    qs = [s[3][0] for s in traj_states]
    return {"target_group": target, "q_group": q_group, "target_traj": -0.3, "q_traj": q_traj, "q_min_traj": min(qs), "q_max_traj": max(qs)}


def scenario_clock(p):
    """Node: sim_time with real_time_factor 2."""
    p.discover(need_commands=False)
    p.spin_until(lambda: len(p.clock) > 10, 20.0, "/clock")
    p.spin_for(0.5)
    t0 = time.monotonic()
    c0 = p.clock[-1][1]
    p.spin_for(3.0)
    t1 = time.monotonic()
    c1 = p.clock[-1][1]
    clocks = [c for _, c in p.clock]
    p.wait_diag(lambda: float(p.diag.get("real_time_factor", "0")) > 0, 20.0, "a real_time_factor in /diagnostics")
    last_state_stamp = p.states[-1][1]
    return {
        "clock_rate": (c1 - c0) / (t1 - t0),
        "clock_monotonic": all(b >= a for a, b in zip(clocks, clocks[1:])),
        "clock_messages": len(clocks),
        "last_clock": clocks[-1],
        "last_state_stamp": last_state_stamp,
        "diag_rtf": float(p.diag["real_time_factor"]),
    }


def scenario_lockstep(p):
    """Node: effort pendulum in lockstep. One command, one step, one state."""
    p.discover()
    dt = 0.001
    p.spin_for(0.5)
    idle = [s[1] for s in p.states]
    per_command = []
    for k in range(1, 31):
        p.command(["pendulum_joint"], effort=[0.5])
        p.spin_until(lambda: p.states[-1][1] >= k * dt - 1e-9, 10.0, f"the state after command {k}")
        per_command.append(p.states[-1][1])
    for _ in range(5):  # a burst without waiting
        p.command(["pendulum_joint"], effort=[0.5])
    p.spin_until(lambda: p.states[-1][1] >= 35 * dt - 1e-9, 10.0, "the states after the burst")
    t_idle = time.monotonic()
    p.spin_for(1.5)
    after = [s[1] for s in p.states_since(t_idle)]
    p.wait_diag(lambda: p.diag_int("commands_applied") >= 35, 20.0, "commands_applied 35 in /diagnostics")
    return {
        "idle_stamps_max": max(idle) if idle else -1.0,
        "per_command": per_command,
        "after_idle_max": max(after) if after else -1.0,
        "after_idle_count": len(after),
        "last_clock": p.clock[-1][1] if p.clock else -1.0,
        "diag_steps": p.diag_int("steps"),
        "diag_applied": p.diag_int("commands_applied"),
    }


def scenario_malformed(p):
    """Node: the arm, realtime, limit_policy reject."""
    p.discover()
    names = p.states[-1][2]
    find = lambda: [n for n, _ in p.get_topic_names_and_types() if n.endswith("/commands")]
    p.spin_until(lambda: len(find()) > 0, DISCOVERY_TIMEOUT, "a <group>/commands topic")
    groups = find()
    gpub = p.group_pub(groups[0])
    t0 = time.monotonic()
    bad = 0
    p.command(["no_such_joint"], position=[0.0]); bad += 1
    p.command(["arm_joint1"], position=[float("nan")]); bad += 1
    p.command(["arm_joint1", "arm_joint2"], position=[0.0]); bad += 1
    p.command(["arm_joint1"], position=[5.0]); bad += 1  # limit ±2.9 rad
    p.command(["arm_joint1"], velocity=[float("inf")]); bad += 1
    p.command(["arm_joint1"], effort=[1000.0]); bad += 1  # limit 150 N·m
    p.command(["arm_joint1", "arm_joint1"], position=[0.0, 0.1]); bad += 1
    gpub.publish(Float64MultiArray(data=[0.0, 0.1, 0.2])); bad += 1  # wrong length
    bad_traj = 0
    p.trajectory(["arm_joint1"], [(1.0, [0.1], None), (0.5, [0.2], None)]); bad_traj += 1  # time order
    p.trajectory(["ghost"], [(1.0, [0.1], None)]); bad_traj += 1
    p.spin_for(1.0)
    during = len(p.states_since(t0)) / (time.monotonic() - t0)
    # a valid command still goes through
    p.command(["arm_joint1"], position=[0.2])
    p.wait_diag(lambda: p.diag_int("commands_rejected") >= bad and p.diag_int("trajectories_rejected") >= bad_traj and p.diag_int("commands_applied") >= 1, 20.0, "the rejections in /diagnostics")
    t1 = time.monotonic()
    p.spin_for(1.0)
    after = len(p.states_since(t1))
    return {
        "sent_bad": bad,
        "sent_bad_traj": bad_traj,
        "diag_rejected": p.diag_int("commands_rejected"),
        "diag_traj_rejected": p.diag_int("trajectories_rejected"),
        "diag_applied": p.diag_int("commands_applied"),
        "diag_received": p.diag_int("commands_received"),
        "rate_during_hz": during,
        "states_after": after,
        "names": names,
        "group_topic": groups[0],
    }


def scenario_watchdog(p):
    """Node: effort pendulum, realtime, watchdog 0.3 s hold (kp 50, kd 10)."""
    p.discover()
    end = time.monotonic() + 0.6
    while time.monotonic() < end:
        p.command(["pendulum_joint"], effort=[3.0])
        p.spin_for(0.02)
    t_stop = time.monotonic()
    q_stop = p.states[-1][3][0]
    p.wait_diag(lambda: p.diag.get("watchdog_active") == "true", 20.0, "watchdog_active in /diagnostics")
    t_fired = time.monotonic() - t_stop
    p.spin_for(2.0)
    t1 = time.monotonic()
    p.spin_for(0.5)
    held = p.states_since(t1)
    trips = p.diag_int("watchdog_trips")
    # a command clears it
    p.command(["pendulum_joint"], effort=[0.0])
    p.wait_diag(lambda: p.diag.get("watchdog_active") == "false", 20.0, "watchdog_active false after a command")
    return {
        "q_stop": q_stop,
        "seconds_to_report": t_fired,
        "trips": trips,
        "held_q_spread": max(s[3][0] for s in held) - min(s[3][0] for s in held),
        "held_v_max": max(abs(s[4][0]) for s in held),
        "held_q": mean([s[3][0] for s in held]),
        "cleared": True,
    }


def scenario_reset(p):
    """Node: effort pendulum, realtime, no watchdog. Push, pause, step, reset."""
    p.discover()
    q0 = p.states[-1][3][0]
    end = time.monotonic() + 0.5
    while time.monotonic() < end:
        p.command(["pendulum_joint"], effort=[5.0])
        p.spin_for(0.02)
    step_running = p.call(Trigger, NODE + "/step", Trigger.Request())
    paused = p.call(SetBool, NODE + "/pause", SetBool.Request(data=True))
    p.spin_for(0.2)
    t0 = time.monotonic()
    p.spin_for(0.3)
    frozen = p.states_since(t0)
    q_paused = frozen[-1][3][0]
    stepped = p.call(Trigger, NODE + "/step", Trigger.Request())
    p.spin_for(0.2)
    q_stepped = p.states[-1][3][0]
    reset = p.call(Trigger, NODE + "/reset", Trigger.Request())
    p.spin_for(0.2)
    after_reset = p.states[-1]
    resumed = p.call(SetBool, NODE + "/pause", SetBool.Request(data=False))
    t1 = time.monotonic()
    p.spin_for(0.5)
    after = p.states_since(t1)
    return {
        "q_initial": q0,
        "step_while_running": [step_running.success, step_running.message],
        "pause": [paused.success, paused.message],
        "q_paused": q_paused,
        "frozen_spread": max(s[3][0] for s in frozen) - min(s[3][0] for s in frozen),
        "step": [stepped.success, stepped.message],
        "q_stepped": q_stepped,
        "reset": [reset.success, reset.message],
        "q_after_reset": after_reset[3][0],
        "v_after_reset": after_reset[4][0],
        "resume": [resumed.success, resumed.message],
        "q_after_resume_max": max(abs(s[3][0]) for s in after),
        "states_after_resume": len(after),
    }


def scenario_params(p):
    """Node: position pendulum, realtime."""
    p.discover()
    results = {}
    cases = {
        "publish_rate_hz": Parameter("publish_rate_hz", value=100.0),
        "gains.pendulum_joint.kp": Parameter("gains.pendulum_joint.kp", value=200.0),
        "solver_max_iterations": Parameter("solver_max_iterations", value=50),
        "limit_policy": Parameter("limit_policy", value="clamp"),
        "time_mode(read-only)": Parameter("time_mode", value="lockstep"),
        "rate_hz(read-only)": Parameter("rate_hz", value=500.0),
        "publish_rate_hz(negative)": Parameter("publish_rate_hz", value=-5.0),
        "watchdog_action(bad)": Parameter("watchdog_action", value="explode"),
        "undeclared": Parameter("no_such_parameter", value=1.0),
    }
    for k, param in cases.items():
        results[k] = p.set_parameters([param])[0]
    p.spin_for(0.5)
    t0 = time.monotonic()
    p.spin_for(2.0)
    rate = len(p.states_since(t0)) / 2.0
    # with kp 200 the steady-state error at 0.5 rad is smaller than with kp 50
    end = time.monotonic() + 3.0
    while time.monotonic() < end:
        p.command(["pendulum_joint"], position=[0.5])
        p.spin_for(0.05)
    t1 = time.monotonic()
    p.spin_for(0.3)
    q = mean([s[3][0] for s in p.states_since(t1)])
    return {"results": results, "rate_after_hz": rate, "q_kp200": q}


def scenario_mimic_groups(p):
    """Node: the arm (tests/data/ros_arm.yaml: finger_right_joint mimics finger_left_joint), realtime,
    watchdog off. Commands naming the mimic follower, the default group's joint order as a
    parameter, a group command of that length and one of a wrong length."""
    p.discover()
    names = p.states[-1][2]
    pc = p.params_client()
    f = pc.get_parameters(["groups.arm7.joints", "groups.arm7.interface"])
    p.spin_until(f.done, 20.0, "get_parameters")
    values = f.result().values
    joints, interface = list(values[0].string_array_value), values[1].string_value
    f = pc.describe_parameters(["groups.arm7.joints"])
    p.spin_until(f.done, 20.0, "describe_parameters")
    read_only = f.result().descriptors[0].read_only

    def counts():
        return (p.diag_int("commands_received"), p.diag_int("commands_applied"), p.diag_int("commands_rejected"), p.diag_int("trajectories_rejected"))

    p.wait_diag(lambda: p.diag_int("commands_applied") >= 0, 20.0, "a first /diagnostics")
    p.spin_for(0.5)
    before = counts()
    # only the mimic follower: rejected, not applied
    p.command(["finger_right_joint"], position=[0.03])
    p.trajectory(["finger_right_joint"], [(0.5, [0.03], None)])
    p.wait_diag(lambda: p.diag_int("commands_received") >= before[0] + 1 and p.diag_int("commands_rejected") >= before[2] + 1 and p.diag_int("trajectories_rejected") >= before[3] + 1, 20.0, "the rejections")
    p.spin_for(0.5)
    after_alone = counts()
    # the follower with its leader (as joint_states lists them): applied, the follower's value ignored (twice: one warning)
    for _ in range(2):
        p.command(["finger_left_joint", "finger_right_joint"], position=[0.02, 0.0])
        p.spin_for(0.2)
    p.wait_diag(lambda: p.diag_int("commands_applied") >= after_alone[1] + 2, 20.0, "the two commands applied")
    p.spin_for(1.5)
    k_left, k_right = names.index("finger_left_joint"), names.index("finger_right_joint")
    q = p.states[-1][3]
    after_pair = counts()
    # the default group: as long as groups.arm7.joints says
    gpub = p.group_pub("arm7/commands")
    target = [0.0] * len(joints)
    target[joints.index("finger_left_joint")] = 0.01
    for _ in range(3):
        gpub.publish(Float64MultiArray(data=target))
        p.spin_for(0.2)
    gpub.publish(Float64MultiArray(data=target + [0.0]))  # one too many
    p.wait_diag(lambda: p.diag_int("commands_rejected") >= after_pair[2] + 1 and p.diag_int("commands_applied") >= after_pair[1] + 3, 20.0, "the group commands")
    p.spin_for(1.5)
    return {
        "names": names,
        "group_joints": joints,
        "group_interface": interface,
        "group_joints_read_only": read_only,
        "before": before,
        "after_alone": after_alone,
        "after_pair": after_pair,
        "after_group": counts(),
        "q_left_pair": q[k_left],
        "q_right_pair": q[k_right],
        "q_left_group": p.states[-1][3][k_left],
    }


LATCHED = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)


def tf_row(t):
    tr, q = t.transform.translation, t.transform.rotation
    return [t.header.frame_id, t.child_frame_id, tr.x, tr.y, tr.z, q.x, q.y, q.z, q.w, stamp_s(t.header.stamp)]


def urdf_summary(text):
    """Root link and movable joints of a URDF."""
    root = ET.fromstring(text)
    links = [l.get("name") for l in root.findall("link")]
    children = {j.find("child").get("link") for j in root.findall("joint")}
    movable = [j.get("name") for j in root.findall("joint") if j.get("type") not in ("fixed", "floating")]
    return {"root_link": [l for l in links if l not in children], "movable_joints": movable}


def latched(p, msg_type, topic, timeout=DISCOVERY_TIMEOUT):
    """Subscribes late (transient local) and returns the first message."""
    got = []
    sub = p.create_subscription(msg_type, topic, got.append, LATCHED)
    p.spin_until(lambda: len(got) > 0, timeout, f"a latched message on {topic}")
    p.destroy_subscription(sub)
    return got[0]


def scenario_description(p):
    """Node: position pendulum (one robot, base welded at z = 2 m). Subscribes well after the
    node published robot_description and tf_static: transient local delivers them."""
    p.discover(need_commands=False)
    p.spin_for(1.5)
    d = latched(p, String, "/robot_description")
    st = latched(p, TFMessage, "/tf_static")
    return {"urdf": d.data, "static": [tf_row(t) for t in st.transforms], "description_publishers": p.count_publishers("/robot_description"), "tf_publishers": p.count_publishers("/tf")}


def scenario_tf(p):
    """Node: the default scene (floating quadruped, fixed arm), sim_time. TF of the floating base
    against odom and joint_states, the fixed base on tf_static, one description per robot."""
    p.discover(need_commands=False)
    topics = {}
    p.spin_until(lambda: len([n for n, _ in p.get_topic_names_and_types() if n.endswith("/robot_description")]) >= 2, DISCOVERY_TIMEOUT, "two robot_description topics")
    descriptions = {}
    for n, _ in p.get_topic_names_and_types():
        if n.endswith("/robot_description"):
            descriptions[n] = urdf_summary(latched(p, String, n).data)
    static = [tf_row(t) for t in latched(p, TFMessage, "/tf_static").transforms]
    tf, odom = [], []
    p.create_subscription(TFMessage, "/tf", lambda m: tf.extend(tf_row(t) for t in m.transforms), 1000)
    p.create_subscription(Odometry, "/odom", lambda m: odom.append([m.header.frame_id, m.child_frame_id, m.pose.pose.position.x, m.pose.pose.position.y, m.pose.pose.position.z, m.pose.pose.orientation.x, m.pose.pose.orientation.y, m.pose.pose.orientation.z, m.pose.pose.orientation.w, stamp_s(m.header.stamp)]), 1000)
    p.spin_until(lambda: len(tf) > 100 and len(odom) > 100, 60.0, "100 tf and odom messages")
    p.spin_for(0.2)
    by_stamp = {o[9]: o for o in odom}
    matched, worst = 0, 0.0
    for t in tf:
        o = by_stamp.get(t[9])
        if o is not None and o[1] == t[1]:
            matched += 1
            worst = max(worst, max(abs(a - b) for a, b in zip(t[2:9], o[2:9])))
    state_stamps = {s[1] for s in p.states}
    return {
        "descriptions": descriptions,
        "static": static,
        "tf_frames": sorted({(t[0], t[1]) for t in tf}),
        "odom_frames": sorted({(o[0], o[1]) for o in odom}),
        "tf_count": len(tf),
        "matched": matched,
        "max_abs_diff": worst,
        "tf_stamps_in_joint_states": sum(1 for t in tf if t[9] in state_stamps),
        "joint_names": p.states[-1][2],
        "base_z": [t[4] for t in tf][-1],
    }


def scenario_namespaces(p):
    """Nodes: two effort pendulums, namespaces /sim_a and /sim_b, same domain. An effort on
    /sim_b/joint_commands moves only sim_b."""
    a, b = [], []
    p.create_subscription(JointState, "/sim_a/joint_states", lambda m: a.append((time.monotonic(), m.position[0])), 100)
    p.create_subscription(JointState, "/sim_b/joint_states", lambda m: b.append((time.monotonic(), m.position[0])), 100)
    cmd = p.create_publisher(JointState, "/sim_b/joint_commands", 10)
    p.spin_until(lambda: len(a) > 0 and len(b) > 0 and cmd.get_subscription_count() > 0, DISCOVERY_TIMEOUT, "both namespaced nodes")
    t0 = time.monotonic()
    end = t0 + 1.0
    while time.monotonic() < end:
        m = JointState(name=["pendulum_joint"], effort=[2.0])
        m.header.stamp = p.get_clock().now().to_msg()
        cmd.publish(m)
        p.spin_for(0.02)
    names = dict(p.get_topic_names_and_types())
    services = sorted(n for n, _ in p.get_service_names_and_types())
    return {
        "q_a_max": max(abs(q) for t, q in a if t >= t0),
        "q_b_max": max(abs(q) for t, q in b if t >= t0),
        "root_joint_states_publishers": p.count_publishers("/joint_states"),
        "root_publishers": {t: p.count_publishers(t) for t in ["/joint_states", "/diagnostics", "/robot_description", "/tf_static", "/tf"]},
        "a_publishers": p.count_publishers("/sim_a/joint_states"),
        "b_publishers": p.count_publishers("/sim_b/joint_states"),
        "desc_a": latched(p, String, "/sim_a/robot_description").data,
        "desc_b": latched(p, String, "/sim_b/robot_description").data,
        "static_a": [tf_row(t) for t in latched(p, TFMessage, "/sim_a/tf_static").transforms],
        "topics": sorted(names),
        "services": services,
    }


def scenario_rosout_params(p):
    """Node: position pendulum. Its log lines on /rosout, a parameter change on
    /parameter_events (and in the log), descriptors from describe_parameters."""
    logs, events = [], []
    p.create_subscription(Log, "/rosout", logs.append, QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL))
    p.create_subscription(ParameterEvent, "/parameter_events", events.append, QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE))
    p.discover(need_commands=False)
    mine = lambda: [l for l in logs if l.name == "contact_sim_node"]
    p.spin_until(lambda: any("scene '" in l.msg for l in mine()), DISCOVERY_TIMEOUT, "the start-up line on /rosout")
    startup = next(l for l in mine() if "scene '" in l.msg)
    result = p.set_parameters([Parameter("publish_rate_hz", value=250.0)])[0]
    refused = p.set_parameters([Parameter("time_mode", value="lockstep")])[0]

    def change():
        for e in events:
            for c in e.changed_parameters:
                if e.node == NODE and c.name == "publish_rate_hz":
                    return e, c
        return None

    p.spin_until(lambda: change() is not None, 20.0, "the publish_rate_hz change on /parameter_events")
    p.spin_until(lambda: any("parameter publish_rate_hz changed" in l.msg for l in mine()), 20.0, "the change's log line on /rosout")
    e, c = change()
    pc = p.params_client()
    names = ["time_mode", "publish_rate_hz", "rt_priority", "watchdog_timeout_s"]
    f = pc.describe_parameters(names)
    p.spin_until(f.done, 20.0, "describe_parameters")
    descriptors = {}
    for n, d in zip(names, f.result().descriptors):
        descriptors[n] = {
            "name": d.name,
            "type": d.type,
            "read_only": d.read_only,
            "description": d.description,
            "constraints": d.additional_constraints,
            "fp_range": [[r.from_value, r.to_value] for r in d.floating_point_range],
            "int_range": [[r.from_value, r.to_value] for r in d.integer_range],
        }
    startup_events = [ev for ev in events if ev.node == NODE and ev.new_parameters]
    return {
        "startup_line": startup.msg,
        "startup_level": int(startup.level if isinstance(startup.level, int) else int.from_bytes(startup.level, "little")),
        "set": result,
        "refused": refused,
        "event_node": e.node,
        "event_value": c.value.double_value,
        "event_type": c.value.type,
        "changes_for_refused": sum(1 for ev in events for ch in ev.changed_parameters if ch.name == "time_mode"),
        "startup_event_params": len(startup_events[0].new_parameters) if startup_events else 0,
        "descriptors": descriptors,
        "log_names": sorted({l.name for l in logs}),
    }


SCENARIOS = {
    "description": scenario_description,
    "tf": scenario_tf,
    "namespaces": scenario_namespaces,
    "rosout_params": scenario_rosout_params,
    "up": scenario_up,
    "effort": scenario_effort,
    "position": scenario_position,
    "clock": scenario_clock,
    "lockstep": scenario_lockstep,
    "malformed": scenario_malformed,
    "watchdog": scenario_watchdog,
    "reset": scenario_reset,
    "params": scenario_params,
    "mimic_groups": scenario_mimic_groups,
    "wrench": scenario_wrench,
}


def main():
    if len(sys.argv) != 2 or sys.argv[1] not in SCENARIOS:
        print(f"usage: peer.py {{{'|'.join(SCENARIOS)}}}", file=sys.stderr)
        return 2
    rclpy.init()
    p = Peer()
    try:
        result = SCENARIOS[sys.argv[1]](p)
    finally:
        p.destroy_node()
        rclpy.try_shutdown()
    print("RESULT " + json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
