//! CLI value sweeps: every option of `run`, `bench`, `model`, `replay`, `compare` and
//! `identify` that takes a value (found in each command's `--help`, so a new option is swept
//! without editing this file) gets extreme values, in a fresh working directory. Each call
//! must exit 0, or 2 with an error line naming the option, within the time budget: never a
//! panic (101), an abort (134), a signal or a hang.
//!
//! The suite's short pass sweeps a random sample of (option, value) pairs; `scripts/fuzz`
//! (more iterations) sweeps them all.

use super::*;
use std::process::{Command, Stdio};

/// Longest a CLI call may take (a valid but long request, e.g. a 2.5 s simulation, is fine).
const CLI_BUDGET: Duration = Duration::from_secs(60);

/// Values tried for every option: the mutator's extremes and a few more.
const VALUES: &[&str] = &[
    "nan",
    "inf",
    "-inf",
    "1e300",
    "-1e300",
    "18446744073709551615",
    "4294967296",
    "-1",
    "0",
    "-0",
    "1e-320",
    "1e-12",
    "2.5",
    "1e9",
    "",
    "abc",
    "1,2",
    ",,",
];

/// Options that name files written or read: swept with path-like values only (an extreme
/// number as a file name is just a name).
const PATH_OPTIONS: &[&str] = &[
    "--summary",
    "--csv",
    "--record",
    "--out",
    "--report",
    "--json",
    "--config",
    "--params",
    "--bag",
    "--validate",
    "--package-path",
];

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_contact_sim")
}

/// The options of `command` that take a value, from its `--help`.
fn value_options(command: &str) -> Vec<String> {
    let help = Command::new(bin())
        .args([command, "--help"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&help.stdout).to_string();
    let mut out = vec![];
    for line in text.lines() {
        let t = line.trim_start();
        // "-s, --long <V>" or "--long <V>"
        let t = if t.starts_with('-') && !t.starts_with("--") {
            t.split_once(", ").map_or(t, |(_, long)| long)
        } else {
            t
        };
        if let Some((name, rest)) = t.split_once(' ') {
            if name.starts_with("--") && rest.starts_with('<') {
                out.push(name.to_string());
            }
        }
    }
    out
}

/// Prepared inputs in `dir`: a short command bag and a simulated response of the pushing arm,
/// and a parameter file for identification.
struct Inputs {
    scene: String,
    commands: String,
    response: String,
    params: String,
}

fn prepare(dir: &Path) -> Inputs {
    let scene = repo("tests/data/bag_push.yaml").display().to_string();
    let commands = dir.join("commands").display().to_string();
    let response = dir.join("response").display().to_string();
    let ok = |args: &[&str]| {
        let o = Command::new(bin())
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    };
    ok(&[
        "run",
        &scene,
        "--duration",
        "0.2",
        "--record",
        &commands,
        "--record-rate",
        "200",
        "--quiet",
    ]);
    ok(&["replay", &commands, &scene, "--out", &response]);
    let params = dir.join("params.yaml");
    std::fs::write(
        &params,
        "parameters:\n  - {name: body/box/mass_kg, min: 0.1, max: 2.0}\n",
    )
    .unwrap();
    Inputs {
        scene,
        commands,
        response,
        params: params.display().to_string(),
    }
}

/// The base call of `command` (everything but the option under test, which replaces a base
/// option of the same name).
fn base_call(command: &str, inp: &Inputs, out: &Path) -> Vec<(String, Option<String>)> {
    let o = |s: &str| (s.to_string(), None);
    let kv = |k: &str, v: &str| (k.to_string(), Some(v.to_string()));
    let out = out.display().to_string();
    match command {
        "run" => vec![o(&inp.scene), kv("--duration", "0.01"), o("--quiet")],
        "bench" => vec![o(&inp.scene), kv("--steps", "3"), kv("--warmup", "0")],
        "model" => vec![o(&repo("urdf/pendulum.urdf").display().to_string())],
        "replay" => vec![o(&inp.commands), o(&inp.scene), kv("--out", &out)],
        "compare" => vec![o(&inp.response), o(&inp.commands)],
        _ => vec![
            o(&inp.scene),
            kv("--bag", &inp.response),
            kv("--params", &inp.params),
            kv("--out", &out),
            kv("--max-iterations", "1"),
            kv("--threads", "1"),
        ],
    }
}

/// Runs `contact_sim command` with `option` set to `value`; a finding or `None`.
fn sweep_one(command: &str, option: &str, value: &str, inp: &Inputs, dir: &Path) -> Option<String> {
    let work = dir.join(format!("w_{command}_{}", option.trim_start_matches('-')));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).unwrap();
    let mut args = vec![command.to_string()];
    for (k, v) in base_call(command, inp, &work.join("out")) {
        if k != option {
            args.push(k);
            args.extend(v);
        }
    }
    // `--opt=value`: a value starting with '-' is the option's, not another flag
    args.push(format!("{option}={value}"));
    let mut child = Command::new(bin())
        .args(&args)
        .current_dir(&work)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break Some(s);
        }
        if t0.elapsed() > CLI_BUDGET {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stderr = String::new();
    use std::io::Read;
    let _ = child.stderr.take().unwrap().read_to_string(&mut stderr);
    let call = format!("contact_sim {}", args[..].join(" "));
    let Some(status) = status else {
        return Some(format!("{call}: took over {} s", CLI_BUDGET.as_secs()));
    };
    match status.code() {
        Some(0) => None,
        Some(2) => {
            let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error")).collect();
            let name = option.trim_start_matches('-');
            // naming the option, or the file or value it was given
            let named = errors.iter().any(|l| {
                l.contains(option)
                    || l.contains(name)
                    || l.contains(&name.replace('-', "_"))
                    || (value.len() > 1 && l.contains(value))
                    || (!value.is_empty() && l.contains(&format!("{value}:")))
            });
            if errors.len() != 1 || !named {
                Some(format!(
                    "{call}: exit 2 without one error line naming {option}: {stderr:?}"
                ))
            } else {
                None
            }
        }
        code => Some(format!(
            "{call}: exit {code:?}: {}",
            stderr.lines().take(3).collect::<Vec<_>>().join(" | ")
        )),
    }
}

#[test]
fn fuzz_cli_values() {
    let d = tmp("cli");
    let inp = prepare(&d);
    let mut cases = vec![];
    for command in ["run", "bench", "model", "replay", "compare", "identify"] {
        let options = value_options(command);
        assert!(
            options.len() >= 2,
            "{command}: options from --help: {options:?}"
        );
        for option in options {
            let values: Vec<&str> = if PATH_OPTIONS.contains(&option.as_str()) {
                vec!["", ".", "/", "/dev/null", "/dev/full", "nonexistent/x"]
            } else {
                VALUES.to_vec()
            };
            for v in values {
                cases.push((command, option.clone(), v));
            }
        }
    }
    // the short pass: a seeded sample; scripts/fuzz: every case
    let n = iterations(60).min(cases.len());
    let mut rng = ChaCha8Rng::seed_from_u64(seed());
    let mut findings = vec![];
    let total = cases.len();
    for i in 0..n {
        let k = if n == total {
            i
        } else {
            rng.random_range(0..cases.len())
        };
        let (command, option, value) = cases[k].clone();
        if let Some(f) = sweep_one(command, &option, value, &inp, &d) {
            findings.push(f);
        }
    }
    eprintln!(
        "fuzz cli: {n} calls of {total} (option, value) cases, {} findings (seed {})",
        findings.len(),
        seed()
    );
    check(&[(n, findings)]);
    let _ = std::fs::remove_dir_all(&d);
}
