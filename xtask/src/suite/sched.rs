//! Scheduler entries: an elevator's name, or a variant of it with
//! tunables, `elevator:tunable=value[:tunable=value]` (`bfq:low_latency=0`,
//! `mq-deadline:fifo_batch=1`), accepted by `--schedulers` and a suite
//! file's `variants`. A variant is a scheduler of its own in the plan,
//! results and report, named by the entry as written.
//!
//! The entry travels to the guest unchanged, as plan.tsv's scheduler
//! column; qemu/guest/lib.sh `select_sched` selects `none`, then the
//! elevator (so that every tunable starts from its default), then writes
//! each tunable under `queue/iosched/`, and fails the run, saying which
//! write failed and why, when one does not take.

use anyhow::{bail, Result};

/// A scheduler entry, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The elevator's name, as the device's `queue/scheduler` offers it.
    pub elevator: String,
    /// The tunables to write after selecting it, in order.
    pub tunables: Vec<(String, String)>,
}

/// What a name (an elevator's or a tunable's) may hold: what sysfs names
/// hold, nothing the plan or the guest's parsing splits on.
fn is_name(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// Parses and checks a scheduler entry.
pub fn parse(entry: &str) -> Result<Entry> {
    let how = "write a scheduler as `elevator` or `elevator:tunable=value[:tunable=value]`, \
               e.g. `bfq:low_latency=0`";
    if entry.is_empty() {
        bail!("an empty scheduler name; {how}");
    }
    let mut parts = entry.split(':');
    let elevator = parts.next().unwrap_or_default();
    if !is_name(elevator) {
        bail!("scheduler {entry:?}: {elevator:?} is not an elevator's name; {how}");
    }
    let mut tunables: Vec<(String, String)> = Vec::new();
    for part in parts {
        let Some((name, value)) = part.split_once('=') else {
            bail!("scheduler {entry:?}: tunable {part:?} has no value; {how}");
        };
        if !is_name(name) {
            bail!("scheduler {entry:?}: {part:?} names no tunable; {how}");
        }
        if value.is_empty()
            || !value
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "._+-".contains(c))
        {
            bail!(
                "scheduler {entry:?}: tunable {name} needs a value of letters, digits and `._+-`; {how}"
            );
        }
        if tunables.iter().any(|(n, _)| n == name) {
            bail!("scheduler {entry:?}: tunable {name} is given twice");
        }
        tunables.push((name.to_string(), value.to_string()));
    }
    Ok(Entry {
        elevator: elevator.to_string(),
        tunables,
    })
}

/// Checks every entry, and that none is named twice.
pub fn check_all(entries: &[String]) -> Result<()> {
    for (i, e) in entries.iter().enumerate() {
        parse(e)?;
        if entries[..i].contains(e) {
            bail!("scheduler {e:?} is named twice");
        }
    }
    Ok(())
}

/// The elevator of an entry (the whole entry for a plain name).
pub fn elevator_of(entry: &str) -> &str {
    entry.split(':').next().unwrap_or(entry)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(entry: &str) -> String {
        format!("{:#}", parse(entry).unwrap_err())
    }

    #[test]
    fn entries_parse() {
        assert_eq!(
            parse("bfq").unwrap(),
            Entry {
                elevator: "bfq".into(),
                tunables: vec![]
            }
        );
        let e = parse("mq-deadline:fifo_batch=1:writes_starved=4").unwrap();
        assert_eq!(e.elevator, "mq-deadline");
        assert_eq!(
            e.tunables,
            [
                ("fifo_batch".to_string(), "1".to_string()),
                ("writes_starved".to_string(), "4".to_string())
            ]
        );
        assert_eq!(
            parse("bfq:low_latency=0").unwrap().tunables,
            [("low_latency".to_string(), "0".to_string())]
        );
        assert_eq!(elevator_of("bfq:low_latency=0"), "bfq");
        assert_eq!(elevator_of("rust-bfq"), "rust-bfq");
    }

    #[test]
    fn bad_entries_say_what_is_wrong() {
        assert!(err("").contains("empty scheduler name"), "{}", err(""));
        assert!(err("bfq:low_latency").contains("tunable \"low_latency\" has no value"));
        assert!(
            err("bfq:=1").contains("names no tunable"),
            "{}",
            err("bfq:=1")
        );
        assert!(err("bfq:low_latency=").contains("needs a value"));
        assert!(err("bfq:").contains("has no value"), "{}", err("bfq:"));
        assert!(err(":low_latency=0").contains("not an elevator's name"));
        assert!(err("bfq:a=1 2").contains("needs a value"));
        assert!(err("bfq:a=1=2").contains("needs a value"));
        assert!(err("bfq:a=*").contains("needs a value"));
        assert!(err("bfq\tx").contains("not an elevator's name"));
        assert!(err("bfq:slice_idle=0:slice_idle=1").contains("given twice"));
        for e in ["", "bfq:low_latency", "bfq:=1"] {
            assert!(
                err(e).contains("e.g. `bfq:low_latency=0`"),
                "{e}: {}",
                err(e)
            );
        }
    }

    #[test]
    fn lists_are_checked_whole() {
        let l = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(check_all(&l(&["none", "bfq", "bfq:low_latency=0"])).is_ok());
        assert!(check_all(&l(&["none", "bfq:low_latency"])).is_err());
        let twice = check_all(&l(&["bfq", "none", "bfq"])).unwrap_err();
        assert!(format!("{twice}").contains("named twice"));
    }

    /// lib.sh's `write_tunables` (what the guest runs after selecting the
    /// elevator) on a folder standing for `queue/iosched`.
    fn write_tunables(dir: &std::path::Path, entry: &str) -> (bool, String) {
        let lib = crate::util::repo_root().join("qemu/guest/lib.sh");
        let out = std::process::Command::new("bash")
            .arg("-c")
            .arg(r#". "$1" && write_tunables "$2" "$3""#)
            .args(["-", &lib.display().to_string()])
            .arg(dir)
            .arg(entry)
            .output()
            .expect("bash runs");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).trim().to_string(),
        )
    }

    #[test]
    fn the_guest_writes_a_variants_tunables_or_says_why_not() {
        let dir = std::env::temp_dir().join(format!("xtask-iosched-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        for t in ["fifo_batch", "writes_starved", "low_latency"] {
            std::fs::write(dir.join(t), "16\n").unwrap();
        }
        let read = |t: &str| std::fs::read_to_string(dir.join(t)).unwrap();
        assert_eq!(write_tunables(&dir, "mq-deadline"), (true, String::new()));
        assert_eq!(read("fifo_batch"), "16\n");
        let entry = "mq-deadline:fifo_batch=1:writes_starved=4";
        parse(entry).unwrap();
        assert_eq!(write_tunables(&dir, entry), (true, String::new()));
        assert_eq!(
            (read("fifo_batch"), read("writes_starved")),
            ("1\n".into(), "4\n".into())
        );
        // A tunable the elevator does not have.
        let (ok, why) = write_tunables(&dir, "bfq:slice_idle=0");
        assert!(!ok);
        assert!(
            why.starts_with("bfq has no tunable slice_idle (it has: "),
            "{why}"
        );
        // A write the kernel refuses (/dev/full: ENOSPC) fails the run,
        // after the tunables before it are written.
        std::fs::remove_file(dir.join("low_latency")).unwrap();
        std::os::unix::fs::symlink("/dev/full", dir.join("low_latency")).unwrap();
        let (ok, why) = write_tunables(&dir, "bfq:fifo_batch=2:low_latency=0");
        assert_eq!(read("fifo_batch"), "2\n");
        let _ = std::fs::remove_dir_all(&dir);
        assert!(!ok);
        assert_eq!(
            why,
            "bfq: setting tunable low_latency=0 failed: No space left on device"
        );
    }

    #[test]
    fn a_variant_travels_to_the_guest_as_the_plans_scheduler_column() {
        use crate::suite::fio::{Fio, FioCase};
        use crate::suite::kind::{plan, plan_tsv, Suite};
        let head = "name = \"x\"\ndescription = \"d\"\ndevices = [\"nullb\"]\n";
        let timing = "[full]\nrepeats = 1\nruntime_s = 1\nramp_s = 0\n\
                      [quick]\nrepeats = 1\nruntime_s = 1\nramp_s = 0\n";
        let suite = |v: &str| Suite::parse(&format!("{head}variants = [{v}]\n{timing}"));
        assert_eq!(
            suite("\"bfq:low_latency=0\"").unwrap().variants,
            ["bfq:low_latency=0"]
        );
        let bad = format!("{:#}", suite("\"bfq:low_latency\"").unwrap_err());
        assert!(
            bad.contains("variants") && bad.contains("has no value"),
            "{bad}"
        );
        let case = FioCase {
            workload: "r".into(),
            fio_args: "--rw=read".into(),
        };
        let scheds = ["none".to_string(), "bfq:low_latency=0".to_string()];
        let p = plan(&["nullb".to_string()], &[case], &scheds, 1, false);
        let devices = crate::devices::load(&crate::util::repo_root()).unwrap();
        let tsv = plan_tsv::<Fio>(&p, &devices).unwrap();
        assert_eq!(
            tsv.lines().nth(1),
            Some("0001\t/dev/nullb0\tbfq:low_latency=0\tr\t--rw=read")
        );
    }
}
