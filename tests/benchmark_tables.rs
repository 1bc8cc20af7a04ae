//! The report scripts: BENCHMARKS.md is what `scripts/benchmarks-md` makes of
//! `benches/results/*.json`, and `scripts/peers-table` picks, per scene, the fastest of our
//! methods that left no step unconverged (a faster one that did not converge is not a result).
//! The peers run is a real `./scripts/bench-peers --json` output (tests/data/peers/).

use std::path::PathBuf;
use std::process::Command;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn python(args: &[&str]) -> (i32, String, String) {
    let out = Command::new("python3").args(args).current_dir(repo()).output().expect("python3 runs");
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn benchmarks_md_is_generated_from_the_results() {
    let (code, out, err) = python(&["scripts/benchmarks-md", "--check"]);
    assert_eq!(code, 0, "BENCHMARKS.md is not what scripts/benchmarks-md makes of benches/results: {out}{err}");
}

/// The best converged method of each scene, and its ratio, from a real run; then the same run
/// with PGS made the fastest on the arm scene, where it leaves steps unconverged: the pick
/// stays Newton.
#[test]
fn peers_table_picks_the_fastest_converged_method() {
    let run = "tests/data/peers/bench-peers-2026-11-27.json";
    let (code, out, err) = python(&["scripts/peers-table", run, "--readme-rows"]);
    assert_eq!(code, 0, "{err}");
    let rows: Vec<&str> = out.lines().collect();
    let expect = [("quadruped standing", "pgs", "0.52"), ("quadruped trotting", "bisection", "0.41"), ("arm", "newton", "1.18"), ("default scene", "newton", "0.98"), ("5-box stack, 1 kg", "pgs", "0.85"), ("4096", "newton", "1.21")];
    assert_eq!(rows.len(), expect.len(), "{out}");
    for (row, (scene, method, ratio)) in rows.iter().zip(expect) {
        assert!(row.contains(scene) && row.contains(&format!("`{method}`")) && row.contains(&format!("{ratio}×")), "expected {scene}: {method} at {ratio}×, got {row}");
    }
    // PGS ten times faster on the arm scene, with its 20 unconverged steps of the run
    let mut v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(repo().join(run)).unwrap()).unwrap();
    let push = v["results"].as_array_mut().unwrap().iter_mut().find(|r| r["scene"] == "push").unwrap();
    assert!(push["ours_iterations"]["pgs"][0][1].as_f64().unwrap() > 0.0, "the run's PGS left steps unconverged on the arm");
    push["ours_us"]["pgs"] = serde_json::json!([1.0, 1.0]);
    let dir = std::env::temp_dir().join(format!("contact_sim_peers_table_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let edited = dir.join("run.json");
    std::fs::write(&edited, v.to_string()).unwrap();
    let (code, out, err) = python(&["scripts/peers-table", edited.to_str().unwrap(), "--readme-rows"]);
    assert_eq!(code, 0, "{err}");
    let arm = out.lines().find(|l| l.contains("arm")).unwrap();
    assert!(arm.contains("`newton`"), "an unconverged method was picked: {arm}");
    // the table refuses to replace an existing file without --force, naming it
    let table = dir.join("table.json");
    std::fs::write(&table, "{}").unwrap();
    let (code, _, err) = python(&["scripts/peers-table", run, "--command", "c", "--date", "d", "--cpu", "e", "--out", table.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.contains("table.json") && err.contains("--force"), "{err}");
    assert_eq!(std::fs::read_to_string(&table).unwrap(), "{}");
    std::fs::remove_dir_all(&dir).unwrap();
}
