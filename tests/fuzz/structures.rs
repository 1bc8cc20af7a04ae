//! Generated inputs: the structures that byte mutations of small fixtures do not reach, each
//! kind a class of input that once crashed, aborted or hung a reader or the step (see the
//! hardening tests): huge counts and lengths, repeated attributes, deep nesting and several
//! roots in URDFs, long, branched and mimic chains, scenes with many objects, keyframes or
//! robots, bags whose log times jump, length fields inside (compressed) chunks, and bag
//! directories of symlinks, FIFOs and metadata that points out of them. Every input must load
//! and take a step, or be refused with an error, within the time budget.

use super::*;
use crate::common::mcap_bytes::compress_chunks;

/// A log-uniform integer in [1, max]: small sizes as often as huge ones.
fn log_uniform(rng: &mut ChaCha8Rng, max: usize) -> usize {
    ((max as f64).powf(rng.random::<f64>()) as usize).clamp(1, max)
}

/// A length or count field value that breaks careless code.
fn extreme_u64(rng: &mut ChaCha8Rng, honest: u64) -> u64 {
    [
        0,
        1,
        honest.wrapping_sub(1),
        honest + 1,
        honest * 2,
        u32::MAX as u64,
        1 << 40,
        i64::MAX as u64,
        u64::MAX - 8,
        u64::MAX,
    ][rng.random_range(0..10)]
}

const INERTIAL: &str = r#"<inertial><mass value="1"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial>"#;

/// A URDF tree of `links` links: mostly a chain, some links hung on a random earlier one,
/// random joint kinds, some joints mimicking an earlier one.
fn urdf_tree(rng: &mut ChaCha8Rng, links: usize) -> String {
    let branchy = rng.random::<f64>();
    let mimics = rng.random::<f64>() * rng.random::<f64>();
    let mut s = format!("<robot name=\"gen\">\n<link name=\"l0\">{INERTIAL}</link>\n");
    for i in 1..=links {
        let parent = if rng.random::<f64>() < branchy {
            rng.random_range(0..i)
        } else {
            i - 1
        };
        let kind = [
            "revolute",
            "revolute",
            "continuous",
            "prismatic",
            "fixed",
            "floating",
            "planar",
        ][rng.random_range(0..7)];
        let mimic = if i > 1 && rng.random::<f64>() < mimics {
            let leader = if rng.random::<bool>() {
                i - 1
            } else {
                rng.random_range(1..i)
            };
            let m = ["1", "-1", "1e3", "1e-300", "0.5"][rng.random_range(0..5)];
            format!("<mimic joint=\"j{leader}\" multiplier=\"{m}\"/>")
        } else {
            String::new()
        };
        s += &format!("<link name=\"l{i}\">{INERTIAL}</link>\n<joint name=\"j{i}\" type=\"{kind}\"><parent link=\"l{parent}\"/><child link=\"l{i}\"/><origin xyz=\"0 0 0.01\"/><axis xyz=\"0 1 0\"/><limit lower=\"-1\" upper=\"1\" effort=\"10\" velocity=\"1\"/>{mimic}</joint>\n");
    }
    s + "</robot>\n"
}

/// One generated URDF: a tree of up to 20 000 links, up to 300 000 attributes on one element
/// (repeated names or not), nesting up to 100 000 deep, several root elements, or one
/// attribute value of up to 10 MB.
fn urdf_structure(rng: &mut ChaCha8Rng) -> Vec<u8> {
    let small = format!("<link name=\"l0\">{INERTIAL}</link>");
    match rng.random_range(0..5) {
        0 => {
            let n = log_uniform(rng, 20_000);
            urdf_tree(rng, n).into_bytes()
        }
        1 => {
            let k = log_uniform(rng, 300_000);
            let repeated = rng.random::<bool>();
            let attributes: String = (0..k)
                .map(|i| format!(" a{}=\"1\"", if repeated { i % 3 } else { i }))
                .collect();
            match rng.random_range(0..3) {
                0 => format!("<robot name=\"r\"{attributes}>{small}</robot>"),
                1 => format!("<robot name=\"r\"><link name=\"l0\"{attributes}/></robot>"),
                _ => format!("<robot name=\"r\"><link name=\"l0\"><inertial><mass value=\"1\"{attributes}/></inertial></link></robot>"),
            }
            .into_bytes()
        }
        2 => {
            let depth = log_uniform(rng, 100_000);
            let tag = ["visual", "x", "geometry"][rng.random_range(0..3)];
            format!(
                "<robot name=\"r\"><link name=\"l0\">{}{}</link></robot>",
                format!("<{tag}>").repeat(depth),
                format!("</{tag}>").repeat(depth)
            )
            .into_bytes()
        }
        3 => {
            let roots = rng.random_range(2..6);
            let mut s: String = (0..roots)
                .map(|i| format!("<robot name=\"r{i}\"><link name=\"m{i}\"/></robot>\n"))
                .collect();
            if rng.random::<bool>() {
                s += "trailing junk <";
            }
            s.into_bytes()
        }
        _ => {
            let len = log_uniform(rng, 10_000_000);
            let value = ["1", "a", "-", "1e"][rng.random_range(0..4)].repeat(len);
            format!("<robot name=\"r\"><link name=\"l0\"><inertial><mass value=\"{value}\"/></inertial></link></robot>").into_bytes()
        }
    }
}

/// A URDF through the model builder (as `contact_sim model`); when it loads, a simulation of
/// it is built and steps once (a 5 000-link chain took 15 s per step).
fn urdf_step_target(dir: PathBuf) -> impl Fn(&[u8]) -> bool {
    move |input: &[u8]| {
        let p =
            dir.join(format!("gen_{:?}.urdf", std::thread::current().id()).replace(['(', ')'], ""));
        std::fs::write(&p, input).unwrap();
        let Ok((model, _)) = contact_sim::config::load_urdf_model(&p, false, &Default::default())
        else {
            return false;
        };
        let mut sim = contact_sim::sim::Simulation::new(model, &Default::default());
        sim.step();
        true
    }
}

/// One generated scene: up to 30 000 objects (spread out or all in one place), extreme
/// contact capacities, up to 200 000 script keyframes, up to 300 robots, or a generated
/// chain robot (written beside the scene, named by its parameters).
fn scene_structure(rng: &mut ChaCha8Rng, dir: &Path) -> Vec<u8> {
    let mut s = String::from("timestep_s: 0.001\n");
    match rng.random_range(0..5) {
        0 => {
            let n = log_uniform(rng, 30_000);
            let piled = rng.random::<bool>();
            s += "objects:\n";
            for i in 0..n {
                let x = if piled { 0.0 } else { (i % 100) as f64 * 0.25 };
                let y = if piled { 0.0 } else { (i / 100) as f64 * 0.25 };
                let shape = if i % 2 == 0 {
                    "{type: sphere, radius: 0.1}"
                } else {
                    "{type: box, size: [0.2, 0.2, 0.2]}"
                };
                s += &format!("  - {{name: o{i}, shape: {shape}, mass_kg: 1.0, position: [{x}, {y}, 0.09]}}\n");
            }
        }
        1 => {
            let v = |rng: &mut ChaCha8Rng| {
                [
                    "0",
                    "1",
                    "4096",
                    "4097",
                    "1000000",
                    "1e9",
                    "18446744073709551615",
                    "-1",
                    "nan",
                ][rng.random_range(0..9)]
            };
            s += &format!("contact: {{max_contacts: {}, max_points_per_pair: {}}}\nobjects:\n  - {{name: b, shape: {{type: box, size: [0.2, 0.2, 0.2]}}, mass_kg: 1.0, position: [0, 0, 0.09]}}\n", v(rng), v(rng));
        }
        2 => {
            let n = log_uniform(rng, 200_000);
            let same_time = rng.random::<bool>();
            s += "robots:\n  - urdf: ../../urdf/pendulum.urdf\n    control: {default: {mode: position, kp: 10.0, kd: 1.0}}\nscript:\n";
            for i in 0..n {
                let t = if same_time { 0.0 } else { i as f64 * 1e-3 };
                s += &format!(
                    "  - {{time_s: {t}, positions: {{pendulum_joint: {}}}}}\n",
                    (i % 7) as f64 * 0.1
                );
            }
        }
        3 => {
            let n = log_uniform(rng, 300);
            s += "robots:\n";
            for i in 0..n {
                s += &format!("  - {{urdf: ../../urdf/arm7.urdf, name: arm{i}, base: {{mode: fixed, position: [{}, 0, 0]}}}}\n", i as f64);
            }
        }
        _ => {
            let n = log_uniform(rng, 5_000);
            let tree_seed: u64 = rng.random_range(0..4);
            let name = format!("gen_tree_{n}_{tree_seed}.urdf");
            let path = dir.join(&name);
            if !path.exists() {
                let mut tree_rng = ChaCha8Rng::seed_from_u64(tree_seed);
                std::fs::write(&path, urdf_tree(&mut tree_rng, n)).unwrap();
            }
            s += &format!(
                "robots:\n  - {{urdf: {}, base: {{mode: fixed}}}}\n",
                path.display()
            );
        }
    }
    s.into_bytes()
}

/// Scene YAML through the loader; every scene that loads takes one step, whatever its size.
fn scene_step_target(dir: PathBuf) -> impl Fn(&[u8]) -> bool {
    move |input: &[u8]| {
        let Ok(text) = std::str::from_utf8(input) else {
            return false;
        };
        let Ok(scene) = contact_sim::config::load_scene_str(text, &dir.join("fuzz.yaml")) else {
            return false;
        };
        let mut sim = contact_sim::sim::Simulation::from_scene(&scene, None);
        sim.step();
        true
    }
}

/// One generated bag file: commands whose log times jump (by up to u64::MAX ns), a record
/// length field inside a chunk set to an extreme value (the chunk uncompressed, zstd or lz4,
/// its CRC matching), a top-level length or a chunk header's size fields set to an extreme
/// value, or compressed chunks with random byte damage.
fn bag_structure(rng: &mut ChaCha8Rng, dir: &Path, plain: &[u8]) -> Vec<u8> {
    let compression = ["", "zstd", "lz4"][rng.random_range(0..3)];
    match rng.random_range(0..4) {
        0 => {
            let b = dir.join("gen_jumps");
            let _ = std::fs::remove_dir_all(&b);
            let mut w = BagWriter::create(
                &b,
                &WriterOptions {
                    chunk_size_bytes: 512,
                    ..Default::default()
                },
            )
            .unwrap();
            let t = w.add_topic("/joint_commands", MsgType::JointState).unwrap();
            let mut at = 0u64;
            for i in 0..rng.random_range(1..40) {
                at = match rng.random_range(0..6) {
                    0 => extreme_u64(rng, at),
                    1 => at.saturating_sub(rng.random_range(0..1_000_000_000)),
                    _ => at.saturating_add(1_000_000),
                };
                let m = JointState {
                    header: Header::new(0, ""),
                    name: vec!["pendulum_joint".into()],
                    position: vec![0.01 * i as f64],
                    ..Default::default()
                };
                w.write(t, at, &Msg::JointState(m)).unwrap();
            }
            w.finish().unwrap();
            let f = std::fs::read_dir(&b)
                .unwrap()
                .map(|e| e.unwrap().path())
                .find(|p| p.extension().is_some_and(|e| e == "mcap"))
                .unwrap();
            std::fs::read(f).unwrap()
        }
        1 => {
            let target = rng.random_range(0..8);
            let pick = rng.random::<u64>();
            let value = extreme_u64(rng, 64);
            compress_chunks(plain, compression, |i, records| {
                if i != target {
                    return;
                }
                // walk to one of the chunk's records and set its length field
                let mut starts = vec![];
                let mut at = 0usize;
                while at + 9 <= records.len() {
                    starts.push(at);
                    at += 9 + u64::from_le_bytes(records[at + 1..at + 9].try_into().unwrap())
                        as usize;
                }
                if let Some(&r) = starts.get((pick % starts.len().max(1) as u64) as usize) {
                    records[r + 1..r + 9].copy_from_slice(&value.to_le_bytes());
                }
            })
        }
        2 => {
            let mut bytes = compress_chunks(plain, compression, |_, _| {});
            let chunks = crate::common::mcap_bytes::chunks(&bytes);
            let (body, len) = chunks[rng.random_range(0..chunks.len())];
            // the record's own length, the uncompressed size or the records' length
            let field =
                [body - 8, body + 16, body + 32 + compression.len()][rng.random_range(0..3)];
            let honest = u64::from_le_bytes(bytes[field..field + 8].try_into().unwrap());
            let v = extreme_u64(rng, honest);
            bytes[field..field + 8].copy_from_slice(&v.to_le_bytes());
            let _ = len;
            bytes
        }
        _ => {
            let bytes = compress_chunks(
                plain,
                if compression.is_empty() {
                    "zstd"
                } else {
                    compression
                },
                |_, _| {},
            );
            mutate(rng, &bytes)
        }
    }
}

/// The pendulum scene the generated command bags are replayed on.
fn pendulum_scene() -> contact_sim::config::Scene {
    contact_sim::config::load_scene_str("robots:\n  - urdf: ../../urdf/pendulum.urdf\n    control: {default: {mode: position, kp: 10.0, kd: 1.0}}\n", &repo("config/examples/gen.yaml")).unwrap()
}

/// A bag file through the reader, then its replay plan on the pendulum; plans of at most
/// 20 000 samples are replayed into memory (a longer one is legal, just long).
fn bag_replay_target(dir: PathBuf) -> impl Fn(&[u8]) -> bool {
    let scene = pendulum_scene();
    move |input: &[u8]| {
        let b = dir.join("gen_bag");
        std::fs::create_dir_all(&b).unwrap();
        std::fs::write(b.join("gen.mcap"), input).unwrap();
        let Ok(bag) = read_bag(&b.join("gen.mcap")) else {
            return false;
        };
        let Ok(plan) =
            contact_sim::bag::replay::ReplayPlan::prepare(&bag, &scene, &Default::default())
        else {
            return false;
        };
        if plan.sample_count() <= 20_000 {
            let mut sim = plan.simulation(&scene);
            let mut sink = contact_sim::identify::problem::MemorySink::new(&plan);
            plan.run(&mut sim, &mut sink);
        }
        true
    }
}

/// One generated bag directory (as text: one line per entry, `kind name [target]`, built by
/// [`bag_dir_target`]): good files, symlinks to files outside the directory, to `/dev/zero`,
/// to themselves or to nothing, FIFOs, subdirectories, and a metadata.yaml that lists entries
/// (or paths outside) once or twice.
fn bag_dir_structure(rng: &mut ChaCha8Rng) -> Vec<u8> {
    let mut lines = vec!["file a.mcap".to_string()];
    for i in 0..rng.random_range(0..5) {
        let name = format!("e{i}.mcap");
        lines.push(match rng.random_range(0..7) {
            0 => format!("link {name} ../outside/o.mcap"),
            1 => format!("link {name} /dev/zero"),
            2 => format!("link {name} {name}"),
            3 => format!("link {name} missing.mcap"),
            4 => format!("fifo {name}"),
            5 => format!("dir {name}"),
            _ => format!("link {name} a.mcap"),
        });
    }
    if rng.random::<bool>() {
        let listed: Vec<String> = (0..rng.random_range(1..5))
            .map(|_| {
                [
                    "a.mcap",
                    "e0.mcap",
                    "e1.mcap",
                    "../outside/o.mcap",
                    "/etc/hostname",
                    "metadata.yaml",
                    "",
                ][rng.random_range(0..7)]
                .to_string()
            })
            .collect();
        lines.push(format!("metadata {}", listed.join(" ")));
    }
    lines.join("\n").into_bytes()
}

/// Builds the bag directory an input of [`bag_dir_structure`] describes (a good one-file bag
/// `a.mcap` beside it in `outside/`) and reads it; a FIFO must not block the reader.
fn bag_dir_target(dir: PathBuf, good: Vec<u8>) -> impl Fn(&[u8]) -> bool {
    std::fs::create_dir_all(dir.join("outside")).unwrap();
    std::fs::write(dir.join("outside/o.mcap"), &good).unwrap();
    move |input: &[u8]| {
        let b = dir.join("gen_dir");
        let _ = std::fs::remove_dir_all(&b);
        std::fs::create_dir_all(&b).unwrap();
        for line in String::from_utf8_lossy(input).lines() {
            let w: Vec<&str> = line.split(' ').collect();
            let name = |i: usize| w.get(i).copied().unwrap_or("").replace('/', "_");
            if name(1).is_empty() || name(1) == "." || name(1) == ".." {
                continue;
            }
            let path = b.join(name(1));
            if path.exists() || path.symlink_metadata().is_ok() {
                continue;
            }
            match w[0] {
                "file" => std::fs::write(&path, &good).unwrap(),
                "link" if w.len() > 2 => std::os::unix::fs::symlink(w[2], &path).unwrap(),
                "fifo" => {
                    let ok = std::process::Command::new("mkfifo")
                        .arg(&path)
                        .status()
                        .is_ok_and(|s| s.success());
                    assert!(ok, "mkfifo");
                }
                "dir" => std::fs::create_dir_all(&path).unwrap(),
                "metadata" => {
                    let files: String = w[1..]
                        .iter()
                        .map(|f| format!("    - path: {f}\n"))
                        .collect();
                    let text = format!("rosbag2_bagfile_information:\n  version: 9\n  storage_identifier: mcap\n  relative_file_paths: [{}]\n  files:\n{files}", w[1..].join(", "));
                    std::fs::write(b.join("metadata.yaml"), text).unwrap();
                }
                _ => {}
            }
        }
        read_bag(&b).is_ok()
    }
}

#[test]
fn fuzz_generated_urdfs() {
    let d = tmp("gen_urdf");
    check(&[fuzz_with(
        "gen_urdf",
        iterations(300) / 10 + 5,
        &mut urdf_structure,
        &urdf_step_target(d.clone()),
    )]);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn fuzz_generated_scenes() {
    let d = tmp("gen_scene");
    let dir = d.clone();
    // relative paths of the generated scenes resolve from config/examples
    check(&[fuzz_with(
        "gen_scene",
        iterations(300) / 10 + 5,
        &mut |rng| scene_structure(rng, &dir),
        &scene_step_target(repo("config/examples")),
    )]);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn fuzz_generated_bags() {
    let d = tmp("gen_bag");
    let plain = seed_bag(&d);
    let dir = d.clone();
    let results = [
        fuzz_with(
            "gen_bag",
            iterations(400) / 4 + 5,
            &mut |rng| bag_structure(rng, &dir, &plain),
            &bag_replay_target(d.clone()),
        ),
        fuzz_with(
            "gen_bag_dir",
            iterations(400) / 10 + 5,
            &mut bag_dir_structure,
            &bag_dir_target(d.clone(), plain.clone()),
        ),
    ];
    check(&results);
    let _ = std::fs::remove_dir_all(&d);
}
