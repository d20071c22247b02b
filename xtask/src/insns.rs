//! `qemu-bench --count-insns`: the guest kernel's instructions per request,
//! counted by a QEMU TCG plugin (`qemu/plugins/insn_count.c`).
//!
//! IOPS on this emulated machine move by ± 20 % between repeats when the
//! host is busy; instruction counts do not depend on the host's load, so
//! they show a scheduler's cost, and what a patch changes in it, in one run.
//! The plugin counts every kernel block's executions; the guest saves the
//! counts of each fio run (`runs/<id>.insns`); here they are named with the
//! kernel's `System.map` and the loaded modules' symbols, and divided by
//! the requests the run started (calls of `blk_mq_start_request`).

use crate::modules::Module;
use crate::util::{self, note};
use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The kernel function every request passes through once, as the driver
/// starts it: the count of its entries is the run's request count.
const PER_REQUEST: &str = "blk_mq_start_request";

/// How many functions a run's `.insns.txt` lists.
const LISTED: usize = 40;

/// The fewest instructions per request a function needs to be in a run's
/// function table (`<id>.functions.tsv`).
const TABLE_FLOOR: f64 = 0.1;

/// Builds the plugin (cached by the hash of its source) and returns the
/// shared object's path.
pub fn plugin(cache: &Path) -> Result<PathBuf> {
    let src = util::repo_root()
        .join("qemu")
        .join("plugins")
        .join("insn_count.c");
    let text = fs::read(&src).with_context(|| format!("reading {}", src.display()))?;
    let mut h = util::Hasher::new();
    h.add("insn_count.c", &text);
    let dir = cache.join("plugins");
    let so = dir.join(format!("insn_count-{}.so", &h.hex()[..12]));
    if so.exists() {
        return Ok(so);
    }
    fs::create_dir_all(&dir)?;
    let Some(cc) = util::which("clang") else {
        bail!(
            "--count-insns builds a QEMU plugin with clang, which is missing: \
             `cargo xtask deps` installs it (Debian package clang)"
        );
    };
    let tmp = so.with_extension("so.tmp");
    util::run(
        Command::new(cc)
            .args(["-O2", "-Wall", "-shared", "-fPIC", "-fvisibility=hidden"])
            .arg("-o")
            .arg(&tmp)
            .arg(&src)
            .arg("-lpthread"),
    )
    .context("building the insn_count QEMU plugin")?;
    fs::rename(&tmp, &so)?;
    note(&format!(
        "built the insn_count QEMU plugin: {}",
        so.display()
    ));
    Ok(so)
}

/// The QEMU arguments that load the plugin, saving into `out`.
pub fn qemu_args(plugin: &Path, out: &Path) -> Result<Vec<String>> {
    let (plugin, out) = (plugin.display().to_string(), out.display().to_string());
    // QEMU splits -plugin's value at commas.
    if plugin.contains(',') || out.contains(',') {
        bail!("--count-insns: QEMU cannot take a plugin path or --out folder with a comma ({out})");
    }
    Ok(vec!["-plugin".into(), format!("{plugin},dir={out}")])
}

/// Kernel and module functions by start address.
pub struct Symbols {
    /// (start, name), sorted by start.
    starts: Vec<(u64, String)>,
}

impl Symbols {
    /// The kernel's text symbols from `System.map`, and those of each
    /// module in `modules_txt` (the guest's "name address" lines, the
    /// address of the module's `.text`), named `module:function`.
    pub fn load(system_map: &Path, modules_txt: &str, modules: &[Module]) -> Result<Self> {
        let map = fs::read_to_string(system_map)
            .with_context(|| format!("reading {}", system_map.display()))?;
        let mut starts = parse_system_map(&map);
        for line in modules_txt.lines() {
            let mut it = line.split_whitespace();
            let (Some(name), Some(addr)) = (it.next(), it.next()) else {
                continue;
            };
            let Ok(base) = u64::from_str_radix(addr.trim_start_matches("0x"), 16) else {
                continue;
            };
            let Some(m) = modules.iter().find(|m| m.name == name) else {
                continue;
            };
            let table = util::run(Command::new("objdump").arg("-t").arg(&m.path))
                .with_context(|| format!("objdump -t {}", m.path.display()))?;
            for (off, sym) in parse_text_symbols(&table) {
                starts.push((base + off, format!("{name}:{sym}")));
            }
        }
        starts.sort();
        Ok(Symbols { starts })
    }

    /// The function `addr` lies in (the last symbol at or below it).
    fn at(&self, addr: u64) -> Option<&(u64, String)> {
        let i = self.starts.partition_point(|(a, _)| *a <= addr);
        i.checked_sub(1).map(|i| &self.starts[i])
    }
}

/// `System.map`'s text symbols (types t, T, w, W).
fn parse_system_map(map: &str) -> Vec<(u64, String)> {
    map.lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            let (a, t, n) = (it.next()?, it.next()?, it.next()?);
            if !matches!(t, "t" | "T" | "w" | "W") {
                return None;
            }
            Some((u64::from_str_radix(a, 16).ok()?, n.to_string()))
        })
        .collect()
}

/// The functions in the `.text` section of `objdump -t`'s table, with
/// their offsets in it.
fn parse_text_symbols(table: &str) -> Vec<(u64, String)> {
    table
        .lines()
        .filter_map(|l| {
            let p: Vec<&str> = l.split_whitespace().collect();
            // "<offset> <flags...> F .text <size> <name>"
            let f = p.iter().position(|x| *x == "F")?;
            if p.get(f + 1) != Some(&".text") || p.len() < f + 4 {
                return None;
            }
            Some((
                u64::from_str_radix(p[0], 16).ok()?,
                p[p.len() - 1].to_string(),
            ))
        })
        .collect()
}

/// One run's instruction counts, per request.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct InsnCount {
    /// Requests the run started ([`PER_REQUEST`] entries).
    pub requests: u64,
    /// Kernel instructions per request, all CPUs, everything the kernel
    /// ran during the fio run (idle loop included).
    pub kernel_per_request: f64,
    /// The scheduler's own functions per request ([`is_own`]).
    pub scheduler_per_request: f64,
}

/// Whether `function` (as [`Symbols`] names it) is `scheduler`'s own
/// code: a Rust scheduler's module and the `rust_helper_` functions it
/// calls; a C scheduler's functions by prefix. Inlined lock and list
/// helpers count with their caller; blk-mq's scheduler framework counts
/// with no one.
pub fn is_own(scheduler: &str, function: &str) -> bool {
    if let Some(base) = scheduler.strip_prefix("rust-") {
        let module = format!("rust_{}:", base.replace('-', "_"));
        return function.starts_with(&module) || function.starts_with("rust_helper_");
    }
    let prefixes: &[&str] = match scheduler {
        "mq-deadline" => &["dd_", "deadline_", "__dd_"],
        "bfq" => &["bfq_", "__bfq_", "bfqq_", "bfqg_"],
        "kyber" => &["kyber_", "__kyber_"],
        _ => &[],
    };
    prefixes.iter().any(|p| function.starts_with(p))
}

/// Sums a plugin dump by function. Returns (function, instructions,
/// entries) sorted by instructions, highest first.
fn by_function(dump: &str, syms: &Symbols) -> Vec<(String, u64, u64)> {
    let mut acc: HashMap<&str, (u64, u64)> = HashMap::new();
    for line in dump.lines() {
        if line.starts_with('#') {
            continue;
        }
        let mut it = line.split_whitespace();
        let (Some(a), Some(n), Some(c)) = (it.next(), it.next(), it.next()) else {
            continue;
        };
        let (Ok(a), Ok(n), Ok(c)) = (
            u64::from_str_radix(a, 16),
            n.parse::<u64>(),
            c.parse::<u64>(),
        ) else {
            continue;
        };
        let (name, entry) = match syms.at(a) {
            Some((start, name)) => (name.as_str(), *start == a),
            None => ("?", false),
        };
        let e = acc.entry(name).or_default();
        e.0 += n * c;
        if entry {
            e.1 += c;
        }
    }
    let mut v: Vec<(String, u64, u64)> = acc
        .into_iter()
        .map(|(k, (i, e))| (k.to_string(), i, e))
        .collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    v
}

/// Summarizes the dump of one run of `scheduler`, and writes beside
/// `base` (`runs/<id>`) two files: `<id>.insns.txt`, the functions that
/// cost most, then all of the scheduler's own (per request, with entries
/// per request), and `<id>.functions.tsv`, every function of at least
/// [`TABLE_FLOOR`] instructions per request ([`read_functions`]).
pub fn summarize(dump: &str, syms: &Symbols, scheduler: &str, base: &Path) -> Result<InsnCount> {
    let listing = base.with_extension("insns.txt");
    let funcs = by_function(dump, syms);
    let requests = funcs
        .iter()
        .find(|f| f.0 == PER_REQUEST)
        .map(|f| f.2)
        .unwrap_or(0);
    if requests == 0 {
        bail!("no request reached {PER_REQUEST} during the run");
    }
    let per = |x: u64| x as f64 / requests as f64;
    let total: u64 = funcs.iter().map(|f| f.1).sum();
    let own_funcs: Vec<&(String, u64, u64)> =
        funcs.iter().filter(|f| is_own(scheduler, &f.0)).collect();
    let own: u64 = own_funcs.iter().map(|f| f.1).sum();
    let row = |f: &(String, u64, u64), mark: &str| {
        format!("{:>10.1} {:>10.2}  {}{mark}\n", per(f.1), per(f.2), f.0)
    };
    let mut text = format!(
        "# {scheduler}: {requests} requests; kernel instructions per request {:.0}, \
         the scheduler's own {:.0}\n# insns/request  calls/request  function\n",
        per(total),
        per(own)
    );
    for f in funcs.iter().take(LISTED) {
        text.push_str(&row(f, if is_own(scheduler, &f.0) { "  *" } else { "" }));
    }
    text.push_str("# the scheduler's own functions\n");
    for f in own_funcs {
        text.push_str(&row(f, ""));
    }
    fs::write(&listing, text).with_context(|| format!("writing {}", listing.display()))?;
    let mut table = String::from("# insns/request\tcalls/request\tfunction\n");
    for f in funcs.iter().filter(|f| per(f.1) >= TABLE_FLOOR) {
        table.push_str(&format!("{:.2}\t{:.3}\t{}\n", per(f.1), per(f.2), f.0));
    }
    let tsv = functions_table(base);
    fs::write(&tsv, table).with_context(|| format!("writing {}", tsv.display()))?;
    Ok(InsnCount {
        requests,
        kernel_per_request: per(total),
        scheduler_per_request: per(own),
    })
}

/// Where the function table of the run whose files start with `base`
/// (`runs/<id>`) is: `runs/<id>.functions.tsv`.
pub fn functions_table(base: &Path) -> PathBuf {
    base.with_extension("functions.tsv")
}

/// A run's function table (`<id>.functions.tsv`, written by
/// [`summarize`]): instructions per request by function.
pub fn read_functions(tsv: &Path) -> Result<BTreeMap<String, f64>> {
    let text = fs::read_to_string(tsv).with_context(|| format!("reading {}", tsv.display()))?;
    let mut out = BTreeMap::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let mut it = line.splitn(3, '\t');
        let (Some(n), Some(_), Some(f)) = (it.next(), it.next(), it.next()) else {
            bail!("{}: not a function table line: {line:?}", tsv.display());
        };
        let n: f64 = n
            .parse()
            .with_context(|| format!("{}: {line:?}", tsv.display()))?;
        out.insert(f.to_string(), n);
    }
    Ok(out)
}

/// A function's name as [`Symbols`] gives it, readable: a Rust symbol
/// (v0 mangling) as its module path, the first type on it and the
/// function (`rust_deadline:deadline::sort::Deadline::tree_insert`); C
/// names as they are.
pub fn short_name(name: &str) -> String {
    let (module, sym) = match name.split_once(':') {
        Some((m, s)) => (Some(m), s),
        None => (None, name),
    };
    let Some(rest) = sym.strip_prefix("_R") else {
        return name.to_string();
    };
    let idents = v0_identifiers(rest);
    let Some((last, path)) = idents.split_last() else {
        return name.to_string();
    };
    // The crate comes first; the path runs to the first type (a name that
    // starts with a capital).
    let mut parts: Vec<&str> = Vec::new();
    for id in path.iter().skip(1) {
        parts.push(id);
        if id.starts_with(|c: char| c.is_ascii_uppercase()) {
            break;
        }
    }
    parts.push(last);
    let path = parts.join("::");
    match module {
        Some(m) => format!("{m}:{path}"),
        None => path,
    }
}

/// The identifiers of a v0-mangled symbol, in order: each `<length><name>`
/// (`_` after the length when the name starts with a digit or `_`),
/// skipping crate disambiguators (`Cs..._`) and back-references
/// (`B..._`).
fn v0_identifiers(s: &str) -> Vec<&str> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'C' if b.get(i + 1) == Some(&b's') => {
                i += 2;
                while i < b.len() && b[i] != b'_' {
                    i += 1;
                }
                i += 1;
            }
            b'B' | b's' => {
                i += 1;
                while i < b.len() && b[i].is_ascii_alphanumeric() {
                    i += 1;
                }
                i += 1;
            }
            c if c.is_ascii_digit() => {
                let start = i;
                while i < b.len() && b[i].is_ascii_digit() {
                    i += 1;
                }
                let n: usize = s[start..i].parse().unwrap_or(0);
                if b.get(i) == Some(&b'_') {
                    i += 1;
                }
                if n > 0 && i + n <= b.len() {
                    out.push(&s[i..i + n]);
                }
                i += n;
            }
            _ => i += 1,
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn syms() -> Symbols {
        let mut starts = parse_system_map(
            "ffffffff81000000 T _stext\n\
             ffffffff81001000 T blk_mq_start_request\n\
             ffffffff81001100 t bfq_insert_requests\n\
             ffffffff81001200 D some_data\n\
             ffffffff81001300 T rust_helper_spin_lock\n",
        );
        let table = "rust_bfq.ko:     file format elf64-x86-64\n\n\
             SYMBOL TABLE:\n\
             0000000000000000 l    d  .text\t0000000000000000 .text\n\
             0000000000000040 l     F .text\t0000000000000010 _RNvfoo_insert\n\
             0000000000000000 g     F .init.text\t0000000000000010 init_module\n";
        for (off, s) in parse_text_symbols(table) {
            starts.push((0xffffffffa000c000 + off, format!("rust_bfq:{s}")));
        }
        starts.sort();
        Symbols { starts }
    }

    #[test]
    fn symbols_take_text_only() {
        let s = syms();
        assert_eq!(s.at(0xffffffff81001180).unwrap().1, "bfq_insert_requests");
        // Data symbols are not functions: the address stays in the last one.
        assert_eq!(s.at(0xffffffff81001250).unwrap().1, "bfq_insert_requests");
        assert_eq!(
            s.at(0xffffffffa000c044).unwrap().1,
            "rust_bfq:_RNvfoo_insert"
        );
        assert!(s.starts.iter().all(|(_, n)| n != "rust_bfq:init_module"));
        assert!(s.at(0x1000).is_none());
    }

    #[test]
    fn per_request_counts() {
        let dump = "# insn_count v1 dropped_blocks 0\n\
                    ffffffff81001000 10 100\n\
                    ffffffff81001010 5 100\n\
                    ffffffff81001100 20 300\n\
                    ffffffffa000c040 7 200\n\
                    ffffffff81001300 3 100\n";
        let dir = std::env::temp_dir().join(format!("ironlift-insns-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let base = dir.join("x");
        let listing = dir.join("x.insns.txt");
        let c = summarize(dump, &syms(), "rust-bfq", &base).unwrap();
        // 100 requests (entries of blk_mq_start_request's first block only).
        assert_eq!(c.requests, 100);
        assert_eq!(
            c.kernel_per_request,
            (1000 + 500 + 6000 + 1400 + 300) as f64 / 100.0
        );
        // The module and rust_helper_; not the C scheduler's functions.
        assert_eq!(c.scheduler_per_request, (1400 + 300) as f64 / 100.0);
        let c = summarize(dump, &syms(), "bfq", &base).unwrap();
        assert_eq!(c.scheduler_per_request, 60.0);
        let text = fs::read_to_string(&listing).unwrap();
        assert!(text.contains("bfq_insert_requests  *"), "{text}");
        let table = read_functions(&dir.join("x.functions.tsv")).unwrap();
        assert_eq!(table["bfq_insert_requests"], 60.0);
        assert_eq!(table["rust_bfq:_RNvfoo_insert"], 14.0);
        assert_eq!(table.values().sum::<f64>(), c.kernel_per_request);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_run_without_requests_is_an_error() {
        let dump = "ffffffff81001100 20 300\n";
        let base = std::env::temp_dir().join("ironlift-insns-none");
        assert!(summarize(dump, &syms(), "bfq", &base).is_err());
    }

    #[test]
    fn rust_symbols_read_as_paths() {
        assert_eq!(
            short_name(
                "rust_deadline:_RNvMNtNtNtNtCsl7L7n58I0Vr_6kernel5block2mq8elevator6vtable\
                 INtB2_6VtableINtNtCsaQaFwbzha4f_13rust_deadline4glue14PolicyElevator\
                 NtB1c_12RustDeadlineEE15insert_requestsB1c_"
            ),
            "rust_deadline:block::mq::elevator::vtable::Vtable::insert_requests"
        );
        assert_eq!(
            short_name(
                "rust_deadline:_RNvMNtNtCsaQaFwbzha4f_13rust_deadline8deadline4sort\
                 INtB4_8DeadlineINtNtB6_4glue7StorageNtB4_4SlotEE11tree_removeB6_"
            ),
            "rust_deadline:deadline::sort::Deadline::tree_remove"
        );
        assert_eq!(
            short_name("rust_bfq:_RNvMNtNtCs4sed78L5JXd_8rust_bfq3bfq5hooksNtB7_3Ctx6insert"),
            "rust_bfq:bfq::hooks::Ctx::insert"
        );
        assert_eq!(short_name("dd_insert_requests"), "dd_insert_requests");
        assert_eq!(short_name("rust_helper_spin_lock"), "rust_helper_spin_lock");
    }

    #[test]
    fn plugin_arguments() {
        let a = qemu_args(Path::new("/c/p.so"), Path::new("/r/out")).unwrap();
        assert_eq!(a, ["-plugin", "/c/p.so,dir=/r/out"]);
        assert!(qemu_args(Path::new("/c/p.so"), Path::new("/r/a,b")).is_err());
    }

    /// The plugin builds, QEMU loads it, and it answers the guest's
    /// trigger: a name gets a counts file, "discard" none, and the trigger
    /// goes away each time. Needs clang and QEMU, which `cargo xtask deps`
    /// (and so `cargo xtask test`) installs; without them it fails, saying
    /// so, rather than pass without testing anything.
    #[test]
    fn plugin_builds_loads_and_answers_the_trigger() {
        use std::io::Write;
        use std::process::Stdio;
        use std::time::{Duration, Instant};
        for tool in ["clang", "qemu-system-x86_64"] {
            assert!(
                util::which(tool).is_some(),
                "{tool} is missing: `cargo xtask deps` installs it (Debian packages clang, qemu-system-x86)"
            );
        }
        let dir = std::env::temp_dir().join(format!("ironlift-plugin-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let so = plugin(&dir.join("cache")).unwrap();
        // No machine and stopped: the plugin only has to load and watch.
        let mut qemu = Command::new("qemu-system-x86_64")
            .args([
                "-accel",
                "tcg",
                "-M",
                "none",
                "-nodefaults",
                "-display",
                "none",
            ])
            .args(["-S", "-monitor", "stdio"])
            .args(qemu_args(&so, &dir).unwrap())
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let trigger = dir.join("insn.trigger");
        // Names outside the folder are not written.
        for what in ["discard\n", "run.insns\n", "../escaped.insns\n"] {
            fs::write(&trigger, what).unwrap();
            let start = Instant::now();
            while trigger.exists() {
                if qemu.try_wait().unwrap().is_some() {
                    let mut err = String::new();
                    let _ =
                        std::io::Read::read_to_string(&mut qemu.stderr.take().unwrap(), &mut err);
                    panic!("qemu exited: {err}");
                }
                assert!(
                    start.elapsed() < Duration::from_secs(10),
                    "no answer to {what}"
                );
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        let mut stdin = qemu.stdin.take().unwrap();
        stdin.write_all(b"quit\n").unwrap();
        drop(stdin);
        let out = qemu.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "qemu: {stderr}");
        let counts = fs::read_to_string(dir.join("run.insns")).unwrap();
        assert!(counts.starts_with("# insn_count v1"), "{counts}");
        assert!(!dir.join("discard").exists());
        assert!(!dir.parent().unwrap().join("escaped.insns").exists());
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn own_functions() {
        assert!(is_own("rust-deadline", "rust_deadline:_RNvXs_foo"));
        assert!(!is_own("rust-deadline", "rust_bfq:_RNvXs_foo"));
        assert!(is_own("mq-deadline", "dd_insert_requests"));
        assert!(!is_own("none", "dd_insert_requests"));
        assert!(!is_own("kyber", "bfq_insert_requests"));
    }
}
