//! The ROS 2 packaging lists every interface package the node uses: `package.xml` (so that rosdep
//! installs them), the r2r message filter of `scripts/ros-env.sh` (so that bindings exist) and
//! the wheels `scripts/setup-ros.sh` installs (so that the test prefix has them).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Interface packages named as `r2r::<pkg>::` in the Rust sources under `dir`.
fn used_packages(dir: &Path, out: &mut BTreeSet<String>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            used_packages(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            let text = std::fs::read_to_string(&p).unwrap();
            for (i, _) in text.match_indices("r2r::") {
                let name: String = text[i + 5..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
                if name.ends_with("_msgs") || name.ends_with("_srvs") || name.ends_with("_interfaces") {
                    out.insert(name);
                }
            }
        }
    }
}

#[test]
fn every_interface_package_the_node_uses_is_declared_generated_and_installed() {
    let mut used = BTreeSet::new();
    used_packages(&repo().join("src"), &mut used);
    used_packages(&repo().join("examples"), &mut used);
    assert!(used.contains("sensor_msgs") && used.contains("visualization_msgs") && used.contains("tf2_msgs"), "scan found {used:?}");
    let package_xml = std::fs::read_to_string(repo().join("package.xml")).unwrap();
    let env = std::fs::read_to_string(repo().join("scripts/ros-env.sh")).unwrap();
    let filter_line = env.lines().find(|l| l.starts_with("export IDL_PACKAGE_FILTER=")).expect("IDL_PACKAGE_FILTER");
    let setup = std::fs::read_to_string(repo().join("scripts/setup-ros.sh")).unwrap();
    for pkg in &used {
        assert!(package_xml.contains(&format!("<depend>{pkg}</depend>")), "package.xml lacks <depend>{pkg}</depend>");
        assert!(filter_line.contains(pkg), "scripts/ros-env.sh IDL_PACKAGE_FILTER lacks {pkg}");
        // a wheel, or (no wheel on PyPI) an interface package built from scripts/ros-interfaces
        let built = repo().join("scripts/ros-interfaces").join(pkg).join("package.xml").exists() && setup.lines().any(|l| l.starts_with("INTERFACES=(") && l.contains(pkg.as_str()));
        assert!(setup.contains(&format!("ros-{}==", pkg.replace('_', "-"))) || built, "scripts/setup-ros.sh does not install ros-{} nor build it", pkg.replace('_', "-"));
    }
}

/// The `colcon build` line the README gives is the one `scripts/colcon-build` runs (and has
/// passed in a scratch workspace under `ROS_DISTRO=kilted`): the two cannot drift apart.
#[test]
fn the_readme_colcon_line_is_the_one_the_scratch_workspace_script_runs() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let script = std::fs::read_to_string(repo().join("scripts/colcon-build")).unwrap();
    let line = readme.lines().find(|l| l.starts_with("colcon build ")).expect("a `colcon build` line in the README");
    let documented: Vec<&str> = line.split('#').next().unwrap().split_whitespace().collect();
    // the script's command, with its line continuations joined
    let joined = script.replace("\\\n", " ");
    let run = joined.lines().map(str::trim).find(|l| l.starts_with("colcon build ")).expect("scripts/colcon-build runs colcon build");
    let ran: Vec<&str> = run.split_whitespace().filter(|w| !w.starts_with("--event-handlers") && *w != "console_direct-").collect();
    assert_eq!(documented, ran, "README's colcon line and scripts/colcon-build differ");
    assert!(documented.contains(&"--features") && documented.contains(&"ros"), "{documented:?}");
}
