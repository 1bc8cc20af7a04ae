//! The rule for every file a command writes: it is none of the command's inputs (nor inside an
//! input directory, such as a bag), no two of its outputs are the same file, and a file that
//! exists already is replaced only with `--force`. Checked before the command does any work.

use super::*;

/// `p` made absolute with its symlinks resolved as far as it exists (a file to be created
/// resolves through its directory).
fn resolved(p: &Path) -> PathBuf {
    if let Ok(c) = p.canonicalize() {
        return c;
    }
    let abs = if p.is_absolute() { p.to_path_buf() } else { std::env::current_dir().map(|d| d.join(p)).unwrap_or_else(|_| p.to_path_buf()) };
    match (abs.parent(), abs.file_name()) {
        (Some(dir), Some(name)) => resolved(dir).join(name),
        _ => abs,
    }
}

/// Checks the outputs `(option, path)` of a command against its `inputs` (files or
/// directories); see the module docs.
pub fn check(inputs: &[&Path], outputs: &[(&str, &Path)], force: bool) -> Result<()> {
    let inputs: Vec<(PathBuf, &Path)> = inputs.iter().map(|p| (resolved(p), *p)).collect();
    let mut seen: Vec<(PathBuf, &str)> = Vec::new();
    for &(option, path) in outputs {
        let out = resolved(path);
        for (input, given) in &inputs {
            if &out == input || (input.is_dir() && out.starts_with(input)) {
                bail!("{option} {}: would overwrite the input {}; write it somewhere else", path.display(), given.display());
            }
        }
        if let Some((_, other)) = seen.iter().find(|(p, _)| *p == out) {
            bail!("{option} {}: the same file as {other}; give them different paths", path.display());
        }
        if out.is_file() && !force {
            bail!("{option} {}: exists; pass --force to replace it", path.display());
        }
        seen.push((out, option));
    }
    Ok(())
}
