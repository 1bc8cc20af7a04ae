//! The URDF corpus test: every URDF of `example-robot-data` loaded by contact_sim and by
//! Pinocchio, with M(q) and inverse dynamics compared to 1e-9 (scripts/urdf-corpus does the work).
//! It runs only when the wheels are already installed in the cached venv (`scripts/urdf-corpus`
//! installs them once, ~1 GB); otherwise it is skipped with a message.

use std::path::Path;
use std::process::Command;

#[test]
fn every_urdf_pinocchio_loads_we_load_with_equal_dynamics() {
    let dir = std::env::var("URDF_CORPUS_DIR").unwrap_or_else(|_| "/.cache/urdf-corpus".into());
    let python = Path::new(&dir).join("venv/bin/python");
    let ready = python.exists() && Command::new(&python).args(["-c", "import pinocchio"]).output().map(|o| o.status.success()).unwrap_or(false);
    if !ready {
        eprintln!("SKIPPED: the URDF corpus is not installed in {dir} (run scripts/urdf-corpus once to install example-robot-data and pin)");
        return;
    }
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new(python)
        .arg(repo.join("scripts/urdf_corpus.py"))
        .args(["--bin", env!("CARGO_BIN_EXE_contact_sim"), "--samples", "2"])
        .current_dir(repo)
        .output()
        .expect("run scripts/urdf_corpus.py");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let summary: Vec<&str> = stdout.lines().rev().take(4).collect();
    eprintln!("{}", summary.into_iter().rev().collect::<Vec<_>>().join("\n"));
    assert!(out.status.success(), "corpus: a URDF Pinocchio loads is refused, or dynamics differ:\n{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("Pinocchio loaded"), "{stdout}");
}
