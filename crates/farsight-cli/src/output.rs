//! Output paths: checked before any long work, named in every I/O error (once), and
//! a temporary folder for bulk data the user did not ask to keep.

use std::path::{Path, PathBuf};

/// Writes one line to standard error. Unlike `eprintln!`, a closed or failing
/// stderr is ignored rather than a panic: the exit code still says how the
/// command ended.
pub fn say(line: std::fmt::Arguments) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

/// `path: what went wrong`, the OS error said once in words.
pub fn io_error(path: &Path, e: &std::io::Error) -> String {
    format!("{}: {}", path.display(), plain_io(e))
}

/// The OS error's words without Rust's "(os error N)" suffix.
fn plain_io(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error ") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// The folder a file at `path` goes into (`.` for a bare name).
fn parent_of(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Checks, before the work, that a file can be written at `path`: its folder exists,
/// `path` is not a folder, and the folder (or an existing file) is writable. Leaves
/// nothing behind.
pub fn check_output_file(path: &Path, what: &str) -> Result<(), String> {
    let parent = parent_of(path);
    if !parent.is_dir() {
        return Err(format!(
            "{}: cannot write the {what} there: folder {} does not exist",
            path.display(),
            parent.display()
        ));
    }
    if path.is_dir() {
        return Err(format!(
            "{}: is a folder; the {what} needs a file name",
            path.display()
        ));
    }
    if path.exists() {
        std::fs::OpenOptions::new()
            .append(true)
            .open(path)
            .map_err(|e| {
                format!(
                    "{}: cannot write the {what}: {}",
                    path.display(),
                    plain_io(&e)
                )
            })?;
    } else {
        probe_folder(parent, path, what)?;
    }
    Ok(())
}

/// Creates and removes a file in `folder` to learn whether it is writable; the
/// error names `path`, the output the user asked for.
fn probe_folder(folder: &Path, path: &Path, what: &str) -> Result<(), String> {
    let probe = folder.join(format!(".farsight-write-check-{}", std::process::id()));
    std::fs::File::create(&probe).map_err(|e| {
        format!(
            "{}: cannot write the {what}: {}",
            path.display(),
            plain_io(&e)
        )
    })?;
    let _ = std::fs::remove_file(&probe);
    Ok(())
}

/// Checks, before the work, that `path` is or can become a writable folder: an
/// existing folder, or a missing one whose parent exists. Creates nothing.
pub fn check_output_dir(path: &Path, what: &str) -> Result<(), String> {
    if path.exists() && !path.is_dir() {
        return Err(format!(
            "{}: is a file, not a folder (wanted for the {what})",
            path.display()
        ));
    }
    if path.is_dir() {
        return probe_folder(path, path, what);
    }
    let parent = parent_of(path);
    if !parent.is_dir() {
        return Err(format!(
            "{}: cannot create the {what}: folder {} does not exist",
            path.display(),
            parent.display()
        ));
    }
    Ok(())
}

/// Creates the folder `path` (and its missing parents); the error names it.
pub fn create_dir(path: &Path) -> Result<(), String> {
    std::fs::create_dir_all(path).map_err(|e| io_error(path, &e))
}

/// A folder under the system's temporary directory, removed with everything in it
/// when dropped (at exit, also after an error).
pub struct TempDir {
    path: PathBuf,
}

impl TempDir {
    pub fn new(prefix: &str) -> Result<Self, String> {
        let base = std::env::temp_dir();
        let stamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let path = base.join(format!("{prefix}-{}-{stamp:08x}", std::process::id()));
        std::fs::create_dir_all(&path).map_err(|e| io_error(&path, &e))?;
        Ok(Self { path })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// Files and bytes under `path` (recursively).
pub fn tree_size(path: &Path) -> (u64, u64) {
    let (mut files, mut bytes) = (0, 0);
    if let Ok(rd) = std::fs::read_dir(path) {
        for e in rd.flatten() {
            match e.file_type() {
                Ok(t) if t.is_dir() => {
                    let (f, b) = tree_size(&e.path());
                    files += f;
                    bytes += b;
                }
                Ok(_) => {
                    files += 1;
                    bytes += e.metadata().map_or(0, |m| m.len());
                }
                Err(_) => {}
            }
        }
    }
    (files, bytes)
}

/// `12.3 MiB` style.
pub fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1u64 << 20) as f64)
}

/// Parsers for numeric options: finite, and positive or non-negative.
pub fn positive_f32(s: &str) -> Result<f32, String> {
    let v: f32 = s.parse().map_err(|_| format!("'{s}' is not a number"))?;
    if !v.is_finite() || v <= 0.0 {
        return Err(format!("must be a finite number above 0, found {s}"));
    }
    Ok(v)
}

pub fn positive_f64(s: &str) -> Result<f64, String> {
    let v: f64 = s.parse().map_err(|_| format!("'{s}' is not a number"))?;
    if !v.is_finite() || v <= 0.0 {
        return Err(format!("must be a finite number above 0, found {s}"));
    }
    Ok(v)
}

pub fn non_negative_f64(s: &str) -> Result<f64, String> {
    let v: f64 = s.parse().map_err(|_| format!("'{s}' is not a number"))?;
    if !v.is_finite() || v < 0.0 {
        return Err(format!("must be a finite number of 0 or more, found {s}"));
    }
    Ok(v)
}

/// Resident memory of this process now (Linux `/proc/self/status`), in bytes.
pub fn resident_bytes() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// The panic payload that ends a command whose stdout reader went away
/// (`farsight ... | head -1`): `main` catches it and exits with success, quietly,
/// after the command's destructors ran (a temporary world folder is removed).
pub struct StdoutClosed;

/// Writes `args` and a newline to stdout: what the crate's `println!` does. A closed
/// pipe unwinds with [`StdoutClosed`] (no panic message: `resume_unwind` skips the
/// panic hook); any other write error panics as `std::println!` does.
pub fn print_line(args: std::fmt::Arguments) {
    write_stdout(args, true);
}

/// Writes `args` to stdout without a newline: what the crate's `print!` does.
pub fn print_text(args: std::fmt::Arguments) {
    write_stdout(args, false);
}

fn write_stdout(args: std::fmt::Arguments, newline: bool) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let written = out.write_fmt(args).and_then(|()| {
        if newline {
            out.write_all(b"\n")
        } else {
            Ok(())
        }
    });
    match written {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
            std::panic::resume_unwind(Box::new(StdoutClosed))
        }
        Err(e) => panic!("failed printing to stdout: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_must_be_finite_and_positive() {
        assert_eq!(positive_f32("2.5"), Ok(2.5));
        for bad in ["nan", "NaN", "inf", "-5", "0", "x"] {
            assert!(positive_f32(bad).is_err(), "{bad}");
        }
        assert_eq!(non_negative_f64("0"), Ok(0.0));
        assert!(non_negative_f64("-1").is_err());
    }

    #[test]
    fn io_errors_say_the_os_words_once() {
        let e = std::io::Error::from_raw_os_error(17);
        let s = io_error(Path::new("a/b"), &e);
        assert!(s.starts_with("a/b: "), "{s}");
        assert!(!s.contains("os error"), "{s}");
    }
}
