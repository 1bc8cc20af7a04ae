//! Hardening against damaged or hostile input: corrupted bag chunks, bag metadata that
//! points outside the bag, junk files in a bag, outlier timestamps, absurd CLI values, closed
//! pipes, tet-mesh headers with huge counts.

use contact_sim::bag::msgs::*;
use contact_sim::bag::{read_bag, BagWriter, WriterOptions};
use crate::common::mcap_bytes::{chunks, compress_chunks};
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
        (format!("'{bin}' run config/examples/box_stack.yaml --duration 0.5 --quiet | head -1"), false),
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

// ---------------------------------------------------------------------------------------------
// input sizes, nesting, capacities
// ---------------------------------------------------------------------------------------------

fn stderr_of(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// An error of the CLI: exit code 2, one line, no panic, mentioning every needle.
fn assert_cli_error(args: &[&str], needles: &[&str]) {
    let out = cli(args);
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(!err.contains("panicked") && !err.contains("overflow"), "{args:?}: {err}");
    assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
    for n in needles {
        assert!(err.contains(n), "{args:?}: '{n}' not in {err}");
    }
}

const BOX_LINK: &str = r#"<link name="base"><inertial><mass value="1"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>"#;

/// Elements nested 30 000 and 1 000 000 deep (which overflowed the parser's stack) are refused
/// naming the file, the limit and the line; a URDF at the limit's order of a real robot loads.
#[test]
fn deeply_nested_urdf_is_refused() {
    let d = tmp("deep");
    for n in [30_000usize, 1_000_000] {
        let f = d.join(format!("deep{n}.urdf"));
        std::fs::write(&f, format!("<robot name=\"r\">\n{BOX_LINK}\n<link name=\"x\">{}{}</link></robot>", "<visual>".repeat(n), "</visual>".repeat(n))).unwrap();
        let name = f.display().to_string();
        assert_cli_error(&["model", &name], &[&name, "elements nested deeper than 256 levels (line 3)"]);
    }
    let f = d.join("ok.urdf");
    std::fs::write(&f, format!("<robot name=\"r\">{BOX_LINK}</robot>")).unwrap();
    assert!(cli(&["model", f.to_str().unwrap()]).status.success());
    let _ = std::fs::remove_dir_all(&d);
}

/// Paths to devices (/dev/zero, /dev/urandom: read without end before) are refused as not
/// regular files, for a mesh, a URDF, a scene and a bag file; nothing is read from them.
#[cfg(unix)]
#[test]
fn device_files_are_refused() {
    let d = tmp("dev");
    std::fs::create_dir_all(d.join("meshes")).unwrap();
    for dev in ["/dev/zero", "/dev/urandom"] {
        let stl = d.join("meshes/dev.stl");
        let _ = std::fs::remove_file(&stl);
        std::os::unix::fs::symlink(dev, &stl).unwrap();
        let urdf = d.join("dev_mesh.urdf");
        std::fs::write(&urdf, format!("<robot name=\"r\">{}</robot>", BOX_LINK.replace("</inertial>", "</inertial><collision><geometry><mesh filename=\"meshes/dev.stl\"/></geometry></collision>"))).unwrap();
        let u = urdf.display().to_string();
        assert_cli_error(&["model", &u], &[&u, "link 'base' <collision> 0 mesh 'meshes/dev.stl'", "not a regular file"]);
        assert_cli_error(&["model", dev], &[dev, "not a regular file"]);
        assert_cli_error(&["run", dev], &[dev, "not a regular file"]);
    }
    // a bag whose only .mcap is a device: refused naming it; beside a good file: skipped
    let b = d.join("bag");
    write_bag(&b, 5);
    std::fs::remove_file(b.join("metadata.yaml")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", b.join("zz_dev.mcap")).unwrap();
    let bag = read_bag(&b).unwrap();
    assert_eq!(bag.messages.len(), 10);
    assert!(bag.warnings.iter().any(|w| w.contains("zz_dev.mcap") && w.contains("not a regular file") && w.contains("skipped")), "{:?}", bag.warnings);
    let e = read_bag(&b.join("zz_dev.mcap")).unwrap_err().to_string();
    assert!(e.contains("zz_dev.mcap") && e.contains("not a regular file"), "{e}");
    let _ = std::fs::remove_dir_all(&d);
}

/// A file above the size limit is refused before it is read, naming the file and both sizes.
#[test]
fn oversized_files_are_refused() {
    let d = tmp("big");
    let f = d.join("big.yaml");
    let file = std::fs::File::create(&f).unwrap();
    file.set_len(contact_sim::validate::MAX_TEXT_FILE_BYTES + 1).unwrap(); // sparse: no disk used
    let e = contact_sim::config::load_scene(&f).unwrap_err().to_string();
    assert!(e.contains("big.yaml") && e.contains(&format!("{} bytes", contact_sim::validate::MAX_TEXT_FILE_BYTES + 1)) && e.contains("more than the limit"), "{e}");
    let _ = std::fs::remove_dir_all(&d);
}

const ONE_BOX: &str = "name: s\nduration_s: 0.01\nobjects:\n  - {name: b, shape: {type: box, size: [0.2, 0.2, 0.2]}, mass_kg: 1.0, position: [0, 0, 0.1]}\n";

/// `max_contacts: 1e9` (a 64 GB allocation before) is refused naming the key and the limit.
#[test]
fn absurd_contact_capacities_are_refused() {
    let d = tmp("cap");
    for (key, value, needle) in [("max_contacts", "1000000000", "contact.max_contacts: 1000000000 is more than the limit of 4096"), ("max_points_per_pair", "100000", "contact.max_points_per_pair: 100000 is more than the limit of 1024")] {
        let f = d.join(format!("{key}.yaml"));
        std::fs::write(&f, format!("{ONE_BOX}contact: {{{key}: {value}}}\n")).unwrap();
        let e = contact_sim::config::load_scene(&f).unwrap_err().to_string();
        assert!(e.contains(&format!("{key}.yaml")) && e.contains(needle), "{e}");
    }
    std::fs::write(d.join("ok.yaml"), format!("{ONE_BOX}contact: {{max_contacts: 1000}}\n")).unwrap();
    assert_eq!(contact_sim::config::load_scene(&d.join("ok.yaml")).unwrap().model.contact.max_contacts, 1000);
    let _ = std::fs::remove_dir_all(&d);
}

/// A binary STL of triangles in one plane (a flat mesh) is refused as a URDF collision mesh
/// and as a scene object, naming the link or object; the same file lifted into a tetrahedron
/// loads.
#[test]
fn flat_stl_is_refused() {
    let d = tmp("flat");
    let write_stl = |name: &str, tris: &[[[f32; 3]; 3]]| {
        let mut b = vec![0u8; 80];
        b.extend_from_slice(&(tris.len() as u32).to_le_bytes());
        for t in tris {
            b.extend_from_slice(&[0u8; 12]);
            for v in t {
                for x in v {
                    b.extend_from_slice(&x.to_le_bytes());
                }
            }
            b.extend_from_slice(&[0, 0]);
        }
        std::fs::write(d.join(name), b).unwrap();
    };
    write_stl("flat.stl", &[[[0., 0., 0.], [0.1, 0., 0.], [0., 0.1, 0.]], [[0.1, 0., 0.], [0.1, 0.1, 0.], [0., 0.1, 0.]]]);
    write_stl("tet.stl", &[[[0., 0., 0.], [0.1, 0., 0.], [0., 0.1, 0.]], [[0., 0., 0.], [0.1, 0., 0.], [0., 0., 0.1]], [[0., 0., 0.], [0., 0.1, 0.], [0., 0., 0.1]], [[0.1, 0., 0.], [0., 0.1, 0.], [0., 0., 0.1]]]);
    for (mesh, ok) in [("flat.stl", false), ("tet.stl", true)] {
        let urdf = d.join(format!("{mesh}.urdf"));
        std::fs::write(&urdf, format!("<robot name=\"r\">{}</robot>", BOX_LINK.replace("</inertial>", &format!("</inertial><collision><geometry><mesh filename=\"{mesh}\"/></geometry></collision>")))).unwrap();
        let u = urdf.display().to_string();
        let scene = d.join(format!("{mesh}.yaml"));
        std::fs::write(&scene, format!("name: s\nobjects:\n  - {{name: plate, shape: {{type: mesh, file: {mesh}}}, mass_kg: 1.0, position: [0, 0, 0.5]}}\n")).unwrap();
        let s = scene.display().to_string();
        if ok {
            assert!(cli(&["model", &u]).status.success());
            assert!(contact_sim::config::load_scene(&scene).is_ok());
        } else {
            assert_cli_error(&["model", &u], &[&u, "link 'base' <collision> 0 mesh 'flat.stl'", "mesh is degenerate (flat"]);
            assert_cli_error(&["run", &s], &[&s, "objects[0]", "flat"]);
        }
    }
    let _ = std::fs::remove_dir_all(&d);
}

// ---------------------------------------------------------------------------------------------
// messages
// ---------------------------------------------------------------------------------------------

/// A parser error (missing `<mass>`, a 2-vector origin, a bad number) names the link or joint
/// and its line, on one line without the parser's `custom:` prefix. An unknown element that is
/// dropped with a warning (`<sensor_note>` in link 'arm') is not blamed for another's error.
#[test]
fn urdf_parse_errors_name_the_element_and_line() {
    let d = tmp("urdferr");
    let good = format!("<robot name=\"r\">\n{BOX_LINK}\n<link name=\"arm\"><inertial><mass value=\"1\"/><inertia ixx=\"0.01\" iyy=\"0.01\" izz=\"0.01\" ixy=\"0\" ixz=\"0\" iyz=\"0\"/></inertial><sensor_note kind=\"x\"><origin xyz=\"0 0\"/></sensor_note></link>\n<joint name=\"j\" type=\"revolute\"><parent link=\"base\"/><child link=\"arm\"/><origin xyz=\"0 0 0.1\"/><axis xyz=\"0 0 1\"/><limit lower=\"-1\" upper=\"1\" effort=\"1\" velocity=\"1\"/></joint>\n</robot>");
    std::fs::write(d.join("good.urdf"), &good).unwrap();
    assert!(cli(&["model", d.join("good.urdf").to_str().unwrap()]).status.success());
    for (i, (from, to, element, reason)) in [
        ("<link name=\"arm\"><inertial><mass value=\"1\"/>", "<link name=\"arm\"><inertial>", "link 'arm' (line 3)", "missing field `mass`"),
        ("<origin xyz=\"0 0 0.1\"/>", "<origin xyz=\"0 0.1\"/>", "joint 'j' (line 4)", "expected 3 found 2"),
        ("effort=\"1\"", "effort=\"one\"", "joint 'j' (line 4)", "invalid float literal"),
    ]
    .into_iter()
    .enumerate()
    {
        let f = d.join(format!("bad{i}.urdf"));
        std::fs::write(&f, good.replacen(from, to, 1)).unwrap();
        let name = f.display().to_string();
        assert_cli_error(&["model", &name], &[&name, element, reason]);
        assert!(!stderr_of(&cli(&["model", &name])).contains("custom:"));
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// Huge but valid limits print in scientific notation in `model`'s table, not with 300 digits.
#[test]
fn model_table_prints_huge_limits_compactly() {
    let d = tmp("digits");
    let f = d.join("huge.urdf");
    std::fs::write(&f, format!("<robot name=\"r\">{BOX_LINK}<link name=\"arm\"><inertial><mass value=\"1\"/><inertia ixx=\"0.01\" iyy=\"0.01\" izz=\"0.01\" ixy=\"0\" ixz=\"0\" iyz=\"0\"/></inertial></link><joint name=\"j\" type=\"revolute\"><parent link=\"base\"/><child link=\"arm\"/><axis xyz=\"0 0 1\"/><limit lower=\"-1e300\" upper=\"1e300\" effort=\"1e300\" velocity=\"1e300\"/></joint></robot>")).unwrap();
    let out = cli(&["model", f.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", stderr_of(&out));
    let row = text.lines().find(|l| l.trim_start().starts_with("j ")).expect("joint row");
    assert!(row.contains("1.000e300") && row.contains("[-1.000e300, 1.000e300]"), "{row}");
    assert!(row.len() < 200, "{row}");
    let _ = std::fs::remove_dir_all(&d);
}

/// `run --duration 1e300` (which ran forever) is refused naming the option and the step count.
#[test]
fn run_refuses_an_endless_duration() {
    assert_cli_error(&["run", "config/examples/box_rest.yaml", "--duration", "1e300"], &["--duration", "1e300 s", "more than the 10000000000 steps"]);
}

/// Bodies 10¹⁸ apart in mass that can touch give one warning with both masses and the ratio;
/// the shipped box stack (equal masses) gives none.
#[test]
fn extreme_mass_ratio_is_warned_once_with_the_numbers() {
    let d = tmp("ratio");
    let f = d.join("ratio.yaml");
    std::fs::write(
        &f,
        "name: ratio\nduration_s: 0.05\nobjects:\n  - {name: heavy, shape: {type: box, size: [0.4, 0.4, 0.2]}, mass_kg: 1.0e9, position: [0, 0, 0.1]}\n  - {name: light, shape: {type: box, size: [0.1, 0.1, 0.1]}, mass_kg: 1.0e-9, position: [0, 0, 0.25]}\n  - {name: light2, shape: {type: sphere, radius: 0.05}, mass_kg: 1.0e-3, position: [1, 0, 0.05]}\n",
    )
    .unwrap();
    let out = cli(&["run", f.to_str().unwrap(), "--quiet"]);
    let err = stderr_of(&out);
    assert!(out.status.success(), "{err}");
    let w: Vec<_> = err.lines().filter(|l| l.contains("mass ratio")).collect();
    assert_eq!(w.len(), 1, "{err}");
    assert!(w[0].contains("'light' and 'heavy'") && w[0].contains("1.0e18") && w[0].contains("1e-9 kg against 1e9 kg") && w[0].contains("3 pairs"), "{}", w[0]);
    let ok = cli(&["run", "config/examples/box_stack.yaml", "--duration", "0.05", "--quiet"]);
    assert!(!stderr_of(&ok).contains("mass ratio"), "{}", stderr_of(&ok));
    let _ = std::fs::remove_dir_all(&d);
}

/// A run whose solver stops short on most steps with a large residual (the heavy stack under
/// PGS capped at 50 sweeps: about half the steps stop short, by up to 1 N·s, 2 % of the scale)
/// warns once with the count, the residual and its step; a converging run does not. (At PGS's
/// default 500 sweeps every step of the heavy stack stops short too, but since the collision
/// stage keeps one contact per manifold point its residuals stay below the warning's 1e-3 of the
/// scale.)
#[test]
fn untrustworthy_solver_residual_is_warned_once_with_the_numbers() {
    let d = tmp("untrustworthy");
    let f = d.join("box_stack_heavy.yaml");
    let scene = std::fs::read_to_string(repo("config/examples/box_stack_heavy.yaml")).unwrap();
    std::fs::write(&f, format!("{scene}\nsolver: {{kind: pgs, max_iterations: 50}}\n")).unwrap();
    let out = cli(&["run", f.to_str().unwrap(), "--duration", "0.5", "--quiet"]);
    let err = stderr_of(&out);
    let w: Vec<_> = err.lines().filter(|l| l.contains("stopped before its tolerance")).collect();
    assert_eq!(w.len(), 1, "{err}");
    assert!(w[0].contains("box_stack_heavy.yaml") && w[0].contains(" of 500 steps") && w[0].contains("N·s") && w[0].contains("at step ") && w[0].contains("not to be trusted"), "{}", w[0]);
    let ok = cli(&["run", "config/examples/box_rest.yaml", "--duration", "0.5", "--quiet"]);
    assert!(!stderr_of(&ok).contains("tolerance"), "{}", stderr_of(&ok));
    let _ = std::fs::remove_dir_all(&d);
}

/// `compare` against a hardware bag with one stamp 10⁶ s off (83 s and 1.5 GB before) warns
/// about the outlier by topic and compares the 0.2 s the data covers.
#[test]
fn compare_with_an_outlier_stamp_is_bounded() {
    let d = tmp("cmp_outlier");
    let write = |dir: &Path, outlier: bool| {
        let mut w = BagWriter::create(dir, &WriterOptions::default()).unwrap();
        let a = w.add_topic("/joint_states", MsgType::JointState).unwrap();
        for i in 0..200u64 {
            let t = if outlier && i == 77 { 1_000_000 * 1_000_000_000u64 } else { i * 1_000_000 };
            let Msg::JointState(mut m) = js(i) else { unreachable!() };
            m.header = Header::new(t as i64, "");
            w.write(a, t, &Msg::JointState(m)).unwrap();
        }
        w.finish().unwrap();
    };
    write(&d.join("sim"), false);
    write(&d.join("hw"), true);
    let json = d.join("compare.json");
    let t0 = std::time::Instant::now();
    let out = cli(&["compare", d.join("sim").to_str().unwrap(), d.join("hw").to_str().unwrap(), "--json", json.to_str().unwrap()]);
    let err = stderr_of(&out);
    assert!(out.status.success(), "{err}");
    assert!(t0.elapsed().as_secs_f64() < 30.0);
    assert!(err.contains("'/joint_states'") && err.contains("1 message(s) with an outlier time") && err.contains("skipped"), "{err}");
    assert!(json.exists());
    let _ = std::fs::remove_dir_all(&d);
}

/// `cli` run in the directory `dir`.
fn cli_in(dir: &Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_contact_sim")).args(args).current_dir(dir).output().unwrap()
}

/// Outputs never overwrite an input, never collide, never replace a file unasked.
#[test]
fn outputs_never_destroy_inputs_or_each_other() {
    let d = tmp("outputs");
    std::fs::create_dir_all(&d).unwrap();
    let scene = d.join("s.yaml");
    std::fs::write(&scene, ONE_BOX).unwrap();
    let s = scene.display().to_string();
    let text = std::fs::read_to_string(&scene).unwrap();
    assert_cli_error(&["run", &s, "--csv", &s], &["--csv", "would overwrite the input"]);
    assert_cli_error(&["run", &s, "--summary", &s], &["--summary", "would overwrite the input"]);
    assert_eq!(std::fs::read_to_string(&scene).unwrap(), text, "the scene is untouched");
    let x = d.join("x.out").display().to_string();
    assert_cli_error(&["run", &s, "--summary", &x, "--csv", &x], &["--csv", "the same file as --summary"]);
    assert!(cli(&["run", &s, "--quiet", "--summary", &x]).status.success());
    assert_cli_error(&["run", &s, "--quiet", "--summary", &x], &["--summary", "exists", "--force"]);
    assert!(cli(&["run", &s, "--quiet", "--summary", &x, "--force"]).status.success());
    // compare: no JSON dropped into the working directory unasked; a report is not replaced
    let bag = d.join("bag");
    write_bag(&bag, 50);
    let b = bag.display().to_string();
    let out = cli_in(&d, &["compare", &b, &b]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert!(!d.join("compare.json").exists(), "compare wrote ./compare.json unasked");
    let report = d.join("report").display().to_string();
    assert!(cli(&["compare", &b, &b, "--report", &report]).status.success());
    assert_cli_error(&["compare", &b, &b, "--report", &report], &["--report", "index.html", "exists", "--force"]);
    assert!(cli(&["compare", &b, &b, "--report", &report, "--force"]).status.success());
    // replay: no output inside the input bag
    let inside = bag.join("sim").display().to_string();
    assert_cli_error(&["replay", &b, &s, "--out", &inside], &["--out", "would overwrite the input", &b]);
    let _ = std::fs::remove_dir_all(&d);
}

/// `run --csv --pose-bodies`: each row holds the body frame's world position at the row's time.
/// A box dropped from 1 m falls freely for 0.2 s: z after n steps of semi-implicit Euler is
/// `1 − g h² n (n + 1) / 2` (m), x and y stay 0, and the last row equals the summary's final pose.
#[test]
fn csv_pose_columns_follow_a_falling_box() {
    let d = tmp("pose_columns");
    let scene = d.join("drop.yaml");
    std::fs::write(&scene, "name: drop\nduration_s: 0.2\ntimestep_s: 0.001\nobjects:\n  - {name: b, shape: {type: box, size: [0.1, 0.1, 0.1]}, mass_kg: 1.0, position: [0, 0, 1.0]}\n").unwrap();
    let (csv, summary) = (d.join("p.csv"), d.join("s.json"));
    let out = cli(&["run", &scene.display().to_string(), "--quiet", "--csv", &csv.display().to_string(), "--csv-every", "50", "--pose-bodies", "b", "--summary", &summary.display().to_string()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next().unwrap(), "time_s,b.position.x,b.position.y,b.position.z");
    let rows: Vec<Vec<f64>> = lines.map(|l| l.split(',').map(|x| x.parse().unwrap()).collect()).collect();
    assert_eq!(rows.len(), 4, "{text}");
    let (g, h) = (9.81, 0.001);
    for (k, r) in rows.iter().enumerate() {
        let n = 50.0 * (k + 1) as f64;
        assert!((r[0] - n * h).abs() < 1e-9, "row {k}: t = {}", r[0]);
        let z = 1.0 - g * h * h * n * (n + 1.0) / 2.0;
        assert!((r[3] - z).abs() < 2e-6 && r[1].abs() < 2e-6 && r[2].abs() < 2e-6, "row {k}: {r:?}, free fall z = {z}");
    }
    let s: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&summary).unwrap()).unwrap();
    let p = s["bodies"].as_array().unwrap().iter().find(|b| b["name"] == "b").unwrap()["position_m"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect::<Vec<_>>();
    let last = rows.last().unwrap();
    assert!((0..3).all(|i| (last[1 + i] - p[i]).abs() < 1e-6), "last row {last:?}, summary {p:?}");
    let _ = std::fs::remove_dir_all(&d);
}

/// Options that qualify another are checked even without it; values that would run nothing or
/// never trigger are refused.
#[test]
fn companion_and_degenerate_options_are_refused() {
    let d = tmp("companions");
    std::fs::create_dir_all(&d).unwrap();
    let scene = d.join("s.yaml");
    std::fs::write(&scene, ONE_BOX).unwrap();
    let s = scene.display().to_string();
    assert_cli_error(&["run", &s, "--wrench-bodies", "ghost"], &["--wrench-bodies", "ghost"]);
    assert_cli_error(&["run", &s, "--pose-bodies", "ghost"], &["--pose-bodies", "ghost"]);
    assert_cli_error(&["run", &s, "--csv-every", "0"], &["--csv-every"]);
    assert_cli_error(&["run", &s, "--record-rate", "nan"], &["--record-rate", "NaN"]);
    assert_cli_error(&["run", &s, "--duration", "1e-12"], &["--duration", "no step would run"]);
    assert_cli_error(&["model", "urdf/pendulum.urdf", "--q", "1e300"], &["--q", "pendulum_joint", "1e300"]);
    let bag = d.join("bag");
    write_bag(&bag, 20);
    let b = bag.display().to_string();
    for rate in ["nan", "0", "-5"] {
        let out = d.join(format!("sim_{rate}")).display().to_string();
        assert_cli_error(&["replay", &b, &s, "--out", &out, &format!("--rate={rate}")], &["--rate", "positive"]);
    }
    assert_cli_error(&["compare", &b, &b, "--contact-threshold", "nan"], &["--contact-threshold", "NaN"]);
    // a full standard output is an error of one line, not a panic
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_contact_sim")).args(["run", &s]).current_dir(repo("")).stdout(std::fs::File::create("/dev/full").unwrap()).output().unwrap();
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("cannot write to standard output") && !err.contains("panicked"), "{err}");
    let _ = std::fs::remove_dir_all(&d);
}

/// Keys a command mode or an attachment does not have, a tolerance that makes "converged"
/// meaningless, and script targets a joint ignores are refused; oddities that still run are
/// warned about.
#[test]
fn scene_keys_that_would_be_ignored_are_refused() {
    let load = |yaml: &str| contact_sim::config::load_scene_str(yaml, &repo("config/examples/x.yaml"));
    let pendulum = |control: &str| format!("robots:\n  - urdf: ../../urdf/pendulum.urdf\n    control: {{default: {control}}}\n");
    for (control, needle) in [("{mode: position, kp: 1.0, kd: 1.0, ki: 3.0}", "unknown field `ki`"), ("{mode: passive, kp: 5.0}", "mode passive: has no kp"), ("{mode: velocity, kp: 5.0, kd: 1.0}", "mode velocity: has no kp"), ("{mode: position, kp: 5.0}", "mode position: give kd"), ("{mode: torque}", "unknown mode 'torque'")] {
        let e = load(&pendulum(control)).err().unwrap_or_else(|| panic!("accepted {control}")).to_string();
        assert!(e.contains(needle), "{control}: {e}");
    }
    for tol in [".inf", "1e300", "5.0"] {
        let e = load(&format!("{ONE_BOX}solver: {{kind: pgs, tolerance: {tol}}}\n")).err().unwrap_or_else(|| panic!("accepted tolerance {tol}")).to_string();
        assert!(e.contains("solver.tolerance") && e.contains("N·s"), "{tol}: {e}");
    }
    let e = load(&format!("{}script:\n  - {{time_s: 0.0, positions: {{pendulum_joint: 0.1}}}}\n", pendulum("{mode: passive}"))).err().unwrap().to_string();
    assert!(e.contains("script[0].positions.pendulum_joint") && e.contains("Passive"), "{e}");
    let e = load(&format!("{}script:\n  - {{time_s: 0.0, efforts: {{pendulum_joint: 0.1}}}}\n", pendulum("{mode: passive}"))).err().unwrap().to_string();
    assert!(e.contains("script[0].efforts.pendulum_joint"), "{e}");
    // accepted, with a warning: two keyframes at one time; an initial position beyond a limit
    let s = load(&format!("{}script:\n  - {{time_s: 0.5, positions: {{pendulum_joint: 0.1}}}}\n  - {{time_s: 0.5, positions: {{pendulum_joint: 0.2}}}}\n", pendulum("{mode: position, kp: 10.0, kd: 1.0}"))).unwrap();
    assert!(s.warnings.iter().any(|w| w.element == "script[1].time_s" && w.message.contains("same time")), "{:?}", s.warnings);
    let s = load("robots:\n  - urdf: ../../urdf/arm7.urdf\n    initial_positions: {arm_joint2: 2.5}\n").unwrap();
    assert!(s.warnings.iter().any(|w| w.element.ends_with("initial_positions.arm_joint2") && w.message.contains("outside the joint's limits")), "{:?}", s.warnings);
    // an attachment target takes no other key
    let e = load("deformables:\n  - {name: d, mesh: ../../assets/meshes/soft_ball.msh, material: {density_kg_m3: 1000, youngs_modulus_pa: 1e6, poisson_ratio: 0.3}, attachments: [{nodes: [0], to: {link: b, weld: true}}]}\n")
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("attachments[0]") || e.contains("AttachTarget"), "{e}");
}

/// A bag's metadata listing a file twice reads it once; a symlink to a file outside the bag is
/// refused; commands out of time order are replayed by time with a warning.
#[test]
fn bag_directory_tricks_are_caught() {
    let d = tmp("bag_tricks");
    let bag = d.join("bag");
    write_bag(&bag, 10);
    let meta = bag.join("metadata.yaml");
    let text = std::fs::read_to_string(&meta).unwrap();
    let file = std::fs::read_dir(&bag).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().to_string()).find(|n| n.ends_with(".mcap")).unwrap();
    let listed = format!("    - \"{file}\"\n");
    assert!(text.contains(&listed), "{text}");
    std::fs::write(&meta, text.replacen(&listed, &format!("{listed}{listed}"), 1)).unwrap();
    let b = read_bag(&bag).unwrap();
    assert_eq!(b.messages.len(), 20, "every message once");
    assert!(b.warnings.iter().any(|w| w.contains("more than once")), "{:?}", b.warnings);
    // a symlink inside the bag to a regular file outside it
    let outside = d.join("elsewhere");
    write_bag(&outside, 3);
    let target = std::fs::read_dir(&outside).unwrap().map(|e| e.unwrap().path()).find(|p| p.extension().is_some_and(|x| x == "mcap")).unwrap();
    let linked = d.join("linked");
    std::fs::create_dir_all(&linked).unwrap();
    std::os::unix::fs::symlink(&target, linked.join("a.mcap")).unwrap();
    let e = read_bag(&linked).unwrap_err().to_string();
    assert!(e.contains("outside the bag directory"), "{e}");
    // commands recorded with log times going back
    let cmds = d.join("cmds");
    let mut w = BagWriter::create(&cmds, &WriterOptions::default()).unwrap();
    let t = w.add_topic("/joint_commands", MsgType::JointState).unwrap();
    for (i, at) in [5u64, 3, 4, 1, 2].iter().enumerate() {
        let m = JointState { header: Header::new(0, ""), name: vec!["pendulum_joint".into()], position: vec![0.1 * i as f64], velocity: vec![], effort: vec![] };
        w.write(t, at * 1_000_000, &Msg::JointState(m)).unwrap();
    }
    w.finish().unwrap();
    let scene = contact_sim::config::load_scene_str("robots:\n  - urdf: ../../urdf/pendulum.urdf\n    control: {default: {mode: position, kp: 10.0, kd: 1.0}}\n", &repo("config/examples/x.yaml")).unwrap();
    let cbag = read_bag(&cmds).unwrap();
    let plan = contact_sim::bag::replay::ReplayPlan::prepare(&cbag, &scene, &Default::default()).unwrap();
    assert!(plan.warnings.iter().any(|w| w.contains("2 command(s) have a log time before")), "{:?}", plan.warnings);
    let _ = std::fs::remove_dir_all(&d);
}

/// A record length field corrupted before the chunk's CRC was computed (so the CRC matches):
/// the chunk is reported and skipped, not a panic in the MCAP reader.
#[test]
fn a_huge_record_length_inside_a_valid_chunk_is_skipped() {
    let d = tmp("huge_record");
    write_bag(&d, 400);
    let file = the_mcap(&d);
    let mut bytes = std::fs::read(&file).unwrap();
    let (body, len) = chunks(&bytes)[2];
    // records start after the chunk's 40-byte header; the first record's length follows its opcode
    let records = body + 40;
    bytes[records + 1..records + 9].copy_from_slice(&0x00ff_ffff_ffff_ffffu64.to_le_bytes());
    let crc = crc32fast::hash(&bytes[records..body + len]);
    bytes[body + 24..body + 28].copy_from_slice(&crc.to_le_bytes());
    std::fs::write(&file, &bytes).unwrap();
    let bag = read_bag(&d).unwrap();
    let w: Vec<_> = bag.warnings.iter().filter(|w| w.contains("corrupted chunk") && w.contains("chunk #3")).collect();
    assert_eq!(w.len(), 1, "{:?}", bag.warnings);
    assert!(w[0].contains("claims"), "{}", w[0]);
    assert!(bag.messages.len() > 600 && bag.messages.len() < 800, "{}", bag.messages.len());
    let _ = std::fs::remove_dir_all(&d);
}

/// Bags whose chunks are compressed (MCAP's `zstd`, the MCAP C++ writer's default, and `lz4`)
/// read message for message as their uncompressed originals; inside a
/// compressed chunk, a record length running past the chunk, a wrong uncompressed size and
/// damaged compressed data each cost that chunk only, with a warning.
#[test]
fn compressed_chunks_are_read_and_checked_like_uncompressed_ones() {
    let d = tmp("compressed");
    write_bag(&d, 400);
    let file = the_mcap(&d);
    let original = std::fs::read(&file).unwrap();
    let plain = read_bag(&d).unwrap();
    assert!(plain.warnings.is_empty(), "{:?}", plain.warnings);
    assert_eq!(plain.messages.len(), 800);
    for compression in ["zstd", "lz4"] {
        std::fs::write(&file, compress_chunks(&original, compression, |_, _| {})).unwrap();
        let bag = read_bag(&d).unwrap();
        assert!(bag.warnings.iter().all(|w| !w.contains("chunk")), "{compression}: {:?}", bag.warnings);
        assert_eq!(bag.messages.len(), plain.messages.len(), "{compression}");
        for (a, b) in bag.messages.iter().zip(&plain.messages) {
            assert_eq!((a.topic, a.log_time_ns, format!("{:?}", a.msg)), (b.topic, b.log_time_ns, format!("{:?}", b.msg)), "{compression}");
        }
        // the first record length of chunk #3 runs past its records (the CRC matches)
        let huge = |i: usize, r: &mut Vec<u8>| {
            if i == 2 {
                r[1..9].copy_from_slice(&0x00ff_ffff_ffff_ffffu64.to_le_bytes());
            }
        };
        std::fs::write(&file, compress_chunks(&original, compression, huge)).unwrap();
        let bag = read_bag(&d).unwrap();
        let w: Vec<_> = bag.warnings.iter().filter(|w| w.contains("corrupted chunk #3")).collect();
        assert_eq!(w.len(), 1, "{compression}: {:?}", bag.warnings);
        assert!(w[0].contains("claims"), "{}", w[0]);
        assert!(bag.messages.len() > 600 && bag.messages.len() < 800, "{}", bag.messages.len());
        // a lying uncompressed size in chunk #2, damaged compressed data in chunk #4
        let mut bytes = compress_chunks(&original, compression, |_, _| {});
        let (body, _) = chunks(&bytes)[1];
        let size = u64::from_le_bytes(bytes[body + 16..body + 24].try_into().unwrap());
        bytes[body + 16..body + 24].copy_from_slice(&(size * 1000).to_le_bytes());
        let (body3, len3) = chunks(&bytes)[3];
        for b in &mut bytes[body3 + 50..body3 + len3 - 4] {
            *b ^= 0x5a;
        }
        std::fs::write(&file, &bytes).unwrap();
        let bag = read_bag(&d).unwrap();
        assert!(bag.warnings.iter().any(|w| w.contains("corrupted chunk #2") && w.contains("where the header says")), "{compression}: {:?}", bag.warnings);
        assert!(bag.warnings.iter().any(|w| w.contains("corrupted chunk #4")), "{compression}: {:?}", bag.warnings);
        assert!(bag.messages.len() > 500 && bag.messages.len() < 800, "{}", bag.messages.len());
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// A chain URDF of `links` links after the root, each on a revolute joint (one velocity
/// coordinate), optionally each joint mimicking the previous one.
fn chain_urdf(links: usize, mimic: bool) -> String {
    let inertial = r#"<inertial><mass value="1"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial>"#;
    let mut s = format!("<robot name=\"chain\">\n<link name=\"l0\">{inertial}</link>\n");
    for i in 1..=links {
        let m = if mimic && i > 1 { format!("<mimic joint=\"j{}\"/>", i - 1) } else { String::new() };
        s += &format!("<link name=\"l{i}\">{inertial}</link>\n<joint name=\"j{i}\" type=\"revolute\"><parent link=\"l{}\"/><child link=\"l{i}\"/><origin xyz=\"0 0 0.01\"/><axis xyz=\"0 1 0\"/><limit lower=\"-1\" upper=\"1\" effort=\"10\" velocity=\"1\"/>{m}</joint>\n", i - 1);
    }
    s + "</robot>\n"
}

/// Loads a scene of `robot` (a URDF text) with a fixed base; the error text, or "" when it loads.
fn load_robot_scene(d: &Path, name: &str, robot: &str) -> String {
    std::fs::write(d.join(format!("{name}.urdf")), robot).unwrap();
    let f = d.join(format!("{name}.yaml"));
    std::fs::write(&f, format!("robots:\n  - {{urdf: {name}.urdf, base: {{mode: fixed}}}}\n")).unwrap();
    contact_sim::config::load_scene(&f).err().map(|e| e.to_string()).unwrap_or_default()
}

/// Sizes are bounded before anything is allocated from them, each with one line naming the
/// limit: 10 000 free objects (29 GB before), a 20 000-link URDF (a 3.2 GB abort in `run` and
/// `model --check`), a 5 000-link chain (15 s per step), contact capacities whose Delassus
/// matrix would pass 2 GiB. The largest accepted chain loads and steps.
#[test]
fn sizes_are_bounded_before_allocation() {
    use contact_sim::validate::{MAX_BODIES, MAX_CHAIN_DOF, MAX_DOF};
    let d = tmp("sizes");
    // 10 000 spheres: 60 000 velocity coordinates
    let mut objects = String::from("objects:\n");
    for i in 0..10_000 {
        objects += &format!("  - {{name: b{i}, shape: {{type: sphere, radius: 0.01}}, mass_kg: 0.1, position: [{}, 0, 0.5]}}\n", i as f64 * 0.03);
    }
    std::fs::write(d.join("objects.yaml"), &objects).unwrap();
    let e = contact_sim::config::load_scene(&d.join("objects.yaml")).unwrap_err().to_string();
    assert!(e.contains("objects.yaml: size: 60000 velocity coordinates (0 of robots, 60000 of objects") && e.contains(&format!("limit of {MAX_DOF}")), "{e}");
    // more links than bodies allowed: refused by the scene and by `model --check`
    let e = load_robot_scene(&d, "wide", &chain_urdf(MAX_BODIES, false));
    assert!(e.contains(&format!("{} bodies", MAX_BODIES + 1)) && e.contains(&format!("limit of {MAX_BODIES}")), "{e}");
    let e = contact_sim::model_check::check_file(&d.join("wide.urdf"), &Default::default()).unwrap_err().to_string();
    assert!(e.contains("wide.urdf: size:") && e.contains(&format!("limit of {MAX_BODIES}")), "{e}");
    // one coordinate more than the longest chain
    let e = load_robot_scene(&d, "long", &chain_urdf(MAX_CHAIN_DOF + 1, false));
    assert!(e.contains(&format!("link 'l{}' ends a chain of {} joint coordinates", MAX_CHAIN_DOF + 1, MAX_CHAIN_DOF + 1)), "{e}");
    // the longest chain allowed loads and steps
    assert_eq!(load_robot_scene(&d, "longest", &chain_urdf(MAX_CHAIN_DOF, false)), "");
    let mut sim = contact_sim::sim::Simulation::from_scene(&contact_sim::config::load_scene(&d.join("longest.yaml")).unwrap(), None);
    sim.step();
    assert!(sim.state.q.iter().all(|q| q.is_finite()));
    // the most contacts per step on a pendulum: the Delassus matrix alone is 8·16 387² bytes
    let f = d.join("contacts.yaml");
    std::fs::write(&f, format!("robots:\n  - {{urdf: {}, base: {{mode: fixed}}}}\ncontact: {{max_contacts: 4096}}\n", repo("urdf/pendulum.urdf").display())).unwrap();
    let e = contact_sim::config::load_scene(&f).unwrap_err().to_string();
    assert!(e.contains("contacts.yaml: size: the step's dense buffers would take") && e.contains("lower contact.max_contacts (4096)"), "{e}");
    std::fs::write(&f, format!("robots:\n  - {{urdf: {}, base: {{mode: fixed}}}}\ncontact: {{max_contacts: 4000}}\n", repo("urdf/pendulum.urdf").display())).unwrap();
    contact_sim::config::load_scene(&f).unwrap();
    // a 30 000-DOF soft sheet (10 082 surface nodes, the DOF sweep's largest) loads: its contact
    // rows enter no dense square matrix, so they do not count as one (they once did: 7.3 GB)
    let mesh = contact_sim::fem::TetMesh::box_grid([0.875, 0.875, 0.01], [70, 70, 1]);
    contact_sim::config::write_gmsh41(&mesh, &d.join("sheet.msh")).unwrap();
    std::fs::write(&f, "solver: {kind: vfpi}
deformables:
  - {name: sheet, mesh: sheet.msh, material: {density_kg_m3: 1000, youngs_modulus_pa: 1.0e5, poisson_ratio: 0.35}}
").unwrap();
    let scene = contact_sim::config::load_scene(&f).unwrap();
    let bytes = contact_sim::sim::Simulation::from_scene(&scene, None).model.dense_step_bytes();
    assert!(bytes < 1 << 30, "{bytes} bytes");
    let _ = std::fs::remove_dir_all(&d);
}

/// Inputs that used to take tens of seconds (quadratic work) are refused at once: 100 000
/// attributes on one element, a 3 000-joint mimic chain (17 s and 60 MB of warnings before); a
/// second root element (silently dropped before) is refused.
#[test]
fn quadratic_and_malformed_urdfs_are_refused_quickly() {
    let d = tmp("quadratic");
    let attributes: String = (0..100_000).map(|i| format!(" a{i}=\"1\"")).collect();
    std::fs::write(d.join("attributes.urdf"), format!("<robot name=\"r\"{attributes}><link name=\"l0\"/></robot>")).unwrap();
    std::fs::write(d.join("mimic.urdf"), chain_urdf(3000, true)).unwrap();
    std::fs::write(d.join("two.urdf"), "<robot name=\"a\"><link name=\"l0\"/></robot>\n<robot name=\"b\"><link name=\"m0\"/></robot>\n").unwrap();
    for (file, needle) in [
        ("attributes.urdf", "an element with 100001 attributes (line 1), more than the limit of 256"),
        ("mimic.urdf", "mimic chain of more than 64 joints"),
        ("two.urdf", "a second root element (line 2)"),
    ] {
        let t = std::time::Instant::now();
        let e = contact_sim::config::load_urdf_model(&d.join(file), false, &Default::default()).map(|_| ()).unwrap_err().to_string();
        assert!(e.contains(file) && e.contains(needle), "{e}");
        // a generous bound (the old behaviour was > 17 s); not a benchmark
        assert!(t.elapsed().as_secs_f64() < 5.0, "{file}: {:?}", t.elapsed());
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// Physical values with no physical meaning are refused naming the key and the range: a
/// deformable's Young's modulus or density of 1e300 (it fell through the ground before),
/// friction 1e300, an attachment box at ±∞; names that are YAML null or blank.
#[test]
fn absurd_physical_values_and_names_are_refused() {
    let d = tmp("absurd");
    // the values go in by formatting, not by replacing placeholders: the mesh's path (a
    // temporary clone's directory, say) may contain any placeholder's letters
    let mesh = repo("assets/meshes/soft_ball.msh");
    let ball = |friction: &str, rho: &str, e: &str| {
        format!("solver: {{kind: vfpi}}\ndeformables:\n  - name: ball\n    mesh: {}\n    position: [0, 0, 0.05]\n    friction: {friction}\n    material: {{density_kg_m3: {rho}, youngs_modulus_pa: {e}, poisson_ratio: 0.3}}\n", mesh.display())
    };
    let box_ = |mu: &str, name: &str| format!("materials: {{default: {{friction: {mu}}}}}\nobjects:\n  - {{name: {name}, shape: {{type: box, size: [0.2, 0.2, 0.2]}}, mass_kg: 1.0, position: [0, 0, 0.1]}}\n");
    let pin = format!("{}    attachments: [{{to: world, box_min: [-.inf, -1, -1], box_max: [1, 1, 1]}}]\n", ball("0.5", "1000", "1e6"));
    for (name, text, needle) in [
        ("young", ball("0.5", "1000", "1e300"), "deformables[0] ('ball').material.youngs_modulus_pa: E = 1e300 Pa is outside the accepted range"),
        ("density", ball("0.5", "1e300", "1e6"), "material.density_kg_m3: ρ = 1e300 kg/m³ is outside"),
        ("soft_friction", ball("1e300", "1000", "1e6"), "friction: μ = 1e300 is outside the accepted range [0, 10]"),
        ("friction", box_("1e300", "b"), "materials.default.friction: μ = 1e300 is outside the accepted range [0, 10]"),
        ("pin", pin, "box_min: box_min[0] is negative infinite"),
        ("null_name", box_("0.5", "null"), "a name is required here, got null"),
        ("blank_name", box_("0.5", "' '"), "a name must not be empty or blank"),
    ] {
        let f = d.join(format!("{name}.yaml"));
        std::fs::write(&f, &text).unwrap();
        let e = contact_sim::config::load_scene(&f).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(e.contains(&format!("{name}.yaml")) && e.contains(needle), "{name}: {e}");
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// Mesh vertices that are NaN or beyond any physical size (3·10³⁸ fits an STL's f32) are
/// refused naming the vertex, not called "degenerate" or carried as NaN into the report.
#[test]
fn non_finite_and_huge_mesh_vertices_are_refused() {
    let d = tmp("vertices");
    for (name, bad) in [("nan", f32::NAN), ("huge", 3e38f32)] {
        let mut stl = vec![0u8; 80];
        stl.extend(4u32.to_le_bytes());
        let p = [[0.0f32, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, bad]];
        for t in [[0, 2, 1], [0, 1, 3], [1, 2, 3], [0, 3, 2]] {
            stl.extend([0u8; 12]);
            for &v in &t {
                for c in p[v] {
                    stl.extend(c.to_le_bytes());
                }
            }
            stl.extend([0u8; 2]);
        }
        let file = d.join(format!("{name}.stl"));
        std::fs::write(&file, &stl).unwrap();
        let e = contact_sim::config::read_mesh_points(&file).unwrap_err();
        assert!(e.contains(&format!("{name}.stl")) && e.contains("vertex") && e.contains("before any scale"), "{e}");
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// A hardware bag whose log times jump by 4·10⁹ s is refused by replay naming the jump (it
/// simulated all of it before); a quiet stretch of 100 s is replayed with a warning.
#[test]
fn replay_of_time_jumps_is_bounded_and_said() {
    let d = tmp("jumps");
    let scene = contact_sim::config::load_scene_str("robots:\n  - urdf: ../../urdf/pendulum.urdf\n    control: {default: {mode: position, kp: 10.0, kd: 1.0}}\n", &repo("config/examples/x.yaml")).unwrap();
    for (name, jump_s) in [("jump", 4e9), ("quiet", 100.0)] {
        let dir = d.join(name);
        let mut w = BagWriter::create(&dir, &WriterOptions::default()).unwrap();
        let t = w.add_topic("/joint_commands", MsgType::JointState).unwrap();
        for (i, at) in [0u64, 1_000_000, (jump_s * 1e9) as u64].iter().enumerate() {
            let m = JointState { header: Header::new(0, ""), name: vec!["pendulum_joint".into()], position: vec![0.1 * i as f64], velocity: vec![], effort: vec![] };
            w.write(t, *at, &Msg::JointState(m)).unwrap();
        }
        w.finish().unwrap();
        let bag = read_bag(&dir).unwrap();
        let plan = contact_sim::bag::replay::ReplayPlan::prepare(&bag, &scene, &Default::default());
        if name == "jump" {
            let e = plan.err().unwrap().to_string();
            assert!(e.contains("jump by 4.000e9 s after 0.0010 s") && e.contains("4.000e12 steps of 0.001 s, more than the 10000000000 steps a replay may take"), "{e}");
        } else {
            let w = plan.unwrap().warnings;
            assert!(w.iter().any(|w| w.contains("no message for 99.9990 s after 0.0010 s")), "{w:?}");
        }
    }
    let _ = std::fs::remove_dir_all(&d);
}
