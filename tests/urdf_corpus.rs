//! The URDF corpus test: every URDF of `example-robot-data` loaded by contact_sim and by
//! Pinocchio, with M(q) and inverse dynamics compared to 1e-9 (scripts/urdf-corpus does the work).
//! It runs when the wheels are installed in the cached venv (`.cache/urdf-corpus`, or
//! URDF_CORPUS_DIR): `./scripts/test` installs them first (`scripts/urdf-corpus --install-only`,
//! ~20 s, ~0.9 GB, ignored by git) and sets CONTACT_SIM_REQUIRE_URDF_CORPUS=1, so that in the
//! suite the test cannot skip. Run alone without the venv, it is skipped with a message.

use std::path::Path;
use std::process::Command;

#[test]
fn every_urdf_pinocchio_loads_we_load_with_equal_dynamics() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = std::env::var("URDF_CORPUS_DIR").unwrap_or_else(|_| repo.join(".cache/urdf-corpus").display().to_string());
    let python = Path::new(&dir).join("venv/bin/python");
    let ready = python.exists() && Command::new(&python).args(["-c", "import pinocchio"]).output().map(|o| o.status.success()).unwrap_or(false);
    if !ready {
        assert!(std::env::var("CONTACT_SIM_REQUIRE_URDF_CORPUS").as_deref() != Ok("1"), "CONTACT_SIM_REQUIRE_URDF_CORPUS=1 but the corpus venv at {dir} has no pinocchio");
        eprintln!("SKIPPED: the URDF corpus is not installed in {dir} (run scripts/urdf-corpus once to install example-robot-data and pin)");
        return;
    }
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
