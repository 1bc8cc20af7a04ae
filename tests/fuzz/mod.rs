//! A mutation fuzzer over our own fixtures, on the stable toolchain: the URDF, scene, tet-mesh
//! and bag readers and the node's command validator get inputs derived from the shipped files
//! by seeded random mutations (bit flips, byte insertions and deletions, duplicated or dropped
//! spans, truncation, numbers replaced by extreme values). Every input must give `Ok` or an
//! error, never a panic, within a time budget.
//!
//! The test suite runs a short pass (a few seconds). A long one is `scripts/fuzz` (the same
//! code with more iterations, `CONTACT_SIM_FUZZ_ITERS`, and another seed,
//! `CONTACT_SIM_FUZZ_SEED`). A failing input is minimized (spans removed while it still
//! fails) and written to `target/fuzz-findings/`; once fixed, it belongs in `tests/data/fuzz/`,
//! whose files are replayed here on every run.

use contact_sim::bag::msgs::*;
use contact_sim::bag::{read_bag, BagWriter, WriterOptions};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

mod cli;
mod structures;

fn repo(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// Inputs per target: `CONTACT_SIM_FUZZ_ITERS`, else `default`.
fn iterations(default: usize) -> usize {
    std::env::var("CONTACT_SIM_FUZZ_ITERS").ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// When a target stops at the latest: `CONTACT_SIM_FUZZ_MINUTES` (per target) after `start`,
/// else never (the iteration count decides).
fn deadline(start: Instant) -> Option<Instant> {
    let minutes: f64 = std::env::var("CONTACT_SIM_FUZZ_MINUTES").ok()?.parse().ok()?;
    Some(start + Duration::from_secs_f64(minutes * 60.0))
}

fn seed() -> u64 {
    std::env::var("CONTACT_SIM_FUZZ_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or(18)
}

/// Longest time one input may take before it counts as a hang.
const BUDGET: Duration = Duration::from_secs(5);

/// Numbers that break careless code.
const EXTREMES: &[&str] = &["nan", "NaN", ".nan", "inf", "-inf", ".inf", "1e300", "-1e300", "1e18", "18446744073709551615", "-1", "0", "-0", "1e-320", "4294967296", "100000000000", "2.5", "1e9", ""];

/// One random mutation of `data`.
fn mutate(rng: &mut ChaCha8Rng, data: &[u8]) -> Vec<u8> {
    let mut d = data.to_vec();
    let rounds = rng.random_range(1..=4);
    for _ in 0..rounds {
        if d.is_empty() {
            d.push(rng.random());
            continue;
        }
        let at = rng.random_range(0..d.len());
        match rng.random_range(0..8) {
            0 => d[at] ^= 1 << rng.random_range(0..8),
            1 => d[at] = rng.random(),
            2 => d.insert(at, *b"<>\"'/ \n0-.e:[]{}".get(rng.random_range(0..16)).unwrap()),
            3 => {
                let end = (at + rng.random_range(1..64)).min(d.len());
                d.drain(at..end);
            }
            4 => {
                let end = (at + rng.random_range(1..256)).min(d.len());
                let span = d[at..end].to_vec();
                let times = rng.random_range(1..=8);
                for _ in 0..times {
                    d.splice(at..at, span.iter().copied());
                }
            }
            5 => d.truncate(at),
            _ => {
                // replace the number that starts at or after `at` by an extreme value
                let Some(s) = (at..d.len()).find(|&i| d[i].is_ascii_digit()) else { continue };
                let e = (s..d.len()).find(|&i| !(d[i].is_ascii_digit() || b".eE-+".contains(&d[i]))).unwrap_or(d.len());
                let v = EXTREMES[rng.random_range(0..EXTREMES.len())];
                d.splice(s..e, v.bytes());
            }
        }
    }
    d
}

/// What happened to one input.
#[derive(Debug)]
enum Outcome {
    /// Read (`true`: accepted, `false`: refused with an error).
    Fine(bool),
    /// Panicked, with the message.
    Panic(String),
    /// Took longer than [`BUDGET`].
    Slow(Duration),
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Outcome::Fine(ok) => write!(f, "{}", if *ok { "accepted" } else { "refused" }),
            Outcome::Panic(m) => write!(f, "panic: {m}"),
            Outcome::Slow(d) => write!(f, "took {:.1} s", d.as_secs_f64()),
        }
    }
}

/// Runs `f` on `input`, catching a panic and timing it.
fn run_one(f: &dyn Fn(&[u8]) -> bool, input: &[u8]) -> Outcome {
    let t0 = Instant::now();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(input)));
    let dt = t0.elapsed();
    match r {
        Err(p) => Outcome::Panic(p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string())).unwrap_or_default()),
        Ok(_) if dt > BUDGET => Outcome::Slow(dt),
        Ok(accepted) => Outcome::Fine(accepted),
    }
}

/// Removes spans of a failing input while it still fails (the same kind of failure).
fn minimize(f: &dyn Fn(&[u8]) -> bool, input: &[u8]) -> Vec<u8> {
    let fails = |d: &[u8]| !matches!(run_one(f, d), Outcome::Fine(_));
    let mut best = input.to_vec();
    let mut chunk = best.len() / 2;
    let t0 = Instant::now();
    while chunk >= 1 && t0.elapsed() < Duration::from_secs(60) {
        let mut i = 0;
        let mut shrunk = false;
        while i + chunk <= best.len() {
            let mut cand = best.clone();
            cand.drain(i..i + chunk);
            if fails(&cand) {
                best = cand;
                shrunk = true;
            } else {
                i += chunk;
            }
        }
        if !shrunk {
            chunk /= 2;
        }
    }
    best
}

/// Fuzzes one target: `iters` mutations of the seeds; returns (inputs run, findings).
fn fuzz(name: &str, seeds: &[Vec<u8>], iters: usize, f: &dyn Fn(&[u8]) -> bool) -> (usize, Vec<String>) {
    assert!(!seeds.is_empty(), "{name}: no seed inputs");
    // the seeds themselves must pass
    for s in seeds {
        let o = run_one(f, s);
        assert!(matches!(o, Outcome::Fine(_)), "{name}: a seed input fails: {o}");
    }
    let mut mutated = |rng: &mut ChaCha8Rng| {
        let k = rng.random_range(0..seeds.len());
        mutate(rng, &seeds[k])
    };
    fuzz_with(name, iters, &mut mutated, f)
}

/// Fuzzes one target with `iters` inputs from `make` (a generator or a mutator, given the
/// target's random stream); returns (inputs run, findings).
fn fuzz_with(name: &str, iters: usize, make: &mut dyn FnMut(&mut ChaCha8Rng) -> Vec<u8>, f: &dyn Fn(&[u8]) -> bool) -> (usize, Vec<String>) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed() ^ name.bytes().fold(0u64, |h, b| h.wrapping_mul(31).wrapping_add(b as u64)));
    let quiet = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let mut findings = vec![];
    let (mut runs, mut accepted) = (0, 0);
    let stop = deadline(Instant::now());
    for i in 0..iters {
        if stop.is_some_and(|t| Instant::now() > t) {
            break;
        }
        let input = make(&mut rng);
        runs += 1;
        let outcome = run_one(f, &input);
        accepted += matches!(outcome, Outcome::Fine(true)) as usize;
        if !matches!(outcome, Outcome::Fine(_)) {
            let min = minimize(f, &input);
            let out = repo("target/fuzz-findings");
            std::fs::create_dir_all(&out).unwrap();
            let file = out.join(format!("{name}_{}_{i}", seed()));
            std::fs::write(&file, &min).unwrap();
            findings.push(format!("{name}: input {i}: {outcome}; minimized ({} bytes) in {}", min.len(), file.display()));
            if findings.len() >= 5 {
                break;
            }
        }
    }
    std::panic::set_hook(quiet);
    eprintln!("fuzz {name}: {runs} inputs ({accepted} accepted, the others refused with an error), {} findings (seed {})", findings.len(), seed());
    (runs, findings)
}

fn read_dir_files(dir: &str, exts: &[&str]) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(repo(dir)).unwrap().map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|e| exts.iter().any(|x| e == *x))).collect();
    v.sort();
    v
}

fn seeds_of(files: &[PathBuf]) -> Vec<Vec<u8>> {
    files.iter().map(|p| std::fs::read(p).unwrap()).collect()
}

// ---------------------------------------------------------------------------------------------
// targets
// ---------------------------------------------------------------------------------------------

/// URDF text through the lenient parser and the model builder (as `contact_sim model`).
fn urdf_target(dir: PathBuf) -> impl Fn(&[u8]) -> bool {
    move |input: &[u8]| {
        let p = dir.join(format!("fuzz_{:?}.urdf", std::thread::current().id()).replace(['(', ')'], ""));
        std::fs::write(&p, input).unwrap();
        contact_sim::config::load_urdf_model(&p, false, &Default::default()).is_ok()
    }
}

/// Scene YAML through the loader; scenes that load take three steps.
fn scene_target(dir: PathBuf) -> impl Fn(&[u8]) -> bool {
    move |input: &[u8]| {
        let Ok(text) = std::str::from_utf8(input) else { return false };
        let Ok(scene) = contact_sim::config::load_scene_str(text, &dir.join("fuzz.yaml")) else { return false };
        if scene.model.nv + 3 * scene.model.fem_nodes() <= 200 {
            let mut sim = contact_sim::sim::Simulation::from_scene(&scene, None);
            for _ in 0..3 {
                sim.step();
            }
        }
        true
    }
}

/// A tet mesh file (the extension of `ext`) through the reader; for `.node`, the `fuzz.ele`
/// of a good mesh sits beside it.
fn tet_target(dir: PathBuf, ext: &'static str) -> impl Fn(&[u8]) -> bool {
    move |input: &[u8]| {
        let p = dir.join(format!("fuzz.{ext}"));
        std::fs::write(&p, input).unwrap();
        contact_sim::config::read_tet_mesh(&p).is_ok()
    }
}

/// A one-file bag (its `.mcap` bytes) through the bag reader.
fn bag_target(dir: PathBuf) -> impl Fn(&[u8]) -> bool {
    move |input: &[u8]| {
        std::fs::write(dir.join("fuzz.mcap"), input).unwrap();
        read_bag(&dir.join("fuzz.mcap")).is_ok()
    }
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("contact_sim_fuzz_{}_{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A small bag of every message type the reader decodes, in small chunks.
fn seed_bag(dir: &Path) -> Vec<u8> {
    let b = dir.join("seed");
    let mut w = BagWriter::create(&b, &WriterOptions { chunk_size_bytes: 512, ..Default::default() }).unwrap();
    let js = w.add_topic("/joint_states", MsgType::JointState).unwrap();
    let wr = w.add_topic("/wrench", MsgType::WrenchStamped).unwrap();
    for i in 0..20u64 {
        let m = Msg::JointState(JointState { header: Header::new(i as i64 * 1_000_000, ""), name: vec!["a".into(), "b".into()], position: vec![i as f64, 1.0], velocity: vec![0.5, 0.25], ..Default::default() });
        w.write(js, i * 1_000_000, &m).unwrap();
        let mut x = WrenchStamped { header: Header::new(i as i64 * 1_000_000, "hand"), ..Default::default() };
        x.wrench.force[2] = i as f64;
        w.write(wr, i * 1_000_000, &Msg::WrenchStamped(x)).unwrap();
    }
    w.finish().unwrap();
    let f = std::fs::read_dir(&b).unwrap().map(|e| e.unwrap().path()).find(|p| p.extension().is_some_and(|e| e == "mcap")).unwrap();
    std::fs::read(f).unwrap()
}

fn check(results: &[(usize, Vec<String>)]) {
    let findings: Vec<&String> = results.iter().flat_map(|r| &r.1).collect();
    assert!(results.iter().all(|r| r.0 > 0));
    assert!(findings.is_empty(), "fuzz findings:\n{}", findings.iter().map(|s| s.as_str()).collect::<Vec<_>>().join("\n"));
}

#[test]
fn fuzz_urdf() {
    let d = tmp("urdf");
    let mut files = read_dir_files("urdf", &["urdf"]);
    files.extend(read_dir_files("tests/data", &["urdf"]).into_iter().filter(|p| !p.to_string_lossy().contains("broken_missing_mesh")));
    let seeds: Vec<Vec<u8>> = seeds_of(&files).into_iter().filter(|s| s.len() < 64 << 10).collect();
    // meshes referenced relative to the URDF directory: copy the fixtures' meshes beside
    std::fs::create_dir_all(d.join("meshes")).unwrap();
    for m in read_dir_files("tests/data/meshes", &["stl", "obj"]) {
        std::fs::copy(&m, d.join("meshes").join(m.file_name().unwrap())).unwrap();
    }
    let f = urdf_target(d.clone());
    // seeds that load from another directory (package:// or ../ meshes) are kept: they fail
    // cleanly here, which is what is tested
    check(&[fuzz("urdf", &seeds, iterations(400), &f)]);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn fuzz_scene() {
    let files: Vec<PathBuf> = read_dir_files("config/examples", &["yaml"]).into_iter().filter(|p| !p.to_string_lossy().contains("fem_")).collect();
    let seeds = seeds_of(&files);
    // relative paths resolve from config/examples, where the fixtures live
    let f = scene_target(repo("config/examples"));
    check(&[fuzz("scene", &seeds, iterations(300), &f)]);
}

#[test]
fn fuzz_tet_mesh() {
    let d = tmp("tet");
    // good seeds generated (a 2×2×1 box grid in each format), the broken fixtures beside them
    let mesh = contact_sim::fem::TetMesh::box_grid([0.1, 0.1, 0.05], [2, 2, 1]);
    contact_sim::config::write_gmsh41(&mesh, &d.join("g41.msh")).unwrap();
    contact_sim::config::write_gmsh22(&mesh, &d.join("g22.msh")).unwrap();
    contact_sim::config::write_tetgen(&mesh, &d.join("fuzz.node")).unwrap();
    let read = |p: PathBuf| std::fs::read(p).unwrap();
    let mut msh = vec![read(d.join("g41.msh")), read(d.join("g22.msh"))];
    msh.extend(seeds_of(&read_dir_files("tests/data/meshes", &["msh"])));
    let node = vec![read(d.join("fuzz.node"))];
    let ele = vec![read(d.join("fuzz.ele"))];
    let results = [
        fuzz("tet_msh", &msh, iterations(300), &tet_target(d.clone(), "msh")),
        // the .node mutated beside the good .ele, then the .ele beside the good .node
        fuzz("tet_node", &node, iterations(300), &tet_target(d.clone(), "node")),
        fuzz("tet_ele", &ele, iterations(300), &tetgen_ele_target(d.clone(), node[0].clone())),
    ];
    check(&results);
    let _ = std::fs::remove_dir_all(&d);
}

/// A TetGen `.ele` through the reader, beside a good `.node`.
fn tetgen_ele_target(dir: PathBuf, node: Vec<u8>) -> impl Fn(&[u8]) -> bool {
    move |input: &[u8]| {
        std::fs::write(dir.join("ele_case.node"), &node).unwrap();
        std::fs::write(dir.join("ele_case.ele"), input).unwrap();
        contact_sim::config::read_tet_mesh(&dir.join("ele_case.node")).is_ok()
    }
}

#[test]
fn fuzz_bag() {
    let d = tmp("bag");
    let seeds = vec![seed_bag(&d)];
    check(&[fuzz("bag", &seeds, iterations(400), &bag_target(d.clone()))]);
    let _ = std::fs::remove_dir_all(&d);
}

/// Random joint commands, group commands and trajectories (names from the scene and junk,
/// lengths that match or not, extreme values) through the node's command validator.
#[test]
fn fuzz_commands() {
    use contact_sim::rt::messages::{JointCommand, JointLayout, TrajectoryCommand};
    use contact_sim::rt::validate::{CommandValidator, GroupInterface, LimitPolicy, TrajectoryPointView};
    let scene = contact_sim::config::load_scene(&repo("tests/data/bag_push.yaml")).unwrap();
    let layout = JointLayout::new(&scene.model);
    let names: Vec<String> = layout.joints.iter().map(|j| j.name.clone()).collect();
    let mut rng = ChaCha8Rng::seed_from_u64(seed());
    let values = [0.0, 1.0, -1.0, 1e300, -1e300, f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 1e-320, 3.0];
    let n = iterations(2000);
    let mut runs = 0;
    let mut findings = vec![];
    let quiet = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    // with a time limit, each policy gets half of it
    let start = Instant::now();
    let halves = deadline(start).map(|t| [start + (t - start) / 2, t]);
    for (half, policy) in [LimitPolicy::Reject, LimitPolicy::Clamp].into_iter().enumerate() {
        let stop = halves.map(|h| h[half]);
        let v = CommandValidator::new(&layout, policy);
        let mut out = JointCommand::new(names.len());
        let mut traj = TrajectoryCommand::new(names.len(), 8);
        for i in 0..n / 2 {
            if stop.is_some_and(|t| Instant::now() > t) {
                break;
            }
            let k = rng.random_range(0..=names.len() + 2);
            let pick = |rng: &mut ChaCha8Rng| -> String {
                match rng.random_range(0..6) {
                    0 => String::new(),
                    1 => "no_such_joint".into(),
                    _ => names[rng.random_range(0..names.len())].clone(),
                }
            };
            let js: Vec<String> = (0..k).map(|_| pick(&mut rng)).collect();
            let vals = |rng: &mut ChaCha8Rng| -> Vec<f64> {
                let len = match rng.random_range(0..4) {
                    0 => 0,
                    1 => rng.random_range(0..k + 3),
                    _ => k,
                };
                (0..len).map(|_| values[rng.random_range(0..values.len())]).collect()
            };
            let (p, vel, e) = (vals(&mut rng), vals(&mut rng), vals(&mut rng));
            let pts: Vec<(f64, Vec<f64>, Vec<f64>)> = (0..rng.random_range(0..10)).map(|_| (values[rng.random_range(0..values.len())], vals(&mut rng), vals(&mut rng))).collect();
            let interface = [GroupInterface::Position, GroupInterface::Velocity, GroupInterface::Effort][rng.random_range(0..3)];
            let delay = values[rng.random_range(0..values.len())];
            runs += 1;
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let _ = v.joint_state(&js, &p, &vel, &e, &mut out);
                if let Ok(g) = v.make_group("g", &js, interface) {
                    let _ = v.group(&g, &p, &mut out);
                }
                let views: Vec<TrajectoryPointView> = pts.iter().map(|(t, q, qd)| TrajectoryPointView { time_from_start_s: *t, positions: q, velocities: qd }).collect();
                let _ = v.trajectory(&js, &views, delay, &mut traj);
            }));
            if r.is_err() {
                findings.push(format!("commands: input {i}: panic with names {js:?}, positions {p:?}, velocities {vel:?}, efforts {e:?}, points {pts:?}"));
            }
        }
    }
    std::panic::set_hook(quiet);
    eprintln!("fuzz commands: {runs} inputs, {} findings (seed {})", findings.len(), seed());
    check(&[(runs, findings)]);
}

/// The minimized reproducers of past findings in `tests/data/fuzz/` (named after their
/// target: `urdf_*`, `scene_*`, `tet_node_*`, `tet_msh_*`, `bag_*`) still give an
/// error or `Ok`, not a panic, each within the budget.
#[test]
fn fuzz_reproducers_stay_fixed() {
    let d = tmp("repro");
    let mesh = contact_sim::fem::TetMesh::box_grid([0.1, 0.1, 0.05], [2, 2, 1]);
    contact_sim::config::write_tetgen(&mesh, &d.join("fuzz.node")).unwrap();
    let files = read_dir_files("tests/data/fuzz", &["urdf", "yaml", "node", "msh", "mcap"]);
    assert!(!files.is_empty());
    for p in &files {
        let input = std::fs::read(p).unwrap();
        let ext = p.extension().unwrap().to_str().unwrap();
        let f: Box<dyn Fn(&[u8]) -> bool> = match ext {
            "urdf" => Box::new(urdf_target(d.clone())),
            "yaml" => Box::new(scene_target(repo("config/examples"))),
            "node" => Box::new(tet_target(d.clone(), "node")),
            "msh" => Box::new(tet_target(d.clone(), "msh")),
            _ => Box::new(bag_target(d.clone())),
        };
        let outcome = run_one(&*f, &input);
        assert!(matches!(outcome, Outcome::Fine(_)), "{}: {outcome}", p.display());
    }
    let _ = std::fs::remove_dir_all(&d);
}
