//! kcidb.json: a results file as KernelCI's KCIDB report data (the
//! `kcidb-io` schema, version [`MAJOR`].[`MINOR`]), written beside
//! results.json by `qemu-bench`, `host-bench` and `report`.
//!
//! One checkout (the kernel source, ironlift's patch series and this
//! repository's commit), one build (the kernel config the run booted),
//! and a test per measurement of each run, its figure as the test's
//! `number`: path `ironlift.<suite>.<device>.<scheduler>.<case>.<metric>`,
//! status `DONE`. A run that failed is one test at
//! `ironlift.<suite>.<device>.<scheduler>.<case>`, status `ERROR`, with
//! why. Every id is `ironlift:<hash>` of what identifies the object, so
//! the same results give the same ids. docs/guides/benchmarks.md says how
//! a lab submits the file.

use crate::kernel::{Additions, Kernel};
use crate::results::{Header, Provenance, RunRecord};
use crate::util::{self, Hasher};
use anyhow::Result;
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};
use std::fs;
use std::path::Path;
use std::process::Command;

/// The KCIDB schema version written.
pub const MAJOR: u32 = 5;
pub const MINOR: u32 = 3;
/// The origin of every object, and its ids' prefix.
pub const ORIGIN: &str = "ironlift";

/// One figure of a run: its name in the test path, value and unit.
#[derive(Debug, Clone, PartialEq)]
pub struct Metric {
    pub name: &'static str,
    pub value: f64,
    pub unit: &'static str,
    /// KCIDB's display prefix (`metric`: the value is in base units).
    pub metric_prefix: bool,
}

impl Metric {
    /// A figure in `unit`, shown as it is.
    pub fn plain(name: &'static str, value: f64, unit: &'static str) -> Self {
        Metric {
            name,
            value,
            unit,
            metric_prefix: false,
        }
    }

    /// A figure in base units (`s`, `B/s`), shown with a metric prefix.
    pub fn scaled(name: &'static str, value: f64, unit: &'static str) -> Self {
        Metric {
            name,
            value,
            unit,
            metric_prefix: true,
        }
    }
}

/// One planned run, as a suite's kind gives it: where it ran and what it
/// measured, or why it failed.
#[derive(Debug, Clone)]
pub struct Run {
    pub id: String,
    pub repeat: u32,
    pub device: String,
    pub scheduler: String,
    /// The case: a fio workload, a start-up's application.
    pub case: String,
    pub outcome: Result<Vec<Metric>, String>,
}

/// The runs of a results file: `case` names a run's case, `metrics`
/// gives the figures a run measured (the case says which, where a kind's
/// cases measure different things).
pub fn runs_of<C, M>(
    records: &[RunRecord<C, M>],
    case: impl Fn(&C) -> String,
    metrics: impl Fn(&C, &M) -> Vec<Metric>,
) -> Vec<Run> {
    records
        .iter()
        .map(|r| Run {
            id: r.run.id.clone(),
            repeat: r.run.repeat,
            device: r.run.device.clone(),
            scheduler: r.run.scheduler.clone(),
            case: case(&r.run.case),
            outcome: match (&r.measured, &r.error) {
                (Some(m), _) if r.ok => Ok(metrics(&r.run.case, m)),
                (_, Some(e)) => Err(e.clone()),
                _ => Err("no result".into()),
            },
        })
        .collect()
}

/// The provenance of a kernel `kernel::ensure` built.
pub fn provenance_of(kernel: &Kernel) -> Provenance {
    let config = fs::read_to_string(kernel.build.join(".config")).unwrap_or_default();
    let compiler = ["CONFIG_CC_VERSION_TEXT", "CONFIG_RUSTC_VERSION_TEXT"]
        .iter()
        .filter_map(|k| config_string(&config, k))
        .collect::<Vec<_>>()
        .join(", ");
    // A --kernel-src tree carries the additions itself: nothing applied.
    let patchset_sha256 = if kernel.source.starts_with("debian:") {
        Additions::load(&util::repo_root(), kernel.kernel)
            .ok()
            .map(|a| patchset_hash(&a.patches))
            .unwrap_or_default()
    } else {
        String::new()
    };
    Provenance {
        kernel_source: kernel.source.clone(),
        patchset_sha256,
        ironlift_commit: ironlift_commit(),
        kernel_config: kernel.flavor.name().into(),
        arch: std::env::consts::ARCH.into(),
        compiler: if compiler.is_empty() {
            "unknown".into()
        } else {
            compiler
        },
    }
}

/// The provenance of the host's running kernel (`host-bench`).
pub fn host_provenance() -> Provenance {
    let release = fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let version = fs::read_to_string("/proc/version").unwrap_or_default();
    Provenance {
        kernel_source: format!("host:{}", release.trim()),
        patchset_sha256: String::new(),
        ironlift_commit: ironlift_commit(),
        kernel_config: "host".into(),
        arch: std::env::consts::ARCH.into(),
        compiler: compiler_of_proc_version(&version).unwrap_or_else(|| "unknown".into()),
    }
}

/// `KEY="value"` of a .config.
fn config_string(config: &str, key: &str) -> Option<String> {
    config.lines().find_map(|l| {
        let v = l.strip_prefix(key)?.strip_prefix('=')?;
        Some(v.trim_matches('"').to_string()).filter(|v| !v.is_empty())
    })
}

/// The compiler in /proc/version: `Linux version R (builder) (COMPILER, LINKER) #...`.
fn compiler_of_proc_version(v: &str) -> Option<String> {
    let open = v.find(") (")? + 3;
    let rest = &v[open..];
    let mut depth = 1;
    for (i, c) in rest.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(rest[..i].to_string());
                }
            }
            _ => {}
        }
    }
    None
}

/// KCIDB's patchset hash: SHA-256 over each patch's SHA-256, hex and
/// newline-terminated, in order (`sha256sum *.patch | cut -c-64 |
/// sha256sum`); empty for no patches.
pub fn patchset_hash(patches: &[std::path::PathBuf]) -> String {
    if patches.is_empty() {
        return String::new();
    }
    let mut outer = Sha256::new();
    for p in patches {
        let bytes = fs::read(p).unwrap_or_default();
        outer.update(format!("{}\n", hex(&Sha256::digest(&bytes))));
    }
    hex(&outer.finalize())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// This repository's commit, `-dirty` when the work tree differs.
fn ironlift_commit() -> String {
    util::run(Command::new("git").arg("-C").arg(util::repo_root()).args([
        "describe",
        "--always",
        "--dirty",
        "--abbrev=40",
    ]))
    .map(|s| s.trim().to_string())
    .unwrap_or_else(|_| "unknown".into())
}

/// `ironlift:<hash of parts>`.
fn id(parts: &[(&str, &str)]) -> String {
    let mut h = Hasher::new();
    for (label, v) in parts {
        h.add(label, v.as_bytes());
    }
    format!("{ORIGIN}:{}", &h.hex()[..32])
}

/// A test path component: what KCIDB allows (`[a-zA-Z0-9_-]`), any other
/// character as `_`.
fn component(s: &str) -> String {
    let c: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if c.is_empty() {
        "_".into()
    } else {
        c
    }
}

/// A time KCIDB takes (RFC 3339, as `date -Iseconds` writes), if `t` is one.
fn time(t: &str) -> Option<Value> {
    let ok = t.len() >= 20 && t.as_bytes()[10] == b'T';
    ok.then(|| Value::String(t.to_string()))
}

/// Adds `key: value` to an object unless `value` is `None`.
fn put(o: &mut Map<String, Value>, key: &str, value: Option<Value>) {
    if let Some(v) = value {
        o.insert(key.into(), v);
    }
}

/// The checkout and the build of the kernel `h` ran on.
fn checkout_and_build(h: &Header) -> (Value, Value) {
    let p = h.provenance.clone().unwrap_or(Provenance {
        kernel_source: "unknown".into(),
        patchset_sha256: String::new(),
        ironlift_commit: "unknown".into(),
        kernel_config: "unknown".into(),
        arch: std::env::consts::ARCH.into(),
        compiler: "unknown".into(),
    });
    let checkout_id = id(&[
        ("source", &p.kernel_source),
        ("patchset", &p.patchset_sha256),
        ("ironlift", &p.ironlift_commit),
        (
            "key",
            if h.provenance.is_some() {
                ""
            } else {
                &h.kernel_key
            },
        ),
    ]);
    let tree = match p.kernel_source.split_once(':') {
        Some(("debian", v)) => format!("debian-{}", v.split('=').next().unwrap_or(v)),
        Some((kind, _)) => kind.to_string(),
        None => p.kernel_source.clone(),
    };
    let mut checkout = Map::new();
    checkout.insert("id".into(), json!(checkout_id));
    checkout.insert("origin".into(), json!(ORIGIN));
    checkout.insert("tree_name".into(), json!(tree));
    checkout.insert("patchset_hash".into(), json!(p.patchset_sha256));
    checkout.insert(
        "comment".into(),
        json!(format!(
            "{} with ironlift {} (kernel {})",
            p.kernel_source, p.ironlift_commit, h.kernel_release
        )),
    );
    checkout.insert("valid".into(), json!(true));
    checkout.insert(
        "misc".into(),
        json!({
            "kernel_source": p.kernel_source,
            "ironlift_commit": p.ironlift_commit,
            "kernel_release": h.kernel_release,
        }),
    );
    let build_id = id(&[
        ("checkout", &checkout_id),
        ("config", &p.kernel_config),
        ("key", &h.kernel_key),
    ]);
    let build = json!({
        "id": build_id,
        "checkout_id": checkout_id,
        "origin": ORIGIN,
        "architecture": component(&p.arch).to_lowercase(),
        "compiler": p.compiler,
        "config_name": p.kernel_config,
        "status": "PASS",
        "misc": {"kernel_key": h.kernel_key, "kernel_release": h.kernel_release},
    });
    (Value::Object(checkout), build)
}

/// Where the tests ran.
fn environment(h: &Header) -> Value {
    let comment = if h.accel == "host" {
        format!("the host's own kernel and disk: {}", h.host)
    } else {
        format!(
            "QEMU guest ({}, {} vCPUs, {} MiB) on {}",
            h.accel, h.guest_cpus, h.guest_memory_mb, h.host
        )
    };
    json!({
        "comment": comment,
        "misc": {
            "accel": h.accel,
            "cpus": h.guest_cpus,
            "memory_mb": h.guest_memory_mb,
            "clocksource": h.guest_clocksource,
            "host": h.host,
        },
    })
}

// Long: one KCIDB test object per figure, its fields in the schema's
// order; splitting it would scatter one object's fields.
/// The KCIDB document of a results file's header and runs.
pub fn document(h: &Header, runs: &[Run]) -> Value {
    let (checkout, build) = checkout_and_build(h);
    let build_id = build["id"].as_str().unwrap_or_default().to_string();
    let env = environment(h);
    let mut tests = Vec::new();
    for r in runs {
        let base = format!(
            "{ORIGIN}.{}.{}.{}.{}",
            component(&h.suite),
            component(&r.device),
            component(&r.scheduler),
            component(&r.case)
        );
        let test = |path: &str, status: &str| {
            let mut t = Map::new();
            t.insert(
                "id".into(),
                json!(id(&[
                    ("build", &build_id),
                    ("started", &h.started),
                    ("run", &r.id),
                    ("path", path),
                ])),
            );
            t.insert("build_id".into(), json!(build_id));
            t.insert("origin".into(), json!(ORIGIN));
            t.insert("environment".into(), env.clone());
            t.insert("path".into(), json!(path));
            t.insert("status".into(), json!(status));
            put(&mut t, "start_time", time(&h.started));
            t.insert(
                "misc".into(),
                json!({"run_id": r.id, "repeat": r.repeat, "quick": h.quick}),
            );
            t
        };
        match &r.outcome {
            Ok(metrics) => {
                for m in metrics.iter().filter(|m| m.value.is_finite()) {
                    let mut t = test(&format!("{base}.{}", m.name), "DONE");
                    let mut number = json!({"value": m.value, "unit": m.unit});
                    if m.metric_prefix {
                        number["prefix"] = json!("metric");
                    }
                    t.insert("number".into(), number);
                    tests.push(Value::Object(t));
                }
            }
            Err(why) => {
                let mut t = test(&base, "ERROR");
                let excerpt: String = why.chars().take(16000).collect();
                t.insert("log_excerpt".into(), json!(excerpt));
                tests.push(Value::Object(t));
            }
        }
    }
    json!({
        "version": {"major": MAJOR, "minor": MINOR},
        "checkouts": [checkout],
        "builds": [build],
        "tests": tests,
    })
}

/// Writes `dir/kcidb.json`.
pub fn write(dir: &Path, h: &Header, runs: &[Run]) -> Result<()> {
    fs::write(
        dir.join("kcidb.json"),
        serde_json::to_string_pretty(&document(h, runs))?,
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    //! kcidb.json of the canned results files (tests/reports), checked
    //! here for what ironlift means by it, and by KernelCI's own validator
    //! (the `kcidb-io` package from PyPI) for the schema.

    use super::*;
    use crate::suite::fio::Fio;
    use crate::suite::kind::Kind;
    use crate::suite::startup::Startup;
    use std::collections::BTreeSet;
    use std::path::PathBuf;

    fn canned<K: Kind>(name: &str) -> K::Results {
        let p = util::repo_root()
            .join("tests/reports")
            .join(name)
            .join("results.json");
        serde_json::from_str(&fs::read_to_string(p).unwrap()).unwrap()
    }

    fn doc_of<K: Kind>(name: &str) -> Value {
        let res = canned::<K>(name);
        document(K::header(&res), &K::kcidb_runs(&res))
    }

    fn provenance() -> Provenance {
        Provenance {
            kernel_source: "debian:linux-source-6.12=6.12.57-1~bpo12+1".into(),
            patchset_sha256: "ab".repeat(32),
            ironlift_commit: "7dd16038759fe61cee78b05ebf8cd0669b97bf6c".into(),
            kernel_config: "base".into(),
            arch: "x86_64".into(),
            compiler: "Debian clang version 16.0.6, rustc 1.83.0".into(),
        }
    }

    /// The fio results with a provenance, as a run writes them.
    fn fio_doc() -> (Value, <Fio as Kind>::Results) {
        let mut res = canned::<Fio>("fio-basic");
        res.header.provenance = Some(provenance());
        (document(&res.header, &Fio::kcidb_runs(&res)), res)
    }

    #[test]
    fn every_figure_is_a_test_and_every_failed_run_an_error() {
        let (doc, res) = fio_doc();
        let tests = doc["tests"].as_array().unwrap();
        let failed = res.runs.iter().filter(|r| !r.ok).count();
        assert_eq!(failed, 4);
        let errors: Vec<&Value> = tests.iter().filter(|t| t["status"] == "ERROR").collect();
        assert_eq!(errors.len(), failed);
        for e in &errors {
            assert!(e.get("number").is_none());
            assert!(!e["log_excerpt"].as_str().unwrap().is_empty());
        }
        // The first run's IOPS, as measured, at its path.
        let r = res.runs.iter().find(|r| r.ok).unwrap();
        let path = format!(
            "ironlift.fio-basic.{}.{}.{}.iops",
            r.run.device, r.run.scheduler, r.run.case.workload
        );
        let t = tests
            .iter()
            .find(|t| t["path"] == path.as_str() && t["misc"]["run_id"] == r.run.id.as_str())
            .unwrap();
        assert_eq!(t["status"], "DONE");
        assert_eq!(t["number"]["value"], r.measured.as_ref().unwrap().iops);
        assert_eq!(t["number"]["unit"], "IOPS");
        let lat = format!("{}lat_p99", &path[..path.len() - 4]);
        let t = tests
            .iter()
            .find(|t| t["path"] == lat.as_str() && t["misc"]["run_id"] == r.run.id.as_str())
            .unwrap();
        let want = r.measured.as_ref().unwrap().lat_p99_us * 1e-6;
        assert!((t["number"]["value"].as_f64().unwrap() - want).abs() < 1e-15);
        assert_eq!(t["number"]["prefix"], "metric");
        // Ids are unique, and stable: the same results, the same ids.
        let ids: BTreeSet<&str> = tests.iter().map(|t| t["id"].as_str().unwrap()).collect();
        assert_eq!(ids.len(), tests.len());
        assert_eq!(fio_doc().0, doc);
        for t in tests {
            assert_eq!(t["build_id"], doc["builds"][0]["id"]);
            assert!(t["id"].as_str().unwrap().starts_with("ironlift:"));
        }
        assert_eq!(doc["builds"][0]["checkout_id"], doc["checkouts"][0]["id"]);
    }

    #[test]
    fn the_checkout_and_build_say_what_was_built() {
        let (doc, _) = fio_doc();
        let c = &doc["checkouts"][0];
        assert_eq!(c["tree_name"], "debian-linux-source-6.12");
        assert_eq!(c["patchset_hash"], "ab".repeat(32));
        assert_eq!(
            c["misc"]["ironlift_commit"],
            "7dd16038759fe61cee78b05ebf8cd0669b97bf6c"
        );
        let b = &doc["builds"][0];
        assert_eq!(b["config_name"], "base");
        assert_eq!(b["architecture"], "x86_64");
        assert_eq!(b["status"], "PASS");
        // Another commit of this repository is another checkout.
        let mut res = canned::<Fio>("fio-basic");
        let mut p = provenance();
        p.ironlift_commit = "0".repeat(40);
        res.header.provenance = Some(p);
        let other = document(&res.header, &Fio::kcidb_runs(&res));
        assert_ne!(other["checkouts"][0]["id"], c["id"]);
    }

    #[test]
    fn the_patchset_hash_is_kcidbs() {
        let patches = Additions::load(&util::repo_root(), crate::kver::Kver::V6_12)
            .unwrap()
            .patches;
        assert!(!patches.is_empty());
        // KCIDB's own recipe, in a shell over the same files in order.
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg("sha256sum \"$@\" | cut -c-64 | sha256sum | cut -c-64")
            .arg("sh")
            .args(&patches);
        let want = util::run(&mut cmd).unwrap();
        assert_eq!(patchset_hash(&patches), want.trim());
        assert_eq!(patchset_hash(&[]), "");
    }

    #[test]
    fn the_host_kernels_compiler_is_read_from_proc_version() {
        let v = "Linux version 6.1.0-28-amd64 (debian-kernel@lists.debian.org) \
                 (gcc-12 (Debian 12.2.0-14) 12.2.0, GNU ld (GNU Binutils for Debian) 2.40) \
                 #1 SMP PREEMPT_DYNAMIC Debian 6.1.119-1 (2024-11-22)\n";
        assert_eq!(
            compiler_of_proc_version(v).as_deref(),
            Some("gcc-12 (Debian 12.2.0-14) 12.2.0, GNU ld (GNU Binutils for Debian) 2.40")
        );
        assert_eq!(compiler_of_proc_version("Linux version 6.1"), None);
        assert_eq!(
            config_string(
                "CONFIG_X=y\nCONFIG_CC_VERSION_TEXT=\"clang 16\"\n",
                "CONFIG_CC_VERSION_TEXT"
            )
            .as_deref(),
            Some("clang 16")
        );
        assert_eq!(component("a.b c/d"), "a_b_c_d");
    }

    /// The Python that makes the venv: Debian's (`/usr/bin/python3`,
    /// with the `venv` module and ensurepip from `python3-venv`) where it
    /// is, so that another `python3` first on PATH (pyenv's, say) does not
    /// decide; else `python3` on PATH.
    fn base_python() -> PathBuf {
        let debian = Path::new("/usr/bin/python3");
        if debian.is_file() {
            debian.to_path_buf()
        } else {
            PathBuf::from("python3")
        }
    }

    /// A Python with `kcidb-io` installed: a venv in the cache
    /// (`venv-kcidb`), made and filled with pip on first use. Err: why
    /// there is none (no python3, no venv module or ensurepip, no PyPI),
    /// and how to get it.
    fn kcidb_python() -> Result<PathBuf, String> {
        let venv = util::cache_root(None).join("venv-kcidb");
        let python = venv.join("bin/python");
        let has = |py: &Path| {
            Command::new(py)
                .args(["-c", "import kcidb_io"])
                .output()
                .is_ok_and(|o| o.status.success())
        };
        if has(&python) {
            return Ok(python);
        }
        // Made aside and renamed, so that two tests at once cannot leave
        // half a venv where the other looks.
        let tmp = venv.with_extension(format!("tmp-{}", std::process::id()));
        let _ = fs::remove_dir_all(&tmp);
        let fail = |what: &str, o: std::io::Result<std::process::Output>| -> Result<(), String> {
            match o {
                Ok(o) if o.status.success() => Ok(()),
                // The last lines it said, on either stream (venv tells
                // of a missing ensurepip on stdout).
                Ok(o) => {
                    let said = format!(
                        "{}\n{}",
                        String::from_utf8_lossy(&o.stdout),
                        String::from_utf8_lossy(&o.stderr)
                    );
                    let lines: Vec<&str> = said.lines().filter(|l| !l.trim().is_empty()).collect();
                    Err(format!(
                        "{what} failed ({}):\n{}",
                        o.status,
                        lines[lines.len().saturating_sub(8)..].join("\n")
                    ))
                }
                Err(e) => Err(format!("{what}: {e}")),
            }
        };
        let base = base_python();
        let r = fail(
            &format!("{} -m venv", base.display()),
            Command::new(&base).arg("-m").arg("venv").arg(&tmp).output(),
        )
        .map_err(|e| {
            format!(
                "{e}\n(the venv needs Python's venv module and ensurepip: \
                 `apt-get install python3-venv`, or `cargo xtask deps`)"
            )
        })
        .and_then(|_| {
            fail(
                "pip install kcidb-io",
                Command::new(tmp.join("bin/python"))
                    .args(["-m", "pip", "install", "-q", "kcidb-io"])
                    .output(),
            )
            .map_err(|e| format!("{e}\n(pip fetches kcidb-io from PyPI, which must be reachable)"))
        });
        if let Err(e) = r {
            let _ = fs::remove_dir_all(&tmp);
            return Err(e);
        }
        // A venv left without kcidb-io (a broken earlier one) gives way
        // to the new one; one another test made meanwhile is kept.
        if fs::rename(&tmp, &venv).is_err() {
            if !has(&python) {
                let _ = fs::remove_dir_all(&venv);
                let _ = fs::rename(&tmp, &venv);
            }
            let _ = fs::remove_dir_all(&tmp);
        }
        if has(&python) {
            Ok(python)
        } else {
            Err(format!("{} has no kcidb_io after pip", venv.display()))
        }
    }

    /// Validates `doc` with kcidb-io, against this version exactly and
    /// as the newest schema it knows reads it; Err: the validator's words.
    fn validate(python: &Path, doc: &Value) -> Result<(), String> {
        let file = std::env::temp_dir().join(format!(
            "ironlift-kcidb-{}-{:?}.json",
            std::process::id(),
            std::thread::current().id()
        ));
        fs::write(&file, serde_json::to_string(doc).unwrap()).unwrap();
        let script = format!(
            "import json, sys, kcidb_io\n\
             data = json.load(open(sys.argv[1]))\n\
             kcidb_io.schema.V{MAJOR}_{MINOR}.validate_exactly(data)\n\
             kcidb_io.schema.LATEST.validate(data)\n\
             print(kcidb_io.schema.LATEST.major, kcidb_io.schema.LATEST.minor)\n"
        );
        let out = Command::new(python)
            .arg("-c")
            .arg(script)
            .arg(&file)
            .output()
            .unwrap();
        let _ = fs::remove_file(&file);
        if out.status.success() {
            Ok(())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).into_owned())
        }
    }

    #[test]
    fn kcidb_io_validates_the_output() {
        let python =
            kcidb_python().unwrap_or_else(|why| panic!("no kcidb-io to validate with: {why}"));
        let docs = [
            ("fio-basic", fio_doc().0),
            ("fio-basic-legacy", doc_of::<Fio>("fio-basic-legacy")),
            ("startup", doc_of::<Startup>("startup")),
        ];
        for (name, doc) in &docs {
            if let Err(e) = validate(&python, doc) {
                panic!("kcidb-io rejects the kcidb.json of {name}:\n{e}");
            }
        }
        // The validator is no rubber stamp: a path KCIDB forbids fails.
        let mut bad = docs[0].1.clone();
        bad["tests"][0]["path"] = json!("ironlift.fio basic");
        assert!(validate(&python, &bad).is_err());
    }
}
