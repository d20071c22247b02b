//! The one way a host test skips on purpose, so that every skip can be
//! listed by name with its reason and one not allowed caught (the file
//! `IRONLIFT_SKIP_LOG` names). Only for a condition of the host that is
//! no missing tool (not root, a host kernel without a module): a missing
//! tool fails the test, naming the package that brings it.
//!
//! The binary's unit tests use it as `crate::skip`; an integration test
//! includes this file with `#[path = "../src/skip.rs"] mod skip;`.

use std::fs::OpenOptions;
use std::io::Write as _;
use std::path::Path;

/// Test `name` (the test function's name) did not run, for `reason`:
/// `SKIPPED <name>: <reason>` on stderr and, where the environment names
/// a file in `IRONLIFT_SKIP_LOG`, the line `<name>\t<reason>` appended to
/// it. A log that cannot be written fails the test: a skip nobody lists
/// is what this protocol exists to prevent. The caller returns after it.
pub fn skip(name: &str, reason: &str) {
    let (name, reason) = (clean(name), clean(reason));
    eprintln!("SKIPPED {name}: {reason}");
    if let Some(log) = std::env::var_os("IRONLIFT_SKIP_LOG") {
        append(Path::new(&log), &name, &reason).unwrap_or_else(|e| {
            panic!(
                "{name} skips ({reason}) but cannot record it in IRONLIFT_SKIP_LOG {}: {e}",
                Path::new(&log).display()
            )
        });
    }
}

/// One line a skip, two fields: no tab or line break inside either.
fn clean(s: &str) -> String {
    s.replace(['\t', '\n', '\r'], " ")
}

/// Appends `name\treason\n` to `log`, made if missing, in one write to a
/// file opened for appending, so that tests skipping at once in parallel
/// do not mix their lines.
fn append(log: &Path, name: &str, reason: &str) -> std::io::Result<()> {
    OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)?
        .write_all(format!("{name}\t{reason}\n").as_bytes())
}

#[cfg(test)]
mod tests {
    use super::{append, clean};
    use std::fs;

    #[test]
    fn skips_are_appended_one_line_each() {
        let dir = std::env::temp_dir().join(format!("ironlift-skip-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let log = dir.join("skips.tsv");
        append(&log, "a_test", "not root").unwrap();
        append(&log, &clean("b_test"), &clean("two\tfields\nat most")).unwrap();
        assert_eq!(
            fs::read_to_string(&log).unwrap(),
            "a_test\tnot root\nb_test\ttwo fields at most\n"
        );
        assert!(append(&dir.join("no/such/dir"), "c_test", "r").is_err());
        let _ = fs::remove_dir_all(&dir);
    }
}
