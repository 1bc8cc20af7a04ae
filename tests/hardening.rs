//! Hardening against damaged or hostile input: corrupted bag chunks, bag metadata that
//! points outside the bag, junk files in a bag, outlier timestamps, absurd CLI values, closed
//! pipes, tet-mesh headers with huge counts.

use contact_sim::bag::msgs::*;
use contact_sim::bag::{read_bag, BagWriter, WriterOptions};
use std::path::{Path, PathBuf};

/// A fresh temporary directory for one test.
fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("contact_sim_hardening_{}_{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn js(i: u64) -> Msg {
    Msg::JointState(JointState { header: Header::new(i as i64 * 1_000_000, ""), name: vec!["j".into()], position: vec![i as f64], ..Default::default() })
}

fn wrench(i: u64) -> Msg {
    let mut w = WrenchStamped { header: Header::new(i as i64 * 1_000_000, "hand"), ..Default::default() };
    w.wrench.force[0] = i as f64;
    Msg::WrenchStamped(w)
}

/// Writes a bag of `n` JointState messages on `/joint_states` and `n` WrenchStamped on
/// `/wrench`, 1 ms apart, in small chunks.
fn write_bag(dir: &Path, n: u64) {
    let mut w = BagWriter::create(dir, &WriterOptions { chunk_size_bytes: 4096, ..Default::default() }).unwrap();
    let a = w.add_topic("/joint_states", MsgType::JointState).unwrap();
    let b = w.add_topic("/wrench", MsgType::WrenchStamped).unwrap();
    for i in 0..n {
        w.write(a, i * 1_000_000, &js(i)).unwrap();
        w.write(b, i * 1_000_000, &wrench(i)).unwrap();
    }
    w.finish().unwrap();
}

/// The (body offset, body length) of every top-level chunk record of an MCAP file.
fn chunks(bytes: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut at = 8;
    while at + 9 <= bytes.len() {
        let op = bytes[at];
        let len = u64::from_le_bytes(bytes[at + 1..at + 9].try_into().unwrap()) as usize;
        if op == 0x0F {
            break; // footer
        }
        if op == 0x06 {
            out.push((at + 9, len));
        }
        at += 9 + len;
    }
    out
}

fn the_mcap(dir: &Path) -> PathBuf {
    std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).find(|p| p.extension().is_some_and(|x| x == "mcap")).unwrap()
}

/// A chunk whose bytes were flipped is reported (file, chunk, topics, time range) and skipped;
/// every other message reads back intact.
#[test]
fn corrupted_chunk_is_reported_and_skipped() {
    let d = tmp("crc");
    write_bag(&d, 400);
    let good = read_bag(&d).unwrap();
    assert!(good.warnings.is_empty(), "{:?}", good.warnings);
    assert_eq!(good.messages.len(), 800);
    let file = the_mcap(&d);
    let mut bytes = std::fs::read(&file).unwrap();
    let cs = chunks(&bytes);
    assert!(cs.len() >= 5, "several chunks: {}", cs.len());
    // Flip a few bytes in the middle of the third chunk's records (past its 8+8+8+4+4+0+8-byte header).
    let (body, len) = cs[2];
    let mid = body + 40 + (len - 40) / 2;
    for b in &mut bytes[mid..mid + 4] {
        *b ^= 0x5A;
    }
    std::fs::write(&file, &bytes).unwrap();
    let bag = read_bag(&d).unwrap();
    let w: Vec<_> = bag.warnings.iter().filter(|w| w.contains("corrupted chunk")).collect();
    assert_eq!(w.len(), 1, "{:?}", bag.warnings);
    let w = w[0];
    let name = file.file_name().unwrap().to_str().unwrap();
    assert!(w.contains(name) && w.contains("chunk #3") && w.contains("CRC") && w.contains("/joint_states") && w.contains("/wrench") && w.contains("skipped"), "{w}");
    assert!(w.contains(" s to ") && w.contains("log time"), "{w}");
    // The rest is intact: every message read is the original at its time, and only the third chunk's are missing.
    assert!(bag.messages.len() < 800 && bag.messages.len() > 600, "{}", bag.messages.len());
    let by_time = |b: &contact_sim::bag::Bag, topic: &str| -> Vec<(u64, Msg)> {
        let t = b.topic_index(topic).unwrap();
        b.messages_on(t).map(|m| (m.log_time_ns, m.msg.clone())).collect()
    };
    for topic in ["/joint_states", "/wrench"] {
        let orig = by_time(&good, topic);
        let read = by_time(&bag, topic);
        for (t, m) in &read {
            let i = t / 1_000_000;
            assert_eq!(m, &orig[i as usize].1, "{topic} at {t} ns");
        }
        // the missing ones form one contiguous run (one chunk)
        let times: Vec<u64> = read.iter().map(|(t, _)| t / 1_000_000).collect();
        let gaps: Vec<_> = times.windows(2).filter(|w| w[1] != w[0] + 1).collect();
        assert_eq!(gaps.len(), 1, "{topic}: {gaps:?}");
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// `relative_file_paths` entries that leave the bag directory are refused, naming metadata.yaml
/// and the entry.
#[test]
fn metadata_paths_outside_the_bag_are_refused() {
    let root = tmp("meta");
    let d = root.join("bag");
    write_bag(&d, 10);
    let name = the_mcap(&d).file_name().unwrap().to_str().unwrap().to_string();
    // a copy of the good file outside the bag, which must not be read
    std::fs::copy(d.join(&name), root.join("outside.mcap")).unwrap();
    let meta = std::fs::read_to_string(d.join("metadata.yaml")).unwrap();
    assert!(meta.contains(&name));
    let abs = root.join("outside.mcap").display().to_string();
    for bad in ["../outside.mcap", abs.as_str(), "sub/../../outside.mcap"] {
        std::fs::write(d.join("metadata.yaml"), meta.replace(&name, bad)).unwrap();
        let e = read_bag(&d).unwrap_err().to_string();
        assert!(e.contains("metadata.yaml") && e.contains(bad) && e.contains("leaves the bag directory"), "{bad}: {e}");
    }
    std::fs::write(d.join("metadata.yaml"), meta.replace(&name, &format!("./{name}"))).unwrap();
    assert_eq!(read_bag(&d).unwrap().messages.len(), 20);
    let _ = std::fs::remove_dir_all(&root);
}

/// One junk `.mcap` next to a good one is a warning naming it; the good file is read.
#[test]
fn junk_mcap_next_to_a_good_one_is_skipped() {
    let d = tmp("junk");
    write_bag(&d, 10);
    std::fs::remove_file(d.join("metadata.yaml")).unwrap();
    std::fs::write(d.join("zz_junk.mcap"), b"this is not an mcap file at all").unwrap();
    let bag = read_bag(&d).unwrap();
    assert_eq!(bag.messages.len(), 20);
    assert!(bag.warnings.iter().any(|w| w.contains("zz_junk.mcap") && w.contains("not an MCAP file") && w.contains("skipped")), "{:?}", bag.warnings);
    // only junk: an error naming the file
    let j = tmp("junk_only");
    std::fs::write(j.join("a.mcap"), b"junk").unwrap();
    std::fs::write(j.join("b.mcap"), b"junk too").unwrap();
    let e = read_bag(&j).unwrap_err().to_string();
    assert!(e.contains("a.mcap") && e.contains("not an MCAP file"), "{e}");
    let _ = std::fs::remove_dir_all(&d);
    let _ = std::fs::remove_dir_all(&j);
}

fn repo(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

fn cli(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_contact_sim")).args(args).current_dir(repo(".")).output().expect("run contact_sim")
}

/// One message whose log time and stamp are 10⁶ s off is reported by topic and skipped, so the
/// bag's time range (which bounds replay and compare) is that of the other messages.
#[test]
fn outlier_timestamp_is_reported_and_skipped() {
    let d = tmp("outlier");
    let mut w = BagWriter::create(&d, &WriterOptions::default()).unwrap();
    let a = w.add_topic("/joint_states", MsgType::JointState).unwrap();
    for i in 0..200u64 {
        if i == 77 {
            let far = 1_000_000 * 1_000_000_000u64;
            let Msg::JointState(mut m) = js(i) else { unreachable!() };
            m.header = Header::new(far as i64, "");
            w.write(a, far, &Msg::JointState(m)).unwrap();
        } else {
            w.write(a, i * 1_000_000, &js(i)).unwrap();
        }
    }
    w.finish().unwrap();
    let bag = read_bag(&d).unwrap();
    assert_eq!(bag.messages.len(), 199);
    assert_eq!(bag.end_ns(), Some(199_000_000));
    assert!(bag.warnings.iter().any(|w| w.contains("'/joint_states'") && w.contains("1 message(s) with an outlier time") && w.contains("1000000.000000000 s") && w.contains("skipped")), "{:?}", bag.warnings);
    // replay simulates the 0.2 s the data covers, not 11 days
    let scene = contact_sim::config::load_scene(&repo("tests/data/bag_arm.yaml")).unwrap();
    let t0 = std::time::Instant::now();
    let rep = contact_sim::bag::replay::replay(&bag, &scene, &Default::default(), &d.join("out")).unwrap();
    assert!(t0.elapsed().as_secs_f64() < 30.0);
    let out = read_bag(&d.join("out")).unwrap();
    assert!(out.end_ns().unwrap() - out.start_ns().unwrap() <= 250_000_000, "{:?} {:?}", out.start_ns(), out.end_ns());
    let _ = rep;
    // a bag without outliers (a regular series with a gap) loses nothing
    let g = tmp("gap");
    let mut w = BagWriter::create(&g, &WriterOptions::default()).unwrap();
    let a = w.add_topic("/joint_states", MsgType::JointState).unwrap();
    for i in (0..100u64).chain(1000..1100) {
        w.write(a, i * 1_000_000, &js(i)).unwrap();
    }
    w.finish().unwrap();
    let bag = read_bag(&g).unwrap();
    assert_eq!(bag.messages.len(), 200, "{:?}", bag.warnings);
    assert!(bag.warnings.is_empty(), "{:?}", bag.warnings);
    let _ = std::fs::remove_dir_all(&d);
    let _ = std::fs::remove_dir_all(&g);
}

/// A scene timestep above replay's limit is an error naming `timestep_s`, not a panic.
#[test]
fn replay_refuses_a_huge_timestep() {
    let d = tmp("bigdt");
    write_bag(&d, 20);
    let bag = read_bag(&d).unwrap();
    let mut scene = contact_sim::config::load_scene(&repo("tests/data/bag_arm.yaml")).unwrap();
    scene.model.timestep_s = 150.0;
    let e = contact_sim::bag::replay::replay(&bag, &scene, &Default::default(), &d.join("out")).unwrap_err().to_string();
    assert!(e.contains("timestep_s") && e.contains("150"), "{e}");
    let _ = std::fs::remove_dir_all(&d);
}

/// `bench --steps 2⁶⁴−1` is a one-line error naming the option, exit code 2, no panic.
#[test]
fn bench_refuses_absurd_step_counts() {
    for (flag, v) in [("--steps", "18446744073709551615"), ("--warmup", "18446744073709551615"), ("--steps", "1000000000")] {
        let out = cli(&["bench", flag, v]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flag} {v}: {err}"); // the tool's exit code for an error
        assert!(err.contains(flag) && err.contains("more than") && !err.contains("panicked"), "{err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }
}

/// Writing to a closed pipe ends the program quietly (SIGPIPE, status 141 in the shell),
/// without a panic or backtrace. The reader (`true`) is gone before the first write.
#[test]
fn closed_pipe_exits_quietly() {
    let bin = env!("CARGO_BIN_EXE_contact_sim");
    for (cmd, must_hit_the_pipe) in [
        (format!("'{bin}' bench --json --steps 20 --warmup 0 config/examples/box_stack.yaml | true"), true),
        (format!("'{bin}' bench --json --steps 20 --warmup 0 config/examples/box_stack.yaml | head -c 10"), false),
        (format!("'{bin}' run config/examples/box_stack.yaml --duration 0.5 | head -1"), false),
    ] {
        let out = std::process::Command::new("bash").arg("-c").arg(format!("{cmd} >/dev/null; echo \"status ${{PIPESTATUS[0]}}\" >&2")).current_dir(repo(".")).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("panicked") && !err.contains("Broken pipe") && !err.contains("backtrace"), "{cmd}: {err}");
        if must_hit_the_pipe {
            assert_eq!(err.trim(), "status 141", "{cmd}");
        } else {
            assert!(err.trim() == "status 141" || err.trim() == "status 0", "{cmd}: {err}");
        }
    }
}

/// Tet meshes whose header counts are absurd (10¹⁸, 10¹¹) are refused before anything is
/// allocated, with an error naming the file and the count.
#[test]
fn tet_mesh_huge_header_counts_are_refused() {
    let d = tmp("tet");
    for (n, count) in ["1000000000000000000", "100000000000"].iter().enumerate() {
        let node = d.join(format!("m{n}.node"));
        let ele = d.join(format!("m{n}.ele"));
        std::fs::write(&node, format!("{count} 3 0 0\n0 0 0 0\n1 1 0 0\n2 0 1 0\n3 0 0 1\n")).unwrap();
        std::fs::write(&ele, "1 4 0\n0 0 1 2 3\n").unwrap();
        let e = contact_sim::config::read_tet_mesh(&node).unwrap_err().to_string();
        assert!(e.contains(&format!("m{n}.node")) && e.contains(count) && e.contains("more than a file"), "{e}");
        std::fs::write(&node, "4 3 0 0\n0 0 0 0\n1 1 0 0\n2 0 1 0\n3 0 0 1\n").unwrap();
        std::fs::write(&ele, format!("{count} 4 0\n0 0 1 2 3\n")).unwrap();
        let e = contact_sim::config::read_tet_mesh(&node).unwrap_err().to_string();
        assert!(e.contains(&format!("m{n}.ele")) && e.contains(count), "{e}");
        let msh = d.join(format!("m{n}.msh"));
        std::fs::write(&msh, format!("$MeshFormat\n4.1 0 8\n$EndMeshFormat\n$Nodes\n1 {count} 1 4\n3 1 0 {count}\n1\n$EndNodes\n")).unwrap();
        let e = contact_sim::config::read_tet_mesh(&msh).unwrap_err().to_string();
        assert!(e.contains(&format!("m{n}.msh")) && e.contains(count), "{e}");
        std::fs::write(&msh, format!("$MeshFormat\n2.2 0 8\n$EndMeshFormat\n$Nodes\n{count}\n1 0 0 0\n$EndNodes\n")).unwrap();
        let e = contact_sim::config::read_tet_mesh(&msh).unwrap_err().to_string();
        assert!(e.contains(&format!("m{n}.msh")) && e.contains(count), "{e}");
    }
    let _ = std::fs::remove_dir_all(&d);
}
