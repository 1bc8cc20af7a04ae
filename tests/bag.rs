//! rosbag2 (MCAP) recording, tolerant reading, replay and sim-to-real comparison (docs/bags.md).
//!
//! Scenes: `tests/data/bag_arm.yaml` (the arm moving in free space, wrist F/T sensor) and
//! `tests/data/bag_push.yaml` (the arm pushing a box, contact wrenches of hand and box).

use contact_sim::bag::msgs::*;
use contact_sim::bag::replay::{replay, GroupInterface, GroupMap, ReplayConfig};
use contact_sim::bag::run::record_run;
use contact_sim::bag::{read_bag, Bag, BagRecorder, BagWriter, RecorderOptions, WriterOptions};
use contact_sim::compare::{compare, CompareOptions, CompareReport};
use contact_sim::config::{load_scene, Scene};
use contact_sim::sim::Simulation;
use std::path::{Path, PathBuf};
#[path = "common/counting_alloc.rs"]
mod counting_alloc;
use counting_alloc::{live_bytes_during, CountingAllocator};

/// Counts allocations only on a thread that asks (the memory-growth test below).
#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

fn repo(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// A fresh temporary directory for one test.
fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("contact_sim_bag_{}_{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn scene(name: &str) -> Scene {
    load_scene(&repo(&format!("tests/data/{name}.yaml"))).unwrap()
}

/// Records `scene` headless (its script) for `duration_s` at 200 Hz.
fn record(scene: &Scene, dir: &Path, duration_s: f64) -> Bag {
    let mut sim = Simulation::from_scene(scene, None);
    let s = record_run(&mut sim, dir, 200.0, duration_s).unwrap();
    assert_eq!(s.dropped, 0);
    let bag = read_bag(dir).unwrap();
    assert!(bag.warnings.is_empty(), "{:?}", bag.warnings);
    bag
}

/// Rewrites a bag through `f(topic, log_time, msg) -> Option<(log_time, msg)>`.
fn rewrite(bag: &Bag, out: &Path, mut f: impl FnMut(&str, u64, &Msg) -> Option<(u64, Msg)>) -> Bag {
    let mut w = BagWriter::create(out, &WriterOptions::default()).unwrap();
    let ids: Vec<_> = bag.topics.iter().map(|t| t.msg_type.map(|ty| w.add_topic(&t.name, ty).unwrap())).collect();
    for m in &bag.messages {
        if let Some((t, msg)) = f(&bag.topics[m.topic].name, m.log_time_ns, &m.msg) {
            w.write(ids[m.topic].unwrap(), t, &msg).unwrap();
        }
    }
    w.finish().unwrap();
    read_bag(out).unwrap()
}

fn shift_stamp(msg: &Msg, dt_ns: i64) -> Msg {
    let mut m = msg.clone();
    let sh = |h: &mut Header| h.stamp = Time::from_ns(h.stamp.to_ns() + dt_ns);
    match &mut m {
        Msg::JointState(x) => sh(&mut x.header),
        Msg::WrenchStamped(x) => sh(&mut x.header),
        Msg::Odometry(x) => sh(&mut x.header),
        Msg::DiagnosticArray(x) => sh(&mut x.header),
        Msg::JointTrajectory(x) => sh(&mut x.header),
        Msg::Clock(x) => x.clock = Time::from_ns(x.clock.to_ns() + dt_ns),
        Msg::TFMessage(x) => x.transforms.iter_mut().for_each(|t| sh(&mut t.header)),
        Msg::MarkerArray(x) => x.markers.iter_mut().for_each(|k| sh(&mut k.header)),
        Msg::Float64MultiArray(_) | Msg::String(_) => {}
    }
    m
}

fn joint<'a>(r: &'a CompareReport, name: &str) -> &'a contact_sim::compare::JointMetrics {
    r.joints.iter().find(|j| j.name == name).unwrap_or_else(|| panic!("joint {name} not compared"))
}

fn all_messages() -> Vec<Msg> {
    vec![
        Msg::JointState(JointState {
            header: Header::new(1_000_000, ""),
            name: vec!["a".into(), "b".into()],
            position: vec![0.5, -1.25],
            velocity: vec![0.1, 0.2],
            effort: vec![3.0, 4.0],
        }),
        Msg::WrenchStamped(WrenchStamped { header: Header::new(2_000_000, "ft"), wrench: Wrench { force: [1.0, -2.0, 9.81], torque: [0.1, 0.2, -0.3] } }),
        Msg::Odometry(Box::new(Odometry { header: Header::new(3_000_000, "odom"), child_frame_id: "trunk".into(), position: [1.0, 2.0, 0.3], linear: [0.5, 0.0, 0.0], ..Default::default() })),
        Msg::DiagnosticArray(DiagnosticArray {
            header: Header::new(4_000_000, ""),
            status: vec![DiagnosticStatus { level: 1, name: "loop".into(), message: "late".into(), hardware_id: "sim".into(), values: vec![KeyValue { key: "jitter_us".into(), value: "12".into() }] }],
        }),
        Msg::Clock(Clock { clock: Time { sec: 5, nanosec: 7 } }),
        Msg::Float64MultiArray(Float64MultiArray { dim: vec![], data_offset: 0, data: vec![0.1, 0.2, 0.3] }),
        Msg::JointTrajectory(JointTrajectory {
            header: Header::new(0, ""),
            joint_names: vec!["a".into()],
            points: vec![JointTrajectoryPoint { positions: vec![1.0], velocities: vec![0.0], time_from_start: Time { sec: 1, nanosec: 500 }, ..Default::default() }],
        }),
        Msg::TFMessage(TFMessage {
            transforms: vec![TransformStamped { header: Header::new(6_000_000, "odom"), child_frame_id: "base".into(), translation: [0.1, -0.2, 0.45], rotation_xyzw: [0.0, 0.0, 0.6, 0.8] }],
        }),
        Msg::String(StringMsg { data: "<robot name=\"r\"><link name=\"base\"/></robot>".into() }),
        Msg::MarkerArray(MarkerArray {
            markers: vec![Marker { header: Header::new(7_000_000, "odom"), ns: "contact_points".into(), type_: 7, scale: [0.015; 3], color: [0.9, 0.1, 0.1, 1.0], points: vec![[0.1, 0.2, 0.0]], ..Default::default() }],
        }),
    ]
}

/// Every message type written by our writer is read back, message for message, with its topic,
/// type and log time; metadata.yaml lists the topics and counts.
#[test]
fn round_trip_message_for_message() {
    let root = tmp("roundtrip");
    let d = root.join("bag");
    let mut w = BagWriter::create(&d, &WriterOptions::default()).unwrap();
    let msgs = all_messages();
    let mut written = vec![];
    for rep in 0..50u64 {
        for (i, m) in msgs.iter().enumerate() {
            let id = w.add_topic(&format!("/topic_{i}"), m.msg_type()).unwrap();
            let t = rep * 1_000_000 + i as u64;
            w.write(id, t, m).unwrap();
            written.push((format!("/topic_{i}"), t, m.clone()));
        }
    }
    // a bag is never overwritten; the same name with another type is refused
    assert!(w.add_topic("/topic_0", MsgType::Clock).is_err());
    let s = w.finish().unwrap();
    assert_eq!(s.messages, 50 * msgs.len() as u64);
    assert!(BagWriter::create(&d, &WriterOptions::default()).is_err());
    assert!(d.join("bag_0.mcap").exists());
    let meta = std::fs::read_to_string(d.join("metadata.yaml")).unwrap();
    assert!(meta.contains("version: 9") && meta.contains("storage_identifier: mcap") && meta.contains("sensor_msgs/msg/JointState") && meta.contains(&format!("message_count: {}", 50 * msgs.len())), "{meta}");

    let bag = read_bag(&d).unwrap();
    assert!(bag.warnings.is_empty(), "{:?}", bag.warnings);
    assert!(!bag.truncated);
    assert_eq!(bag.messages.len(), written.len());
    for (m, (topic, t, msg)) in bag.messages.iter().zip(&written) {
        assert_eq!(&bag.topics[m.topic].name, topic);
        assert_eq!(m.log_time_ns, *t);
        assert_eq!(&m.msg, msg);
    }
    let _ = std::fs::remove_dir_all(&root);
}

/// A headless recording has the node's topics with the expected counts and contents.
#[test]
fn headless_recording_has_the_node_topics() {
    let root = tmp("headless");
    let d = root.join("bag");
    let bag = record(&scene("bag_push"), &d, 0.5);
    let names: Vec<&str> = bag.topics.iter().map(|t| t.name.as_str()).collect();
    for t in ["/joint_states", "/clock", "/joint_commands", "/wrist_ft/wrench", "/wrist_ft/wrench_ideal", "/contact_wrenches/hand", "/contact_wrenches/box/local"] {
        assert!(names.contains(&t), "{t} missing from {names:?}");
    }
    let js = bag.topic_index("/joint_states").unwrap();
    assert_eq!(bag.topics[js].count, 101, "0.5 s at 200 Hz plus the initial state");
    let Msg::JointState(last) = &bag.messages_on(js).last().unwrap().msg else { panic!() };
    assert_eq!(last.header.stamp.to_ns(), 500_000_000);
    assert_eq!(last.name[1], "arm_joint2");
    // the box rests on the floor: its world-axes contact force carries its weight (0.5 kg)
    let bi = bag.topic_index("/contact_wrenches/box").unwrap();
    let Msg::WrenchStamped(w) = &bag.messages_on(bi).nth(20).unwrap().msg else { panic!() };
    assert!((w.wrench.force[2] - 0.5 * 9.81).abs() < 0.05, "{:?}", w.wrench);
    assert_eq!(w.header.frame_id, "odom");
    let _ = std::fs::remove_dir_all(&root);
}

/// A floating base's `tf` is in the bag (so a bag opens in Foxglove with the robot moving): one
/// TFMessage per odometry message, same stamp, odom → root link, the odometry pose exactly.
#[test]
fn headless_recording_has_tf_and_the_latched_robot_descriptions() {
    let root_dir = tmp("tf");
    let d = root_dir.join("bag");
    let scene = load_scene(&repo("config/default.yaml")).unwrap();
    let bag = record(&scene, &d, 0.1);
    let (tf, odom) = (bag.topic_index("/tf").expect("/tf recorded"), bag.topic_index("/odom").unwrap());
    assert_eq!(bag.topics[tf].count, bag.topics[odom].count);
    for (t, o) in bag.messages_on(tf).zip(bag.messages_on(odom)) {
        let (Msg::TFMessage(t), Msg::Odometry(o)) = (&t.msg, &o.msg) else { panic!() };
        assert_eq!(t.transforms.len(), 1, "the arm's base is fixed: only the quadruped's is on tf");
        let x = &t.transforms[0];
        assert_eq!((x.header.frame_id.as_str(), x.child_frame_id.as_str()), ("odom", "base"));
        assert_eq!(x.header.stamp, o.header.stamp);
        assert_eq!((x.translation, x.rotation_xyzw), (o.position, o.orientation_xyzw));
    }
    // once, latched: each robot's URDF on `<robot>/robot_description` (two robots), and the
    // arm's fixed base on tf_static where the scene welds it
    assert_eq!(scene.model.robots.len(), 2);
    for r in &scene.model.robots {
        let topic = bag.topic_index(&format!("/{}/robot_description", r.name)).unwrap_or_else(|| panic!("no robot_description of {}", r.name));
        let msgs: Vec<_> = bag.messages_on(topic).collect();
        assert_eq!(msgs.len(), 1);
        let Msg::String(text) = &msgs[0].msg else { panic!("robot_description is a String") };
        assert_eq!(text.data, std::fs::read_to_string(&r.source).unwrap(), "{}: the URDF file, unchanged", r.name);
    }
    let st: Vec<_> = bag.messages_on(bag.topic_index("/tf_static").expect("/tf_static recorded")).collect();
    assert_eq!(st.len(), 1);
    let Msg::TFMessage(st) = &st[0].msg else { panic!() };
    let arm = scene.model.robots.iter().find(|r| !r.floating_base).expect("the arm is welded");
    let root = &scene.model.bodies[scene.model.trees[arm.tree].body_start];
    assert_eq!(st.transforms.len(), 1);
    let t = &st.transforms[0];
    assert_eq!((t.header.frame_id.as_str(), t.child_frame_id.as_str()), ("odom", root.name.as_str()));
    let p = root.joint.x_parent_joint.translation.vector;
    assert_eq!(t.translation, [p.x, p.y, p.z], "where the scene welds the arm");
    let _ = std::fs::remove_dir_all(&root_dir);
}

/// A Python interpreter with the `rosbags` package (CONTACT_SIM_PYTHON, the ROS prefix's, or
/// python3). `None` (the caller skips, saying so) when there is none, unless
/// CONTACT_SIM_REQUIRE_ROSBAGS=1 (scripts/ros-test.sh sets it): then the test fails.
fn python_with_rosbags(test: &str) -> Option<String> {
    let required = std::env::var("CONTACT_SIM_REQUIRE_ROSBAGS").is_ok_and(|v| v == "1");
    let candidates = [std::env::var("CONTACT_SIM_PYTHON").ok(), Some(repo(".ros/prefix/bin/python").display().to_string()), Some("python3".into())];
    let python = candidates.into_iter().flatten().find(|p| {
        std::process::Command::new(p).args(["-c", "import rosbags"]).output().is_ok_and(|o| o.status.success())
    });
    if python.is_none() {
        assert!(!required, "CONTACT_SIM_REQUIRE_ROSBAGS=1 but no python with rosbags (CONTACT_SIM_PYTHON, .ros/prefix/bin/python, python3)");
        eprintln!("SKIPPED {test}: no python with the rosbags package (run scripts/setup-ros.sh or set CONTACT_SIM_PYTHON)");
    }
    python
}

/// Latched topics (`robot_description`, `tf_static`) are recorded with the profile the node
/// offers them with (reliable, transient local, depth 1) and streams with the default one
/// (reliable, volatile, depth 10), in `metadata.yaml` and in the MCAP channel metadata, in
/// rosbag2's version-9 form, so that `ros2 bag play` replays a latched topic latched. Read back
/// three ways: the YAML, the MCAP channel records, and (when installed) the `rosbags` package.
#[test]
fn latched_topics_keep_their_qos_and_rosbags_reads_it() {
    use contact_sim::bag::topics::{description_msg, record_latched, static_tf_msg};
    let root = tmp("qos");
    let d = root.join("bag");
    let mut rec = BagRecorder::start(&d, &RecorderOptions::default()).unwrap();
    let js = rec.add_topic("/joint_states", MsgType::JointState);
    let latched = vec![("robot_description".to_string(), description_msg("<robot name='r'/>")), ("tf_static".to_string(), static_tf_msg("odom", 5, &[("base".into(), [0.0, 0.0, 1.0], [0.0, 0.0, 0.0, 1.0])]))];
    assert_eq!(record_latched(&mut rec, "/", 5, latched), 0);
    assert!(rec.handle().record(js, 6, Msg::JointState(JointState { header: Header::new(6, ""), ..Default::default() })));
    rec.finish().unwrap();
    let expected = [("/joint_states", "volatile", 10), ("/robot_description", "transient_local", 1), ("/tf_static", "transient_local", 1)];

    // metadata.yaml
    let meta: serde_yaml::Value = serde_yaml::from_str(&std::fs::read_to_string(d.join("metadata.yaml")).unwrap()).unwrap();
    let topics = meta["rosbag2_bagfile_information"]["topics_with_message_count"].as_sequence().unwrap();
    for (name, durability, depth) in expected {
        let t = topics.iter().map(|t| &t["topic_metadata"]).find(|t| t["name"].as_str() == Some(name)).unwrap_or_else(|| panic!("{name} not in metadata.yaml"));
        let q = t["offered_qos_profiles"].as_sequence().unwrap_or_else(|| panic!("{name}: offered_qos_profiles is not a list"));
        assert_eq!(q.len(), 1, "{name}");
        assert_eq!((q[0]["durability"].as_str(), q[0]["reliability"].as_str(), q[0]["history"].as_str(), q[0]["depth"].as_u64()), (Some(durability), Some("reliable"), Some("keep_last"), Some(depth)), "{name} in metadata.yaml");
    }

    // the MCAP channels' metadata: the same profile as a YAML string
    let file = std::fs::read(d.join("bag_0.mcap")).unwrap();
    let summary = mcap::Summary::read(&file).unwrap().expect("summary section");
    for (name, durability, depth) in expected {
        let ch = summary.channels.values().find(|c| c.topic == name).unwrap_or_else(|| panic!("no channel {name}"));
        let q: serde_yaml::Value = serde_yaml::from_str(&ch.metadata["offered_qos_profiles"]).unwrap();
        assert_eq!((q[0]["durability"].as_str(), q[0]["depth"].as_u64()), (Some(durability), Some(depth)), "{name} in the MCAP channel");
    }

    // an independent reader
    if let Some(python) = python_with_rosbags("latched_topics_keep_their_qos_and_rosbags_reads_it") {
        let script = "import sys\nfrom pathlib import Path\nfrom rosbags.rosbag2 import Reader\nwith Reader(Path(sys.argv[1])) as r:\n    for c in sorted(r.connections, key=lambda c: c.topic):\n        q = c.ext.offered_qos_profiles[0]\n        print(c.topic, q.durability.name, q.depth)\n";
        let out = std::process::Command::new(&python).args(["-c", script]).arg(&d).output().unwrap();
        assert!(out.status.success(), "rosbags: {}", String::from_utf8_lossy(&out.stderr));
        let lines: Vec<String> = String::from_utf8_lossy(&out.stdout).lines().map(String::from).collect();
        let want: Vec<String> = expected.iter().map(|(n, dur, depth)| format!("{n} {} {depth}", dur.to_uppercase())).collect();
        assert_eq!(lines, want, "rosbags reads the offered QoS");
    }
    let _ = std::fs::remove_dir_all(&root);
}

/// The `rosbags` Python package (an independent reader) opens a bag we wrote and decodes
/// JointState and WrenchStamped with the values we wrote. Skips with a reason when python or
/// rosbags is absent, unless CONTACT_SIM_REQUIRE_ROSBAGS=1 (scripts/ros-test.sh sets it).
#[test]
fn rosbags_python_reads_our_bag() {
    let Some(python) = python_with_rosbags("rosbags_python_reads_our_bag") else { return };
    let root = tmp("rosbags");
    let d = root.join("bag");
    record(&scene("bag_arm"), &d, 0.3);
    let bag = read_bag(&d).unwrap();
    let script = r#"
import sys
from pathlib import Path
from rosbags.rosbag2 import Reader
from rosbags.typesys import Stores, get_typestore
ts = get_typestore(Stores.ROS2_JAZZY)
n = {}
with Reader(Path(sys.argv[1])) as r:
    for conn, t, raw in r.messages():
        m = ts.deserialize_cdr(raw, conn.msgtype)
        n[conn.topic] = n.get(conn.topic, 0) + 1
        if conn.topic == '/joint_states' and n[conn.topic] == 40:
            print('JS', t, m.header.stamp.sec, m.header.stamp.nanosec, ','.join(m.name), ','.join(repr(float(x)) for x in m.position), ','.join(repr(float(x)) for x in m.effort))
        if conn.topic == '/wrist_ft/wrench_ideal' and n[conn.topic] == 40:
            f, q = m.wrench.force, m.wrench.torque
            print('WS', m.header.frame_id, repr(float(f.x)), repr(float(f.y)), repr(float(f.z)), repr(float(q.z)))
print('COUNT', n['/joint_states'], n['/wrist_ft/wrench_ideal'])
"#;
    let out = std::process::Command::new(&python).args(["-c", script]).arg(&d).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "rosbags failed: {}{}", stdout, String::from_utf8_lossy(&out.stderr));
    let js = bag.topic_index("/joint_states").unwrap();
    let Msg::JointState(j) = &bag.messages_on(js).nth(39).unwrap().msg else { panic!() };
    let ws = bag.topic_index("/wrist_ft/wrench_ideal").unwrap();
    let Msg::WrenchStamped(w) = &bag.messages_on(ws).nth(39).unwrap().msg else { panic!() };
    let line = |tag: &str| stdout.lines().find(|l| l.starts_with(tag)).unwrap_or_else(|| panic!("no {tag} line in {stdout}")).split(' ').skip(1).map(String::from).collect::<Vec<_>>();
    let l = line("JS");
    assert_eq!(l[1].parse::<i64>().unwrap() * 1_000_000_000 + l[2].parse::<i64>().unwrap(), j.header.stamp.to_ns());
    assert_eq!(l[3], j.name.join(","));
    let pos: Vec<f64> = l[4].split(',').map(|x| x.parse().unwrap()).collect();
    assert_eq!(pos, j.position, "positions bit for bit");
    let eff: Vec<f64> = l[5].split(',').map(|x| x.parse().unwrap()).collect();
    assert_eq!(eff, j.effort);
    let l = line("WS");
    assert_eq!(l[0], w.header.frame_id);
    assert_eq!([l[1].parse::<f64>().unwrap(), l[2].parse().unwrap(), l[3].parse().unwrap()], w.wrench.force);
    assert_eq!(l[4].parse::<f64>().unwrap(), w.wrench.torque[2]);
    let l = line("COUNT");
    assert_eq!(l[0].parse::<u64>().unwrap(), bag.topics[js].count);
    let _ = std::fs::remove_dir_all(&root);
}

/// A bag compared with itself: zero offset, zero error, correlation 1.
#[test]
fn self_compare_gives_zero_error() {
    let root = tmp("self");
    let d = root.join("bag");
    let bag = record(&scene("bag_push"), &d, 2.0);
    let (r, _) = compare(&bag, &bag, &CompareOptions::default());
    assert_eq!(r.alignment.offset_s, 0.0);
    assert_eq!(r.alignment.signal, "velocity");
    assert!(r.joints.len() == 9 && r.wrenches.len() == 6, "{} joints {} wrenches", r.joints.len(), r.wrenches.len());
    for j in &r.joints {
        for m in [j.position, j.velocity, j.effort].into_iter().flatten() {
            assert_eq!(m.rmse, 0.0, "{}", j.name);
            assert_eq!(m.max_abs, 0.0, "{}", j.name);
        }
    }
    assert!(joint(&r, "arm_joint2").position.unwrap().correlation.unwrap() > 0.999_999);
    for w in &r.wrenches {
        assert_eq!(w.force_rmse_n, 0.0);
        assert_eq!(w.torque_rmse_nm, 0.0);
    }
    for e in &r.contact_events {
        assert!(e.onset_errors_s.iter().chain(&e.loss_errors_s).all(|x| *x == 0.0));
    }
    // the hand touches the box: one onset in both
    let hand = r.contact_events.iter().find(|e| e.topic == "/contact_wrenches/hand").unwrap();
    assert!(!hand.sim_onsets_s.is_empty());
    let _ = std::fs::remove_dir_all(&root);
}

/// A copy shifted by 37 ms: the offset is found within one sample (5 ms at 200 Hz), and after
/// alignment the errors are small.
#[test]
fn shift_of_37_ms_is_found_within_one_sample() {
    let root = tmp("shift");
    let d = root.clone();
    let bag = record(&scene("bag_arm"), &d.join("orig"), 3.0);
    let shift = 37_000_000i64;
    let shifted = rewrite(&bag, &d.join("shifted"), |_, t, m| Some((t + shift as u64, shift_stamp(m, shift))));
    let (r, _) = compare(&bag, &shifted, &CompareOptions::default());
    let dt = r.alignment.grid_dt_s;
    assert!((dt - 0.005).abs() < 1e-9);
    assert!((r.alignment.offset_s - 0.037).abs() <= dt, "offset {} s", r.alignment.offset_s);
    eprintln!("37 ms shift: estimated offset {:.3} ms", r.alignment.offset_s * 1e3);
    let e = joint(&r, "arm_joint2").position.unwrap();
    assert!(e.rmse < 2e-3 && e.correlation.unwrap() > 0.999, "{e:?}");
    // the other way round: -37 ms
    let (r2, _) = compare(&shifted, &bag, &CompareOptions::default());
    assert!((r2.alignment.offset_s + 0.037).abs() <= dt, "offset {} s", r2.alignment.offset_s);
    // a long shift goes through the coarse search first
    let long = 412_000_000i64;
    let shifted = rewrite(&bag, &d.join("long"), |_, t, m| Some((t + long as u64, shift_stamp(m, long))));
    let (r3, _) = compare(&bag, &shifted, &CompareOptions::default());
    assert!((r3.alignment.offset_s - 0.412).abs() <= dt, "offset {} s", r3.alignment.offset_s);
    let _ = std::fs::remove_dir_all(&root);
}

/// A copy with joint 3 (arm_joint3) offset by 0.01 rad shows exactly that on joint 3 and
/// nothing elsewhere.
#[test]
fn joint3_offset_shows_on_joint3_only() {
    let root = tmp("j3");
    let d = root.clone();
    let bag = record(&scene("bag_arm"), &d.join("orig"), 2.0);
    let copy = rewrite(&bag, &d.join("j3"), |topic, t, m| {
        let mut m = m.clone();
        if let (Msg::JointState(js), "/joint_states") = (&mut m, topic) {
            let k = js.name.iter().position(|n| n == "arm_joint3").unwrap();
            js.position[k] += 0.01;
        }
        Some((t, m))
    });
    let (r, _) = compare(&bag, &copy, &CompareOptions::default());
    assert_eq!(r.alignment.offset_s, 0.0);
    for j in &r.joints {
        let p = j.position.unwrap();
        if j.name == "arm_joint3" {
            assert!((p.rmse - 0.01).abs() < 1e-12 && (p.max_abs - 0.01).abs() < 1e-12 && (p.mean + 0.01).abs() < 1e-12, "{p:?}");
        } else {
            assert!(p.rmse < 1e-15 && p.max_abs < 1e-15, "{}: {p:?}", j.name);
        }
        assert_eq!(j.velocity.unwrap().rmse, 0.0);
        assert_eq!(j.effort.unwrap().rmse, 0.0);
    }
    let _ = std::fs::remove_dir_all(&root);
}

/// A synthetic "hardware" bag: the scene with more mass on arm_link3 (+60 %, felt by joints
/// 1–3) and 20× the Coulomb friction of arm_joint6 (0.05 → 1 N·m), driven by the nominal
/// recording's commands. Replayed with the nominal scene, the errors grow on the affected
/// joints (2 and 6) and stay small on joint 4; replayed with the perturbed scene, they vanish.
#[test]
fn perturbed_hardware_bag_shows_error_on_affected_joints() {
    let root = tmp("perturbed");
    let d = root.clone();
    let nominal = scene("bag_arm");
    let commands = record(&nominal, &d.join("commands"), 3.0);
    let mut hw_scene = nominal.clone();
    {
        let m = &mut hw_scene.model;
        let l3 = m.body_id("arm_link3").unwrap();
        m.bodies[l3].mass *= 1.6;
        m.bodies[l3].inertia_com *= 1.6;
        let j6 = m.bodies.iter().position(|b| b.joint.name == "arm_joint6").unwrap();
        m.bodies[j6].joint.friction = 1.0;
    }
    replay(&commands, &hw_scene, &ReplayConfig::default(), &d.join("hw")).unwrap();
    let hw = read_bag(&d.join("hw")).unwrap();
    // control: the hardware's own parameters reproduce it exactly (replay is deterministic)
    replay(&hw, &hw_scene, &ReplayConfig::default(), &d.join("same")).unwrap();
    let (same, _) = compare(&read_bag(&d.join("same")).unwrap(), &hw, &CompareOptions::default());
    for j in &same.joints {
        assert!(j.position.unwrap().rmse < 1e-12, "{}: {:?}", j.name, j.position);
    }
    // nominal parameters
    let rep = replay(&hw, &nominal, &ReplayConfig::default(), &d.join("sim")).unwrap();
    assert!(rep.commands_applied > 100 && rep.warnings.is_empty(), "{:?}", rep.warnings);
    let (r, plot) = compare(&read_bag(&d.join("sim")).unwrap(), &hw, &CompareOptions::default());
    let rmse = |n: &str| joint(&r, n).position.unwrap().rmse;
    let eff = |n: &str| joint(&r, n).effort.unwrap().rmse;
    eprintln!("position RMSE (mrad): j2 {:.3} j4 {:.3} j6 {:.3}; effort RMSE (N·m): j2 {:.3} j4 {:.3} j6 {:.3}", 1e3 * rmse("arm_joint2"), 1e3 * rmse("arm_joint4"), 1e3 * rmse("arm_joint6"), eff("arm_joint2"), eff("arm_joint4"), eff("arm_joint6"));
    assert!(rmse("arm_joint2") > 2.0 * rmse("arm_joint4"), "joint 2 vs 4");
    assert!(rmse("arm_joint6") > 2.0 * rmse("arm_joint4"), "joint 6 vs 4");
    assert!(eff("arm_joint2") > 2.0 * eff("arm_joint4"), "effort joint 2 vs 4");
    assert!(rmse("arm_joint2") > 1e-4 && rmse("arm_joint6") > 1e-4);
    assert!(r.alignment.offset_s.abs() <= r.alignment.grid_dt_s, "offset {}", r.alignment.offset_s);
    // the HTML report: a table, one plot per joint
    let page = contact_sim::compare::report::write_html(&d.join("report"), &r, &plot).unwrap();
    let html = std::fs::read_to_string(page).unwrap();
    assert_eq!(html.matches("<svg").count(), r.joints.len() + r.wrenches.len());
    assert!(html.contains("arm_joint6") && html.contains("class=\"bad\""));
    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(d.join("report/compare.json")).unwrap()).unwrap();
    assert!(json["alignment"]["offset_s"].is_number());
    let _ = std::fs::remove_dir_all(&root);
}

/// A file cut in the middle is read up to the cut with a warning; a file cut before any
/// record is an error naming it; a process killed mid-recording leaves a bag readable up to its
/// last flushed chunk.
#[test]
fn truncated_and_interrupted_bags() {
    let root = tmp("trunc");
    let d = root.clone();
    let full = record(&scene("bag_arm"), &d.join("full"), 3.0);
    let mcap = d.join("full/full_0.mcap");
    let bytes = std::fs::read(&mcap).unwrap();
    assert!(bytes.len() > 3 * 256 * 1024, "several chunks: {} bytes", bytes.len());
    let cut = d.join("cut");
    std::fs::create_dir_all(&cut).unwrap();
    std::fs::write(cut.join("cut_0.mcap"), &bytes[..bytes.len() * 6 / 10]).unwrap();
    let bag = read_bag(&cut).unwrap();
    assert!(bag.truncated);
    assert!(bag.warnings.iter().any(|w| w.contains("cut_0.mcap") && (w.contains("truncated") || w.contains("cut"))), "{:?}", bag.warnings);
    assert!(bag.warnings.iter().any(|w| w.contains("metadata.yaml")), "{:?}", bag.warnings);
    assert!(bag.messages.len() > full.messages.len() / 3 && bag.messages.len() < full.messages.len(), "{} of {}", bag.messages.len(), full.messages.len());
    for (a, b) in bag.messages.iter().zip(&full.messages) {
        assert_eq!(a.msg, b.msg);
    }
    // the truncated bag is still usable: compared with the full one, zero error over the overlap
    let (r, _) = compare(&bag, &full, &CompareOptions::default());
    assert!(r.alignment.offset_s.abs() < r.alignment.grid_dt_s, "{:?}", r.alignment);
    assert!(joint(&r, "arm_joint2").position.unwrap().rmse < 1e-4, "{:?}", joint(&r, "arm_joint2"));

    std::fs::write(cut.join("cut_0.mcap"), &bytes[..5]).unwrap();
    let e = read_bag(&cut).unwrap_err().to_string();
    assert!(e.contains("cut_0.mcap"), "{e}");
    assert!(read_bag(&d.join("nothing_here")).unwrap_err().to_string().contains("nothing_here"));

    // killed: chunks flushed, then more messages, then no close (no Drop either)
    let k = d.join("killed");
    let mut w = BagWriter::create(&k, &WriterOptions { chunk_size_bytes: 4096, ..Default::default() }).unwrap();
    let id = w.add_topic("/joint_states", MsgType::JointState).unwrap();
    let msg = |i: usize| Msg::JointState(JointState { header: Header::new(i as i64 * 1_000_000, ""), name: vec!["j".into()], position: vec![i as f64], ..Default::default() });
    for i in 0..500 {
        w.write(id, i as u64 * 1_000_000, &msg(i)).unwrap();
    }
    w.flush().unwrap();
    for i in 500..520 {
        w.write(id, i as u64 * 1_000_000, &msg(i)).unwrap();
    }
    std::mem::forget(w);
    let bag = read_bag(&k).unwrap();
    assert!(bag.truncated, "{:?}", bag.warnings);
    assert_eq!(bag.messages.len(), 500, "everything up to the last flush, nothing after it");
    assert_eq!(bag.messages[499].msg, msg(499));
    let _ = std::fs::remove_dir_all(&root);
}

/// Unknown topic types are listed and skipped; a topic with the wrong type is reported by
/// name; undecodable messages are counted; the rest is used.
#[test]
fn unknown_topics_wrong_types_and_garbage_are_reported() {
    let root = tmp("mixed");
    let d = root.clone();
    let path = d.join("mixed.mcap");
    {
        let f = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
        let mut w = mcap::WriteOptions::new().profile("ros2").create(f).unwrap();
        let meta = Default::default();
        let s_str = w.add_schema("std_msgs/msg/Int32", "ros2msg", b"int32 data\n").unwrap();
        let c_str = w.add_channel(s_str, "/chatter", "cdr", &meta).unwrap();
        let s_ws = w.add_schema("geometry_msgs/msg/WrenchStamped", "ros2msg", MsgType::WrenchStamped.schema().as_bytes()).unwrap();
        let c_wrong = w.add_channel(s_ws, "/joint_states", "cdr", &meta).unwrap();
        let s_js = w.add_schema("sensor_msgs/msg/JointState", "ros2msg", MsgType::JointState.schema().as_bytes()).unwrap();
        let c_js = w.add_channel(s_js, "/joint_commands", "cdr", &meta).unwrap();
        let c_bad = w.add_channel(s_js, "/garbage", "cdr", &meta).unwrap();
        let put = |w: &mut mcap::Writer<_>, ch: u16, t: u64, data: &[u8]| w.write_to_known_channel(&mcap::records::MessageHeader { channel_id: ch, sequence: 0, log_time: t, publish_time: t }, data).unwrap();
        for i in 0..10u64 {
            put(&mut w, c_str, i, &[0, 1, 0, 0, 3, 0, 0, 0, b'h', b'i', 0]);
            put(&mut w, c_wrong, i, &Msg::WrenchStamped(WrenchStamped::default()).encode());
            let js = Msg::JointState(JointState { name: vec!["arm_joint2".into()], position: vec![0.2 + 0.01 * i as f64], ..Default::default() });
            put(&mut w, c_js, i * 100_000_000, &js.encode());
            put(&mut w, c_bad, i, &[0, 1, 0, 0, 255, 255, 255, 255]);
        }
        w.finish().unwrap();
    }
    let bag = read_bag(&path).unwrap();
    let text = bag.warnings.join("\n");
    assert!(text.contains("'/chatter'") && text.contains("std_msgs/msg/Int32") && text.contains("skipped"), "{text}");
    assert!(text.contains("'/garbage'") && text.contains("10 of 10"), "{text}");
    assert_eq!(bag.messages_on(bag.topic_index("/joint_commands").unwrap()).count(), 10);
    // compare names the mistyped topic and does not panic
    let (r, _) = compare(&bag, &bag, &CompareOptions::default());
    assert!(r.joints.is_empty());
    assert!(r.warnings.iter().any(|w| w.contains("'/joint_states' has type geometry_msgs/msg/WrenchStamped, expected sensor_msgs/msg/JointState")), "{:?}", r.warnings);
    // replay uses what is readable: the JointState commands move joint 2 from 0.1 towards 0.29
    // (the position servo sags under gravity by a few hundredths)
    let rep = replay(&bag, &scene("bag_arm"), &ReplayConfig { duration_s: Some(1.5), ..Default::default() }, &d.join("out")).unwrap();
    assert_eq!(rep.commands_applied, 10);
    let out = read_bag(&d.join("out")).unwrap();
    let Msg::JointState(last) = &out.messages_on(out.topic_index("/joint_states").unwrap()).last().unwrap().msg else { panic!() };
    assert!((last.position[1] - 0.29).abs() < 0.06, "{:?}", last.position);
    let _ = std::fs::remove_dir_all(&root);
}

/// Float64MultiArray group commands and a JointTrajectory, with a joint-name mapping, are
/// replayed at their recorded times, and the initial state can come from the bag.
#[test]
fn replay_groups_trajectories_mapping_and_initial_state() {
    let root = tmp("groups");
    let d = root.clone();
    let hw_path = d.join("hw");
    let mut w = BagWriter::create(&hw_path, &WriterOptions::default()).unwrap();
    let js = w.add_topic("/joint_states", MsgType::JointState).unwrap();
    let grp = w.add_topic("/arm/position_commands", MsgType::Float64MultiArray).unwrap();
    let traj = w.add_topic("/joint_trajectory", MsgType::JointTrajectory).unwrap();
    let t0 = 1_700_000_000_000_000_000u64; // wall-clock stamps, as on hardware
    let names = ["j1", "j2", "j3", "j4", "j5", "j6", "j7"];
    for i in 0..=200u64 {
        let m = Msg::JointState(JointState { header: Header::new((t0 + i * 10_000_000) as i64, ""), name: names.iter().map(|s| s.to_string()).collect(), position: vec![0.0, 0.3, 0.0, 1.4, 0.0, 0.9, 0.0], velocity: vec![0.0; 7], effort: vec![] });
        w.write(js, t0 + i * 10_000_000, &m).unwrap();
    }
    w.write(grp, t0 + 100_000_000, &Msg::Float64MultiArray(Float64MultiArray { data: vec![0.5, 1.2], ..Default::default() })).unwrap();
    let jt = JointTrajectory {
        header: Header::new(0, ""),
        joint_names: vec!["j6".into()],
        points: vec![
            JointTrajectoryPoint { positions: vec![0.9], time_from_start: Time { sec: 0, nanosec: 0 }, ..Default::default() },
            JointTrajectoryPoint { positions: vec![0.4], time_from_start: Time { sec: 1, nanosec: 0 }, ..Default::default() },
        ],
    };
    w.write(traj, t0 + 200_000_000, &Msg::JointTrajectory(jt)).unwrap();
    w.finish().unwrap();
    let hw = read_bag(&hw_path).unwrap();
    let cfg = ReplayConfig {
        groups: Some(vec![GroupMap { topic: "/arm/position_commands".into(), joints: vec!["j2".into(), "j4".into()], interface: GroupInterface::Position }]),
        joint_map: names.iter().enumerate().map(|(i, n)| (n.to_string(), format!("arm_joint{}", i + 1))).collect(),
        initial_state: true,
        interpolation: "linear".into(),
        ..Default::default()
    };
    let rep = replay(&hw, &scene("bag_arm"), &cfg, &d.join("sim")).unwrap();
    assert!(rep.initial_state_from_bag && rep.trajectories == 1 && rep.commands_applied == 1, "{rep:?}");
    assert!((rep.rate_hz - 100.0).abs() < 1e-9, "rate from the hardware joint states: {}", rep.rate_hz);
    assert!(rep.unknown_joints.is_empty(), "{:?}", rep.unknown_joints);
    let sim = read_bag(&d.join("sim")).unwrap();
    let states: Vec<&JointState> = sim.messages_on(sim.topic_index("/joint_states").unwrap()).map(|m| match &m.msg {
        Msg::JointState(j) => j,
        _ => panic!(),
    }).collect();
    // starts at the recorded state, stamped in the hardware time base
    assert_eq!(states[0].header.stamp.to_ns() as u64, t0);
    assert!((states[0].position[1] - 0.3).abs() < 1e-12 && (states[0].position[3] - 1.4).abs() < 1e-12);
    // ends at the group targets and the trajectory's last point (within the servos' sag under
    // gravity)
    let last = states.last().unwrap();
    assert!((last.position[1] - 0.5).abs() < 0.08 && (last.position[3] - 1.2).abs() < 0.05, "{:?}", last.position);
    assert!((last.position[5] - 0.4).abs() < 0.03, "{:?}", last.position);
    // the trajectory is followed in time (linear interpolation): half-way (0.5 s after its start
    // at 0.2 s), j6 is near its midpoint 0.65
    let mid = states.iter().find(|s| s.header.stamp.to_ns() as u64 >= t0 + 700_000_000).unwrap();
    assert!((mid.position[5] - 0.65).abs() < 0.05, "{:?}", mid.position);
    // compared with a renamed hardware bag through the joint map (relative time base not needed:
    // the replay is in the hardware's time base)
    let opts = CompareOptions { joint_map: cfg.joint_map.clone(), ..Default::default() };
    let (r, _) = compare(&sim, &hw, &opts);
    assert_eq!(r.alignment.time_base, "absolute");
    assert_eq!(r.joints.len(), 7, "{:?}", r.unmatched_joints);
    let _ = std::fs::remove_dir_all(&root);
}

/// The shipped example replay configuration parses, every key known.
#[test]
fn example_replay_config_parses() {
    let text = std::fs::read_to_string(repo("config/replay.example.yaml")).unwrap();
    let cfg: ReplayConfig = serde_yaml::from_str(&text).unwrap();
    assert!(cfg.initial_state && cfg.joint_map["j4"] == "arm_joint4" && cfg.groups.unwrap()[0].interface == GroupInterface::Position);
    let bad: Result<ReplayConfig, _> = serde_yaml::from_str("joint_mapp: {}");
    assert!(bad.unwrap_err().to_string().contains("joint_mapp"));
}

/// A joint state of 20 joints (about 600 bytes of CDR), stamped `i` ns.
fn flood_message(i: u64) -> Msg {
    Msg::JointState(JointState { header: Header::new(i as i64, ""), name: (0..20).map(|j| format!("joint_{j}")).collect(), position: vec![1.0; 20], velocity: vec![0.5; 20], effort: vec![0.0; 20] })
}

/// The recorder never blocks its producers: a queue with a tiny byte budget, flooded from a loop,
/// drops and counts what does not fit; written + dropped = sent, the bag is complete, and the
/// queue never held more than its budget plus one message.
#[test]
fn recorder_drops_instead_of_blocking() {
    let root = tmp("flood");
    let d = root.join("bag");
    let limit = 16 * 1024;
    let mut rec = BagRecorder::start(&d, &RecorderOptions { queue_limit_bytes: limit, ..Default::default() }).unwrap();
    let id = rec.add_topic("/joint_states", MsgType::JointState);
    let h = rec.handle();
    let n = 20_000u64;
    let msgs: Vec<Msg> = (0..n).map(flood_message).collect();
    let one = msgs[0].heap_bytes() + 512;
    let mut ok = 0u64;
    for (i, m) in msgs.into_iter().enumerate() {
        ok += h.record(id, i as u64, m) as u64;
    }
    drop(h);
    let s = rec.finish().unwrap();
    assert!(s.dropped > 0, "a 16 KiB queue flooded with 20 000 messages drops");
    assert_eq!(s.bag.messages, ok);
    assert_eq!(s.bag.messages + s.dropped, n);
    assert!(s.peak_queued_bytes <= limit + one, "peak {} B over the {limit} B budget", s.peak_queued_bytes);
    let bag = read_bag(&d).unwrap();
    assert!(bag.warnings.is_empty() && bag.messages.len() as u64 == ok);
    let _ = std::fs::remove_dir_all(&root);
}

/// A writer that falls behind loses nothing within the default budget: 100 000 ready-made
/// messages recorded in a tight loop (far faster than the writer serializes and writes them)
/// pile up in the queue, far beyond the 16 384 messages the queue used to hold, and every one
/// reaches the bag, in order.
#[test]
fn recorder_keeps_everything_while_the_writer_falls_behind() {
    let root = tmp("behind");
    let d = root.join("bag");
    let mut rec = BagRecorder::start(&d, &RecorderOptions::default()).unwrap();
    let id = rec.add_topic("/joint_states", MsgType::JointState);
    let h = rec.handle();
    let n = 100_000u64;
    let msgs: Vec<Msg> = (0..n).map(flood_message).collect();
    let per_message = msgs[0].heap_bytes();
    for (i, m) in msgs.into_iter().enumerate() {
        assert!(h.record(id, i as u64, m), "message {i} dropped");
    }
    let peak = h.peak_queued_bytes();
    drop(h);
    let s = rec.finish().unwrap();
    println!("peak queue {:.1} MB ({} messages' worth)", peak as f64 / 1e6, peak / per_message);
    assert_eq!((s.dropped, s.bag.messages), (0, n));
    assert!(peak > 16_384 * per_message, "the writer fell behind by more than 16 384 messages (peak {peak} B)");
    let bag = read_bag(&d).unwrap();
    assert!(bag.warnings.is_empty());
    assert!(bag.messages.iter().enumerate().all(|(i, m)| m.log_time_ns == i as u64), "every message, in order");
    let _ = std::fs::remove_dir_all(&root);
}

/// Writes `n` flood messages from `first` into `w` (topic 0).
fn write_flood(w: &mut BagWriter, first: u64, n: u64) {
    let t = contact_sim::bag::TopicId(0);
    for i in first..first + n {
        w.write(t, i * 1000, &flood_message(i)).unwrap();
    }
}

/// A bag split by size: every file is a complete MCAP listed in `metadata.yaml` with its own
/// count and time range, the reader reads them as one bag (every message once, in order), and
/// the writer's memory stays flat: what it keeps per written chunk (the MCAP chunk index) is
/// freed with each finished file. Unsplit, the same writing keeps growing (the test's control).
#[test]
fn a_bag_split_by_size_reads_as_one_and_keeps_the_writer_memory_flat() {
    let root = tmp("split");
    let opts = |max: Option<u64>| WriterOptions { chunk_size_bytes: 4096, max_file_bytes: max, ..Default::default() };
    // memory kept by writing 40 000 messages (about 25 MB, 6 000 chunks) after a warm-up
    let growth = |name: &str, max: Option<u64>| -> (i64, Vec<String>) {
        let mut w = BagWriter::create(&root.join(name), &opts(max)).unwrap();
        w.add_topic("/joint_states", MsgType::JointState).unwrap();
        write_flood(&mut w, 0, 5_000);
        let grown = live_bytes_during(|| write_flood(&mut w, 5_000, 40_000));
        let files = w.file_names();
        w.finish().unwrap();
        (grown, files)
    };
    let (unsplit, one) = growth("unsplit", None);
    let (split, files) = growth("split", Some(1 << 20));
    println!("writer memory kept over 40 000 messages: unsplit {unsplit} B, split at 1 MiB {split} B ({} files)", files.len());
    assert_eq!(one.len(), 1);
    assert!(files.len() >= 20, "{} files", files.len());
    assert!(unsplit > 1_000_000, "the control: an unsplit file keeps its chunk indexes ({unsplit} B)");
    assert!(split < 200_000, "split files keep the writer flat ({split} B)");
    // the split bag: metadata lists every file with its count; the reader reads all of it
    let d = root.join("split");
    let meta: serde_yaml::Value = serde_yaml::from_str(&std::fs::read_to_string(d.join("metadata.yaml")).unwrap()).unwrap();
    let info = &meta["rosbag2_bagfile_information"];
    let listed: Vec<String> = info["relative_file_paths"].as_sequence().unwrap().iter().map(|v| v.as_str().unwrap().to_string()).collect();
    assert_eq!(listed, files);
    assert_eq!(listed[1], "split_1.mcap");
    let per_file: u64 = info["files"].as_sequence().unwrap().iter().map(|f| f["message_count"].as_u64().unwrap()).sum();
    assert_eq!((per_file, info["message_count"].as_u64().unwrap()), (45_000, 45_000));
    for f in &files {
        let bytes = std::fs::read(d.join(f)).unwrap();
        let summary = mcap::Summary::read(&bytes).unwrap().expect("each file has its summary");
        assert_eq!(summary.channels.len(), 1, "{f} declares its channel");
    }
    let bag = read_bag(&d).unwrap();
    assert!(bag.warnings.is_empty(), "{:?}", bag.warnings);
    assert_eq!(bag.messages.len(), 45_000);
    assert!(bag.messages.iter().enumerate().all(|(i, m)| m.log_time_ns == i as u64 * 1000));
    let _ = std::fs::remove_dir_all(&root);
}

/// Starts `contact_sim run --record` on a long run, waits until the bag has been flushed once,
/// sends `sig`, returns the run's output and the bag directory.
fn record_and_signal(name: &str, sig: i32) -> (std::process::Output, PathBuf) {
    let d = tmp(name);
    let bag_dir = d.join("bag");
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_contact_sim"))
        .args(["run"])
        .arg(repo("tests/data/bag_arm.yaml"))
        .args(["--duration", "600", "--quiet", "--record-rate", "100", "--record"])
        .arg(&bag_dir)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let t = std::time::Instant::now();
    loop {
        let meta = std::fs::read_to_string(bag_dir.join("metadata.yaml")).unwrap_or_default();
        let count = meta.lines().find_map(|l| l.trim().strip_prefix("message_count: ")).and_then(|n| n.parse::<u64>().ok()).unwrap_or(0);
        if count > 0 {
            break;
        }
        if t.elapsed().as_secs() > 60 {
            unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
            panic!("no flush within 60 s");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(child.id() as i32, sig) };
    (child.wait_with_output().unwrap(), bag_dir)
}

/// `contact_sim run --record` stopped by SIGINT or SIGTERM closes the bag properly (footer,
/// metadata); killed by SIGKILL, its bag is still read, up to the last written chunk.
#[test]
fn cli_record_survives_signals() {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        let (out, bag_dir) = record_and_signal(&format!("sig{sig}"), sig);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
        assert!(stdout.contains("bag written to"), "{stdout}");
        let bag = read_bag(&bag_dir).unwrap();
        assert!(bag.warnings.is_empty() && !bag.truncated, "{:?}", bag.warnings);
        assert!(bag.messages.len() > 100);
        let _ = std::fs::remove_dir_all(bag_dir.parent().unwrap());
    }
    let (out, bag_dir) = record_and_signal("sigkill", libc::SIGKILL);
    assert!(!out.status.success());
    let bag = read_bag(&bag_dir).unwrap();
    assert!(bag.truncated && bag.warnings.iter().any(|w| w.contains("bag_0.mcap")), "{:?}", bag.warnings);
    assert!(bag.messages.len() > 100, "{} messages", bag.messages.len());
    // what was read is a consistent prefix: joint states at 100 Hz without gaps
    let js: Vec<u64> = bag.messages_on(bag.topic_index("/joint_states").unwrap()).map(|m| m.log_time_ns).collect();
    assert!(js.windows(2).all(|w| w[1] - w[0] == 10_000_000), "gapless 100 Hz");
    let _ = std::fs::remove_dir_all(bag_dir.parent().unwrap());
}

/// The command line end to end: run --record, replay, compare with --report and --json; bad
/// input stops with one line naming the file, exit code 2.
#[test]
fn cli_run_replay_compare() {
    let root = tmp("cli");
    let d = root.clone();
    let exe = env!("CARGO_BIN_EXE_contact_sim");
    let run = |args: &[&std::ffi::OsStr]| std::process::Command::new(exe).args(args).current_dir(&d).output().unwrap();
    let os = |s: &str| std::ffi::OsString::from(s);
    let scene = repo("tests/data/bag_push.yaml");
    let o = run(&[&os("run"), scene.as_os_str(), &os("--duration"), &os("1.5"), &os("--quiet"), &os("--record-rate"), &os("200"), &os("--record"), &os("hw")]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = run(&[&os("replay"), &os("hw"), scene.as_os_str(), &os("--out"), &os("sim")]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).contains("at 200 Hz"), "{}", String::from_utf8_lossy(&o.stdout));
    let o = run(&[&os("compare"), &os("sim"), &os("hw"), &os("--report"), &os("report"), &os("--json"), &os("out.json")]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(stdout.contains("time offset +0.0 ms") && stdout.contains("arm_joint2") && stdout.contains("/contact_wrenches/hand"), "{stdout}");
    assert!(d.join("report/index.html").exists() && d.join("report/compare.json").exists());
    let html = std::fs::read_to_string(d.join("report/index.html")).unwrap();
    assert!(html.contains("<h2>Contact events</h2>") && html.contains("/contact_wrenches/hand"));
    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(d.join("out.json")).unwrap()).unwrap();
    assert_eq!(json["joints"].as_array().unwrap().len(), 9);
    assert_eq!(json["joints"][1]["position"]["rmse"].as_f64().unwrap(), 0.0);
    // the node's limit checks on request: this scene's scripted arm_joint4 starts at 2.00392 rad,
    // beyond the URDF limit of 2 rad, so the node would reject those commands
    let o = run(&[&os("replay"), &os("hw"), scene.as_os_str(), &os("--out"), &os("sim_reject"), &os("--limit-policy"), &os("reject")]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success() && err.contains("'/joint_commands'") && err.contains("rejected as the node would") && err.contains("arm_joint4"), "{err}");
    // bad input: one line, the file named, exit code 2
    for args in [vec![os("compare"), os("nope"), os("hw")], vec![os("replay"), os("hw"), os("missing.yaml"), os("--out"), os("x")], vec![os("run"), scene.clone().into_os_string(), os("--record"), os("hw")]] {
        let refs: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_os_str()).collect();
        let o = run(&refs);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains("nope") || err.contains("missing.yaml") || err.contains("hw"), "{err}");
    }
    let _ = std::fs::remove_dir_all(&d);
}
