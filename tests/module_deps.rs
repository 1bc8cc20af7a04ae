//! The engine's core modules depend on each other without cycles: `model` (data), `fem`,
//! `contact`, `dynamics`, `workspace`, `sensors`, `coupled`, `math`, `collision`. A module
//! depends on another when its code (not its comments) names `crate::<other>`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const CORE: &[&str] = &["model", "fem", "contact", "dynamics", "workspace", "sensors", "coupled", "math", "collision"];

fn sources(module: &str) -> Vec<PathBuf> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut out = Vec::new();
    let file = src.join(format!("{module}.rs"));
    if file.exists() {
        out.push(file);
    }
    let mut stack = vec![src.join(module)];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for e in entries {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    assert!(!out.is_empty(), "no sources for module {module}");
    out
}

fn dependencies(module: &str) -> BTreeSet<String> {
    let mut deps = BTreeSet::new();
    for f in sources(module) {
        let text = std::fs::read_to_string(&f).unwrap();
        let mut in_tests = false;
        for line in text.lines() {
            let code = line.trim_start();
            if code.starts_with("//") {
                continue;
            }
            // unit tests may reach anywhere
            if code.starts_with("mod tests") || code.starts_with("mod scheme_tests") {
                in_tests = true;
            }
            if in_tests {
                continue;
            }
            let code = code.split("//").next().unwrap();
            for other in CORE {
                if *other != module && code.contains(&format!("crate::{other}::")) || code.contains(&format!("crate::{other};")) && *other != module {
                    deps.insert(other.to_string());
                }
            }
        }
    }
    deps
}

#[test]
fn core_modules_have_no_import_cycles() {
    let graph: BTreeMap<String, BTreeSet<String>> = CORE.iter().map(|m| (m.to_string(), dependencies(m))).collect();
    // depth-first search for a cycle, reporting its path
    fn visit(n: &str, g: &BTreeMap<String, BTreeSet<String>>, path: &mut Vec<String>, done: &mut BTreeSet<String>) -> Option<Vec<String>> {
        if let Some(i) = path.iter().position(|p| p == n) {
            let mut cycle = path[i..].to_vec();
            cycle.push(n.to_string());
            return Some(cycle);
        }
        if done.contains(n) {
            return None;
        }
        path.push(n.to_string());
        for d in &g[n] {
            if let Some(c) = visit(d, g, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(n.to_string());
        None
    }
    let mut done = BTreeSet::new();
    for m in CORE {
        if let Some(cycle) = visit(m, &graph, &mut Vec::new(), &mut done) {
            panic!("import cycle: {}\n(dependencies: {graph:?})", cycle.join(" → "));
        }
    }
    // and the layering the architecture asks for: the model is data, below everything
    assert!(graph["model"].iter().all(|d| ["math", "fem"].contains(&d.as_str())), "model depends on {:?}", graph["model"]);
    assert!(graph["math"].is_empty(), "math depends on {:?}", graph["math"]);
}
