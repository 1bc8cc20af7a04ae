//! The documentation stands alone in a clone: every relative link in the repository's Markdown
//! files resolves (files, and headings for `page.md#anchor` links), every `docs/...` path named in
//! the code resolves, every test a method page names (`tests/x.rs::name`,
//! `src/a/b.rs::tests::name`) exists, and nothing points at material outside the repository (the
//! team's notes folder next to the checkout, or "the digest"). Std only, no build of anything:
//! it reads files.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

/// Files that must mention the forbidden patterns: this test (and the lock file's hashes).
const EXEMPT: &[&str] = &["tests/docs_links.rs", "Cargo.lock"];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every file under `dir`, skipping hidden directories (`.git`, `.ros`, `.cache`) and `target`.
fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else { return };
    let mut entries: Vec<_> = entries.flatten().collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let name = e.file_name().to_string_lossy().into_owned();
        let path = e.path();
        let Ok(ft) = e.file_type() else { continue };
        if ft.is_dir() {
            if !name.starts_with('.') && name != "target" {
                walk(&path, out);
            }
        } else if ft.is_file() {
            out.push(path);
        }
    }
}

fn rel(p: &Path) -> String {
    p.strip_prefix(root()).unwrap_or(p).to_string_lossy().replace('\\', "/")
}

fn files_under(sub: &str) -> Vec<PathBuf> {
    let mut v = vec![];
    let p = root().join(sub);
    if p.is_file() {
        v.push(p);
    } else {
        walk(&p, &mut v);
    }
    v
}

fn markdown_files() -> Vec<PathBuf> {
    files_under(".").into_iter().filter(|p| p.extension().is_some_and(|e| e == "md")).collect()
}

/// Markdown text with fenced code blocks blanked and inline code spans removed, line by line
/// (line numbers kept).
fn prose_lines(text: &str) -> Vec<String> {
    let mut out = vec![];
    let mut fence = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fence = !fence;
            out.push(String::new());
            continue;
        }
        if fence {
            out.push(String::new());
            continue;
        }
        // drop `code spans` (they may contain brackets and parentheses)
        let mut s = String::new();
        let mut in_code = false;
        for c in line.chars() {
            if c == '`' {
                in_code = !in_code;
            } else if !in_code {
                s.push(c);
            }
        }
        out.push(s);
    }
    out
}

/// GitHub's heading anchors: lower case; letters, digits, `-` and `_` kept; spaces become `-`;
/// everything else dropped. Repeated headings get `-1`, `-2`, ….
fn anchors(text: &str) -> BTreeSet<String> {
    let mut set = BTreeSet::new();
    let mut fence = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fence = !fence;
            continue;
        }
        if fence {
            continue;
        }
        let t = line.trim_start();
        let hashes = t.chars().take_while(|&c| c == '#').count();
        if !(1..=6).contains(&hashes) || !t[hashes..].starts_with(' ') {
            continue;
        }
        let mut slug = String::new();
        for c in t[hashes..].trim().chars() {
            if c.is_alphanumeric() || c == '-' || c == '_' {
                slug.extend(c.to_lowercase());
            } else if c == ' ' {
                slug.push('-');
            }
        }
        let mut candidate = slug.clone();
        let mut k = 0;
        while set.contains(&candidate) {
            k += 1;
            candidate = format!("{slug}-{k}");
        }
        set.insert(candidate);
    }
    set
}

/// `(line, target)` of the inline links `[text](target)` and reference definitions
/// `[label]: target` of a Markdown file, outside code.
fn links(text: &str) -> Vec<(usize, String)> {
    let mut out = vec![];
    for (i, line) in prose_lines(text).iter().enumerate() {
        let t = line.trim_start();
        if let Some(end) = t.strip_prefix('[').and_then(|u| u.find(']')).map(|e| e + 1) {
            if t[end + 1..].starts_with(':') {
                let target = t[end + 2..].split_whitespace().next().unwrap_or("");
                if !target.is_empty() {
                    out.push((i + 1, target.trim_matches(|c| c == '<' || c == '>').to_string()));
                }
                continue;
            }
        }
        let mut rest = line.as_str();
        while let Some(k) = rest.find("](") {
            let after = &rest[k + 2..];
            let end = after.find([')', ' ']).unwrap_or(after.len());
            out.push((i + 1, after[..end].trim_matches(|c| c == '<' || c == '>').to_string()));
            rest = &after[end..];
        }
    }
    out
}

fn is_external(target: &str) -> bool {
    let t = target.to_ascii_lowercase();
    t.starts_with("http://") || t.starts_with("https://") || t.starts_with("mailto:") || t.starts_with("ftp://")
}

#[test]
fn relative_markdown_links_resolve() {
    let mut bad = vec![];
    let mut checked = 0;
    for md in markdown_files() {
        let text = fs::read_to_string(&md).unwrap();
        for (line, target) in links(&text) {
            if target.is_empty() || is_external(&target) {
                continue;
            }
            checked += 1;
            let (path, anchor) = match target.split_once('#') {
                Some((p, a)) => (p, Some(a)),
                None => (target.as_str(), None),
            };
            let file = if path.is_empty() { md.clone() } else { md.parent().unwrap().join(path) };
            if !file.exists() {
                bad.push(format!("{}:{line}: link target `{target}` does not exist", rel(&md)));
                continue;
            }
            if let (Some(a), true) = (anchor, file.extension().is_some_and(|e| e == "md")) {
                let heads = anchors(&fs::read_to_string(&file).unwrap());
                if !heads.contains(a) {
                    bad.push(format!("{}:{line}: `{target}`: no heading with anchor `#{a}` in {}", rel(&md), rel(&file)));
                }
            }
        }
    }
    assert!(checked > 20, "only {checked} relative links found: is the scanner broken?");
    assert!(bad.is_empty(), "{} broken relative link(s):\n{}", bad.len(), bad.join("\n"));
}

/// `docs/...` paths in a line of code or configuration: starting at a word boundary (not after a
/// letter, digit, `_`, `.`, `/` or `-`, so URLs and `../docs` are not taken), up to the first
/// character that cannot be in a path, without trailing punctuation or `#anchor`.
fn docs_paths(line: &str) -> Vec<String> {
    let mut out = vec![];
    let b = line.as_bytes();
    let mut from = 0;
    while let Some(k) = line[from..].find("docs/") {
        let i = from + k;
        from = i + 5;
        if i > 0 && (b[i - 1].is_ascii_alphanumeric() || b"_./-".contains(&b[i - 1])) {
            continue;
        }
        let end = line[i..].find(|c: char| !(c.is_ascii_alphanumeric() || "_./-#".contains(c))).map_or(line.len(), |e| i + e);
        let mut p = line[i..end].split('#').next().unwrap().to_string();
        while p.ends_with(['.', ',', ':', ';']) {
            p.pop();
        }
        if p.len() > "docs/".len() {
            out.push(p);
        }
    }
    out
}

#[test]
fn docs_paths_named_in_the_code_resolve() {
    let mut bad = vec![];
    for sub in ["src", "config", "scripts", "tests", "launch", "examples", "benches", "build.rs"] {
        for f in files_under(sub) {
            let Ok(text) = fs::read_to_string(&f) else { continue };
            for (i, line) in text.lines().enumerate() {
                for p in docs_paths(line) {
                    if !root().join(&p).exists() {
                        bad.push(format!("{}:{}: `{p}` does not exist", rel(&f), i + 1));
                    }
                }
            }
        }
    }
    assert!(bad.is_empty(), "{} docs/ path(s) that do not resolve:\n{}", bad.len(), bad.join("\n"));
}

#[test]
fn tests_named_in_the_docs_exist() {
    let mut bad = vec![];
    let mut checked = 0;
    for md in files_under("docs").into_iter().filter(|p| p.extension().is_some_and(|e| e == "md")) {
        let text = fs::read_to_string(&md).unwrap();
        for (i, line) in text.lines().enumerate() {
            let mut rest = line;
            while let Some(k) = rest.find(".rs::") {
                // the path: back to the start of the token
                let start = rest[..k].rfind(|c: char| !(c.is_ascii_alphanumeric() || "_./-".contains(c))).map_or(0, |s| s + 1);
                let file = &rest[start..k + 3];
                let after = &rest[k + 5..];
                let end = after.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':')).unwrap_or(after.len());
                let item = after[..end].trim_end_matches(':');
                let name = item.rsplit("::").next().unwrap_or("");
                rest = &after[end..];
                if !(file.starts_with("tests/") || file.starts_with("src/")) || name.is_empty() {
                    continue;
                }
                checked += 1;
                match fs::read_to_string(root().join(file)) {
                    Err(_) => bad.push(format!("{}:{}: `{file}` does not exist", rel(&md), i + 1)),
                    Ok(src) if !src.contains(&format!("fn {name}(")) => {
                        bad.push(format!("{}:{}: no `fn {name}` in {file}", rel(&md), i + 1))
                    }
                    Ok(_) => {}
                }
            }
        }
    }
    assert!(checked > 50, "only {checked} test references found: is the scanner broken?");
    assert!(bad.is_empty(), "{} test reference(s) in docs/ that do not exist:\n{}", bad.len(), bad.join("\n"));
}

/// Whether `text` contains `word` as a whole word (case-insensitive; `_` counts as a word
/// character, so identifiers that merely contain it are not taken).
fn has_word(text: &str, word: &str) -> bool {
    let lower = text.to_lowercase();
    let b = lower.as_bytes();
    let w = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    lower.match_indices(word).any(|(i, _)| (i == 0 || !w(b[i - 1])) && b.get(i + word.len()).is_none_or(|&c| !w(c)))
}

#[test]
fn nothing_refers_to_material_outside_the_repository() {
    let mut bad = vec![];
    for f in files_under(".") {
        let r = rel(&f);
        if EXEMPT.contains(&r.as_str()) {
            continue;
        }
        let Ok(text) = fs::read_to_string(&f) else { continue };
        for (i, line) in text.lines().enumerate() {
            let outside = ["../shared", "shared/specs", "/work/shared"].iter().find(|p| line.contains(*p));
            if let Some(p) = outside {
                bad.push(format!("{r}:{}: refers to `{p}`: {}", i + 1, line.trim()));
            } else if has_word(line, "digest") {
                bad.push(format!("{r}:{}: refers to \"the digest\": {}", i + 1, line.trim()));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "{} reference(s) to material a clone does not have (write it into docs/ or cite the paper):\n{}",
        bad.len(),
        bad.join("\n")
    );
}

#[test]
fn the_scanners_find_what_they_should() {
    assert_eq!(links("see [a](b.md#c) and [x](<d e>) `[no](code.md)`\n[ref]: f.md"), vec![(1, "b.md#c".into()), (1, "d".into()), (2, "f.md".into())]);
    assert!(anchors("# The virtual-node gain `k_v`\n## Deformable–deformable contact\n## A\n## A").is_superset(&BTreeSet::from([
        "the-virtual-node-gain-k_v".to_string(),
        "deformabledeformable-contact".to_string(),
        "a".to_string(),
        "a-1".to_string(),
    ])));
    assert_eq!(docs_paths("see `docs/vfpi.md`, https://x.org/docs/y and ../docs/z.md or docs/fem.md#welds."), vec!["docs/vfpi.md", "docs/fem.md"]);
    assert!(has_word("(the Digest §2)", "digest") && !has_word("matches_digest_values", "digest") && !has_word("digests", "digest"));
}
