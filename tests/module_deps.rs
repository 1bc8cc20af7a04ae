//! The engine is layered, and the contact seam is closed.
//!
//! **Layers.** The layer table in the crate docs (`src/lib.rs`, "Layers") is the law: a module
//! uses only modules of lower layers (or of its own layer, without a cycle). The graph is derived
//! from the code (comments and strings removed, `#[cfg(test)]` modules skipped): every `use`
//! tree, and every `crate::`, `super::` and `self::` path in expressions and types. A path is
//! resolved to the module that *defines* the item, following `pub use` re-exports, so a facade
//! that re-exports its children is not an edge back up. Nodes are the top-level modules, and
//! each submodule of `contact` (its seam files, its registry and one node per method).
//!
//! **The seam.** Inside `contact`: the seam (`method`, `problem`, `nodal`) uses no method and
//! not the registry; a method uses the seam and lower layers but no other method (one listed
//! exception, with its reason); only the registry lists them all. Outside `contact`, shared
//! code never names a method: neither its scene name (`pgs`, ...) nor its registry variant
//! (`Pgs`, ...), in code or comments.
//!
//! Std only: it reads files.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file of the library (not `src/bin`), by module path (`["contact", "newton",
/// "core"]`; `lib.rs` is `[]`).
fn library_files() -> BTreeMap<Vec<String>, PathBuf> {
    let mut out = BTreeMap::new();
    let mut stack = vec![src()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            let rel = p.strip_prefix(src()).unwrap().to_path_buf();
            if p.is_dir() {
                if rel != Path::new("bin") {
                    stack.push(p);
                }
            } else if p.extension().is_some_and(|x| x == "rs") {
                let mut parts: Vec<String> = rel.with_extension("").iter().map(|c| c.to_string_lossy().into_owned()).collect();
                if parts.last().is_some_and(|l| l == "mod") {
                    parts.pop();
                }
                if parts == ["lib"] {
                    parts.clear();
                }
                out.insert(parts, p);
            }
        }
    }
    out
}

/// `text` with comments and the contents of string and char literals removed.
fn strip_comments_and_strings(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < b.len() {
        if text[i..].starts_with("//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if text[i..].starts_with("/*") {
            let mut depth = 0;
            while i < b.len() {
                if text[i..].starts_with("/*") {
                    depth += 1;
                    i += 2;
                } else if text[i..].starts_with("*/") {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if b[i] == b'r' && (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_')) && (text[i + 1..].starts_with('"') || text[i + 1..].starts_with("#\"") || text[i + 1..].starts_with("##\"")) {
            // raw string r"…", r#"…"#, r##"…"##
            let hashes = text[i + 1..].bytes().take_while(|&c| c == b'#').count();
            let close = format!("\"{}", "#".repeat(hashes));
            let start = i + 2 + hashes;
            i = text[start..].find(&close).map_or(b.len(), |k| start + k + close.len());
            out.push_str("\"\"");
        } else if b[i] == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("\"\"");
        } else if b[i] == b'\'' {
            // a char literal ('a', '\n', '\u{..}'), not a lifetime
            let rest = &text[i + 1..];
            let len = if rest.starts_with('\\') {
                rest.find('\'').map(|k| k + 1)
            } else {
                rest.chars().next().filter(|_| rest.chars().nth(1) == Some('\'')).map(|c| c.len_utf8() + 1)
            };
            match len {
                Some(n) => {
                    i += 1 + n;
                    out.push_str("' '");
                }
                None => {
                    out.push('\'');
                    i += 1;
                }
            }
        } else {
            let c = text[i..].chars().next().unwrap();
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

/// Index just past the `}` that closes the `{` at `open`.
fn matching_brace(code: &str, open: usize) -> usize {
    let mut depth = 0;
    for (k, c) in code[open..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return open + k + 1;
                }
            }
            _ => {}
        }
    }
    code.len()
}

/// `code` without its `#[cfg(test)]` items (inline test modules, test-only functions), and the
/// names of test-only modules declared `#[cfg(test)] mod name;`.
fn without_tests(code: &str) -> (String, Vec<String>) {
    let mut out = String::new();
    let mut test_mods = Vec::new();
    let mut rest = code;
    while let Some(k) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..k]);
        let after = &rest[k + "#[cfg(test)]".len()..];
        // the item: up to its first `;` or its `{ … }` body, whichever comes first
        let semi = after.find(';').unwrap_or(after.len());
        let brace = after.find('{').unwrap_or(after.len());
        if semi < brace {
            let item = after[..semi].trim();
            if let Some(name) = item.split_whitespace().collect::<Vec<_>>().windows(2).find(|w| w[0] == "mod").map(|w| w[1]) {
                test_mods.push(name.to_string());
            }
            rest = &after[semi + 1..];
        } else if brace < after.len() {
            rest = &after[matching_brace(after, brace)..];
        } else {
            rest = "";
        }
    }
    out.push_str(rest);
    (out, test_mods)
}

/// The `use` declarations of `code`: (is `pub`, the tree text), and `code` without them.
fn use_declarations(code: &str) -> (Vec<(bool, String)>, String) {
    let mut uses = Vec::new();
    let mut rest_code = String::new();
    let mut i = 0;
    let b = code.as_bytes();
    while i < b.len() {
        let word_start = i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_');
        if word_start && code[i..].starts_with("use ") {
            let end = code[i..].find(';').map_or(code.len(), |k| i + k);
            // `pub use` / `pub(crate) use`: look back over the visibility
            let before = rest_code.trim_end();
            let is_pub = before.ends_with("pub") || before.ends_with(')') && before.rfind("pub(").is_some_and(|p| before[p..].find(')').is_some_and(|q| p + q + 1 == before.len()));
            uses.push((is_pub, code[i + 4..end].to_string()));
            i = end + 1;
        } else {
            let c = code[i..].chars().next().unwrap();
            rest_code.push(c);
            i += c.len_utf8();
        }
    }
    (uses, rest_code)
}

/// Expands a use tree (`a::{b, c::{d as e}}`) into paths with their local names.
fn expand_use_tree(tree: &str) -> Vec<(Vec<String>, String)> {
    let tree: String = tree.split_whitespace().collect::<Vec<_>>().join(" ");
    let tree = tree.replace(" :: ", "::").replace(":: ", "::").replace(" ::", "::");
    let mut out = Vec::new();
    fn split_top(t: &str) -> Vec<&str> {
        let (mut depth, mut start, mut parts) = (0, 0, Vec::new());
        for (k, c) in t.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    parts.push(&t[start..k]);
                    start = k + 1;
                }
                _ => {}
            }
        }
        parts.push(&t[start..]);
        parts.into_iter().map(str::trim).filter(|p| !p.is_empty()).collect()
    }
    fn rec(prefix: &[String], t: &str, out: &mut Vec<(Vec<String>, String)>) {
        for item in split_top(t) {
            if let Some(open) = item.find('{') {
                let head: Vec<String> = item[..open].split("::").map(str::trim).filter(|s| !s.is_empty()).map(String::from).collect();
                let inner = &item[open + 1..item.rfind('}').unwrap_or(item.len())];
                let mut p = prefix.to_vec();
                p.extend(head);
                rec(&p, inner, out);
            } else {
                let (path, alias) = match item.split_once(" as ") {
                    Some((p, a)) => (p.trim(), Some(a.trim().to_string())),
                    None => (item, None),
                };
                let mut p = prefix.to_vec();
                p.extend(path.split("::").map(str::trim).filter(|s| !s.is_empty()).map(String::from));
                let name = alias.unwrap_or_else(|| p.last().cloned().unwrap_or_default());
                out.push((p, name));
            }
        }
    }
    rec(&[], &tree, &mut out);
    out
}

/// The library's module graph, with the evidence of each edge.
struct Graph {
    modules: BTreeSet<Vec<String>>,
    /// node → node → the paths that make the edge
    edges: BTreeMap<String, BTreeMap<String, Vec<String>>>,
    nodes: BTreeSet<String>,
}

/// The node of a module path: the top-level module, or `contact::<child>` inside `contact`.
fn node_of(module: &[String]) -> Option<String> {
    match module {
        [] => None,
        [top, child, ..] if top == "contact" => Some(format!("contact::{child}")),
        [top, ..] => Some(top.clone()),
    }
}

fn build_graph() -> Graph {
    let files = library_files();
    let modules: BTreeSet<Vec<String>> = files.keys().cloned().collect();
    let mut codes = BTreeMap::new();
    let mut test_only: BTreeSet<Vec<String>> = BTreeSet::new();
    for (m, p) in &files {
        let (code, test_mods) = without_tests(&strip_comments_and_strings(&std::fs::read_to_string(p).unwrap()));
        for t in test_mods {
            let mut tm = m.clone();
            tm.push(t);
            test_only.insert(tm);
        }
        codes.insert(m.clone(), code);
    }
    let absolute = |segs: &[String], cur: &[String]| -> Option<Vec<String>> {
        let first = segs.first()?;
        match first.as_str() {
            "crate" => Some(segs[1..].to_vec()),
            "self" => Some(cur.iter().chain(&segs[1..]).cloned().collect()),
            "super" => {
                let mut base = cur.to_vec();
                let mut k = 0;
                while segs.get(k).is_some_and(|s| s == "super") {
                    base.pop();
                    k += 1;
                }
                base.extend_from_slice(&segs[k..]);
                Some(base)
            }
            _ => {
                let mut child = cur.to_vec();
                child.push(first.clone());
                modules.contains(&child).then(|| cur.iter().chain(segs).cloned().collect())
            }
        }
    };
    // pub use re-exports: module → local name → absolute path
    let mut reexports: BTreeMap<Vec<String>, BTreeMap<String, Vec<String>>> = BTreeMap::new();
    let mut uses_of: BTreeMap<Vec<String>, (Vec<(bool, String)>, String)> = BTreeMap::new();
    for (m, code) in &codes {
        let (uses, rest) = use_declarations(code);
        for (is_pub, tree) in &uses {
            if !is_pub {
                continue;
            }
            for (path, name) in expand_use_tree(tree) {
                if let Some(mut a) = absolute(&path, m) {
                    let mut name = name;
                    if name == "self" {
                        a.pop();
                        name = a.last().cloned().unwrap_or_default();
                    }
                    reexports.entry(m.clone()).or_default().insert(name, a);
                }
            }
        }
        uses_of.insert(m.clone(), (uses, rest));
    }
    // the module that defines the item a path names
    fn resolve(a: &[String], modules: &BTreeSet<Vec<String>>, reexports: &BTreeMap<Vec<String>, BTreeMap<String, Vec<String>>>, depth: usize) -> Vec<String> {
        let mut m: Vec<String> = Vec::new();
        for seg in a {
            let mut child = m.clone();
            child.push(seg.clone());
            if modules.contains(&child) {
                m = child;
                continue;
            }
            if let Some(target) = reexports.get(&m).and_then(|r| r.get(seg)) {
                if depth < 16 && target.as_slice() != a {
                    return resolve(target, modules, reexports, depth + 1);
                }
            }
            return m;
        }
        m
    }
    let mut edges: BTreeMap<String, BTreeMap<String, Vec<String>>> = BTreeMap::new();
    let mut nodes = BTreeSet::new();
    for (m, (uses, rest)) in &uses_of {
        if (1..=m.len()).any(|k| test_only.contains(&m[..k].to_vec())) {
            continue;
        }
        let Some(from) = node_of(m) else { continue };
        nodes.insert(from.clone());
        let mut paths: Vec<Vec<String>> = uses.iter().flat_map(|(_, t)| expand_use_tree(t)).map(|(p, _)| p).collect();
        // inline paths: crate::a::b, super::x, self::y
        let bytes = rest.as_bytes();
        for start in ["crate::", "super::", "self::"] {
            let mut from_idx = 0;
            while let Some(k) = rest[from_idx..].find(start) {
                let at = from_idx + k;
                from_idx = at + start.len();
                if at > 0 && (bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_' || bytes[at - 1] == b':') {
                    continue;
                }
                let end = rest[at..].find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':')).map_or(rest.len(), |e| at + e);
                paths.push(rest[at..end].trim_end_matches(':').split("::").map(String::from).collect());
            }
        }
        for p in paths {
            let Some(a) = absolute(&p, m) else { continue };
            let target = resolve(&a, &modules, &reexports, 0);
            let Some(to) = node_of(&target) else { continue };
            if to != from {
                edges.entry(from.clone()).or_default().entry(to).or_default().push(format!("src/{} names {}", m.join("/"), a.join("::")));
            }
        }
    }
    Graph { modules, edges, nodes }
}

/// The layer table of the crate docs: module → layer (0 = lowest).
fn layers() -> BTreeMap<String, usize> {
    let lib = std::fs::read_to_string(src().join("lib.rs")).unwrap();
    let mut out = BTreeMap::new();
    let mut in_table = false;
    for line in lib.lines() {
        let l = line.trim_start_matches("//!").trim();
        if l.starts_with("| layer |") {
            in_table = true;
            continue;
        }
        if !in_table || l.starts_with("|---") {
            continue;
        }
        if !l.starts_with('|') {
            if !out.is_empty() {
                break;
            }
            continue;
        }
        let cells: Vec<&str> = l.trim_matches('|').split('|').map(str::trim).collect();
        let layer: usize = cells[0].parse().unwrap_or_else(|_| panic!("src/lib.rs layer table: '{}' is not a layer number", cells[0]));
        for m in cells[1].split(',') {
            let m = m.trim().trim_matches('`').trim_matches(|c| c == '[' || c == ']').trim_matches('`');
            if !m.is_empty() {
                out.insert(m.to_string(), layer);
            }
        }
    }
    assert!(!out.is_empty(), "src/lib.rs has no layer table (a Markdown table headed `| layer | modules |`)");
    out
}

/// Strongly connected components with more than one node (Tarjan).
fn cycles(g: &Graph) -> Vec<Vec<String>> {
    struct T<'a> {
        g: &'a Graph,
        index: BTreeMap<String, usize>,
        low: BTreeMap<String, usize>,
        stack: Vec<String>,
        on: BTreeSet<String>,
        next: usize,
        out: Vec<Vec<String>>,
    }
    fn visit(t: &mut T, v: &str) {
        t.index.insert(v.into(), t.next);
        t.low.insert(v.into(), t.next);
        t.next += 1;
        t.stack.push(v.into());
        t.on.insert(v.into());
        let succ: Vec<String> = t.g.edges.get(v).map(|e| e.keys().cloned().collect()).unwrap_or_default();
        for w in succ {
            if !t.index.contains_key(&w) {
                visit(t, &w);
                let lw = t.low[&w];
                let lv = t.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if t.on.contains(&w) {
                let iw = t.index[&w];
                let lv = t.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if t.low[v] == t.index[v] {
            let mut comp = vec![];
            loop {
                let w = t.stack.pop().unwrap();
                t.on.remove(&w);
                comp.push(w.clone());
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                t.out.push(comp);
            }
        }
    }
    let mut t = T { g, index: BTreeMap::new(), low: BTreeMap::new(), stack: vec![], on: BTreeSet::new(), next: 0, out: vec![] };
    for n in &g.nodes {
        if !t.index.contains_key(n) {
            visit(&mut t, n);
        }
    }
    t.out
}

/// The registry's methods: (scene name, registry variant).
fn methods() -> Vec<(String, String)> {
    contact_sim::contact::SolverKind::ALL
        .iter()
        .map(|k| {
            let name = k.name().to_string();
            let variant = format!("{k:?}");
            (name, variant)
        })
        .collect()
}

/// The contact submodules that belong to a method: `contact::<name>` and `contact::<name>_…`.
fn method_of(node: &str) -> Option<String> {
    let child = node.strip_prefix("contact::")?;
    methods().into_iter().map(|(n, _)| n).find(|n| child == n || child.starts_with(&format!("{n}_")))
}

const SEAM: &[&str] = &["contact::method", "contact::problem", "contact::nodal", "contact::delassus"];

/// Method → method edges that are allowed, with the reason.
const METHOD_EDGES_ALLOWED: &[(&str, &str, &str)] =
    &[("vfpi", "pgs", "V-FPI solves a hand-built problem that has no primal view (no M̃, J) with PGS; the step always gives it the primal view")];

#[test]
fn the_module_graph_has_no_cycle() {
    let g = build_graph();
    assert!(g.nodes.len() > 20, "only {} modules found: the scan is broken", g.nodes.len());
    let found = cycles(&g);
    let mut msg = String::new();
    for comp in &found {
        msg.push_str(&format!("import cycle among {comp:?}:\n"));
        for a in comp {
            for (b, why) in g.edges.get(a).into_iter().flatten() {
                if comp.contains(b) {
                    msg.push_str(&format!("  {a} → {b}: {}\n", why.iter().take(3).cloned().collect::<Vec<_>>().join("; ")));
                }
            }
        }
    }
    assert!(found.is_empty(), "{msg}");
}

#[test]
fn every_module_uses_only_lower_layers() {
    let g = build_graph();
    let layer = layers();
    let layer_of = |node: &str| -> usize {
        let top = node.split("::").next().unwrap();
        *layer.get(top).unwrap_or_else(|| panic!("module `{top}` is missing from the layer table of src/lib.rs"))
    };
    let mut upward = vec![];
    for (a, targets) in &g.edges {
        for (b, why) in targets {
            if layer_of(b) > layer_of(a) {
                upward.push(format!("{a} (layer {}) → {b} (layer {}): {}", layer_of(a), layer_of(b), why[0]));
            }
        }
    }
    assert!(upward.is_empty(), "upward edges:\n{}", upward.join("\n"));
    // every top-level module is in the table, and the table names no module that is gone
    let tops: BTreeSet<String> = g.modules.iter().filter(|m| m.len() == 1).map(|m| m[0].clone()).collect();
    let listed: BTreeSet<String> = layer.keys().cloned().collect();
    let ros_only: BTreeSet<String> = ["ros".to_string()].into();
    assert_eq!(tops.union(&ros_only).cloned().collect::<BTreeSet<_>>(), listed, "modules vs the layer table of src/lib.rs");
}

#[test]
fn the_contact_seam_uses_no_method_and_methods_use_no_other_method() {
    let g = build_graph();
    let mut bad = vec![];
    for (a, targets) in &g.edges {
        for (b, why) in targets {
            if !b.starts_with("contact::") {
                continue;
            }
            let (ma, mb) = (method_of(a), method_of(b));
            if SEAM.contains(&a.as_str()) && (mb.is_some() || b == "contact::registry") {
                bad.push(format!("the seam {a} uses {b}: {}", why[0]));
            }
            if let (Some(ma), Some(mb)) = (&ma, &mb) {
                if ma != mb && !METHOD_EDGES_ALLOWED.iter().any(|(x, y, _)| x == ma && y == mb) {
                    bad.push(format!("method {ma} uses method {mb}: {}", why[0]));
                }
            }
            if ma.is_some() && b == "contact::registry" {
                bad.push(format!("method {a} uses the registry: {}", why[0]));
            }
            if !a.starts_with("contact") && mb.is_some() {
                bad.push(format!("shared module {a} uses method {b}: {}", why[0]));
            }
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    // every contact submodule is the seam, the registry or a method's
    let unknown: Vec<&String> = g.nodes.iter().filter(|n| n.starts_with("contact::") && !SEAM.contains(&n.as_str()) && *n != "contact::registry" && method_of(n).is_none()).collect();
    assert!(unknown.is_empty(), "contact submodules that are neither the seam, the registry nor a method's: {unknown:?}");
}

/// Shared code: every library module outside `contact` (and outside the method pages of
/// `docs` and the FEM, whose laws cite the papers by name), and the binaries.
fn shared_files() -> Vec<PathBuf> {
    let mut out = vec![];
    let mut stack = vec![src()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            let rel = p.strip_prefix(src()).unwrap().to_string_lossy().replace('\\', "/");
            if ["contact", "fem", "math"].contains(&rel.as_str()) || rel == "docs.rs" {
                continue;
            }
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") && !rel.ends_with("tests.rs") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn shared_code_names_no_method() {
    let methods = methods();
    let mut found = vec![];
    for f in shared_files() {
        let text = std::fs::read_to_string(&f).unwrap();
        // inline test modules may name methods. The scene name may appear nowhere else (code,
        // comments, strings); the registry variant (`Newton`) not in code, since comments say
        // "Newton–Euler"
        let (with_comments, _) = without_tests(&text);
        let (code, _) = without_tests(&strip_comments_and_strings(&text));
        for (lines, words) in [(&with_comments, 0), (&code, 1)] {
        for (n, line) in lines.lines().enumerate() {
            for (name, variant) in &methods {
                for word in [[name, variant][words]] {
                    let mut rest = line;
                    let mut offset = 0;
                    while let Some(k) = rest.find(word.as_str()) {
                        let at = offset + k;
                        let before = line[..at].chars().last();
                        let after = line[at + word.len()..].chars().next();
                        let is_word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
                        if !is_word(before) && !is_word(after) {
                            found.push(format!("{}:{}: names `{word}`: {}", f.strip_prefix(src().parent().unwrap()).unwrap().display(), n + 1, line.trim()));
                        }
                        offset = at + word.len();
                        rest = &line[offset..];
                    }
                }
            }
        }
        }
    }
    assert!(found.is_empty(), "shared code names a contact method (ask the registry instead):\n{}", found.join("\n"));
}

#[test]
fn the_scanner_sees_what_it_must() {
    // comments and strings go, code stays
    let s = strip_comments_and_strings("let a = \"crate::x::Y\"; // crate::z\n/* crate::w */ crate::v::U; 'c'; r#\"crate::r\"#");
    assert!(!s.contains("crate::x") && !s.contains("crate::z") && !s.contains("crate::w") && !s.contains("crate::r") && s.contains("crate::v::U"), "{s}");
    // test modules are skipped, test-only module files are named
    let (code, mods) = without_tests("fn a() {}\n#[cfg(test)]\nmod tests { use crate::x; }\n#[cfg(test)]\nmod more;\nfn b() {}");
    assert!(code.contains("fn a") && code.contains("fn b") && !code.contains("crate::x"), "{code}");
    assert_eq!(mods, vec!["more".to_string()]);
    // use trees expand, with aliases and self
    let paths = expand_use_tree("super::{a::{B, C as D}, e, f::self}");
    let names: Vec<String> = paths.iter().map(|(p, n)| format!("{}={n}", p.join("::"))).collect();
    assert_eq!(names, ["super::a::B=B", "super::a::C=D", "super::e=e", "super::f::self=self"]);
    // the real graph has the edges we know of, resolved through re-exports
    let g = build_graph();
    let has = |a: &str, b: &str| g.edges.get(a).is_some_and(|e| e.contains_key(b));
    assert!(has("step", "contact::method"), "step uses the seam");
    assert!(has("contact::registry", "contact::pgs"), "the registry lists pgs");
    assert!(has("contact::newton", "state"), "newton reads the state");
    assert!(!has("contact::pgs", "contact"), "a method's `super::SolveStats` resolves to where it is defined, not to the facade");
}
