//! The device servers of a guest's emulated disks: `ironlift-blkserve`
//! built, one server per `model` device started before QEMU, the QEMU
//! lines that attach its exports, and the server stopped after the guest
//! with its stats (lag) collected into the results folder.
//!
//! A server is stopped on every way out: [`Servers::stop`] after the
//! guest, and `Drop` (SIGTERM, then SIGKILL) when an error unwinds the run.
//! Ctrl-C reaches the servers directly: they share the terminal's process
//! group with xtask, and SIGINT makes them write their stats and exit.

use crate::devices::{Device, ModelDisk};
use crate::flags::KernelArgs;
use crate::util::{self, note, step};
use anyhow::{bail, Context, Result};
use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long a server may take to put its socket in place.
const READY_TIMEOUT: Duration = Duration::from_secs(20);

/// How long a server may take to write its stats and exit on SIGTERM.
const STOP_TIMEOUT: Duration = Duration::from_secs(10);

/// The devices of `devices` that need a server.
pub fn models(devices: &[(String, Device)]) -> Vec<(String, ModelDisk)> {
    devices
        .iter()
        .filter_map(|(n, d)| Some((n.clone(), d.model.clone()?)))
        .collect()
}

/// Builds `ironlift-blkserve` (release) and returns the binary's path.
pub fn build() -> Result<PathBuf> {
    step("Building ironlift-blkserve (release) for the emulated disks");
    cargo_build(true)
}

/// `cargo build -p ironlift-blkserve`, `--release` or not; the binary.
fn cargo_build(release: bool) -> Result<PathBuf> {
    let root = util::repo_root();
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cmd.current_dir(&root)
        .args(["build", "-p", "ironlift-blkserve"])
        .args(release.then_some("--release"));
    let status = cmd
        .status()
        .with_context(|| format!("running {}", util::show(&cmd)))?;
    if !status.success() {
        bail!("{} failed (output above)", util::show(&cmd));
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    Ok(target
        .join(if release { "release" } else { "debug" })
        .join("ironlift-blkserve"))
}

/// Builds the server and starts one for every device of `used` that is
/// emulated (logs and stats in `out/devices`); `None` when none is.
pub fn start_for<'a>(
    k: &KernelArgs,
    out: &Path,
    used: impl IntoIterator<Item = (&'a String, &'a Device)>,
) -> Result<Option<Servers>> {
    let used: Vec<(String, Device)> = used
        .into_iter()
        .map(|(n, d)| (n.clone(), d.clone()))
        .collect();
    let models = models(&used);
    if models.is_empty() {
        return Ok(None);
    }
    let bin = build()?;
    let cache = k.kernel_opts().cache;
    Ok(Some(start(&bin, &cache, out, &models)?))
}

/// The server's arguments for device `name`: one export per drive, its
/// backing file `<dir>/<drive>.img`.
pub fn server_args(m: &ModelDisk, socket: &Path, stats: &Path, dir: &Path) -> Vec<String> {
    let mut a = vec![
        "--socket".to_string(),
        socket.display().to_string(),
        "--stats".to_string(),
        stats.display().to_string(),
        "--path-latency-us".to_string(),
        m.path_latency_us.to_string(),
    ];
    for id in m.drive_ids() {
        let ncq = m.ncq.map(|n| format!(",ncq={n}")).unwrap_or_default();
        a.push("--export".to_string());
        a.push(format!(
            "{id}={},{},{}{ncq}",
            m.device,
            dir.join(format!("{id}.img")).display(),
            m.size_mb
        ));
    }
    a
}

/// The QEMU arguments that attach a server's exports: an NBD `-blockdev`
/// per drive (node name = drive id = export name), then the `-device`s.
pub fn qemu_args(m: &ModelDisk, socket: &Path) -> Vec<String> {
    let mut a = Vec::new();
    for id in m.drive_ids() {
        a.push("-blockdev".to_string());
        a.push(format!(
            "driver=nbd,node-name={id},server.type=unix,server.path={},export={id}",
            socket.display()
        ));
    }
    for d in &m.devices {
        a.extend(["-device".to_string(), d.clone()]);
    }
    a
}

/// One running server.
struct Server {
    name: String,
    child: Child,
    log: PathBuf,
    stats: PathBuf,
    qemu: Vec<String>,
}

/// The servers of one guest boot.
pub struct Servers {
    list: Vec<Server>,
    /// Sockets and backing files, removed with the servers.
    dir: PathBuf,
}

/// Where the server of device `name` keeps its log and stats in `out`.
pub fn log_path(out: &Path, name: &str) -> PathBuf {
    out.join("devices").join(format!("{name}.log"))
}

/// See [`log_path`].
pub fn stats_path(out: &Path, name: &str) -> PathBuf {
    out.join("devices").join(format!("{name}.stats.json"))
}

/// Starts a server for each of `models`, sockets and backing files in
/// `cache/disks/serve-<pid>`, logs and stats in `out/devices`, and waits
/// for each one's ready line.
pub fn start(
    bin: &Path,
    cache: &Path,
    out: &Path,
    models: &[(String, ModelDisk)],
) -> Result<Servers> {
    let dir = cache
        .join("disks")
        .join(format!("serve-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    fs::create_dir_all(out.join("devices"))?;
    let mut servers = Servers {
        list: Vec::new(),
        dir,
    };
    for (name, m) in models {
        let socket = servers.dir.join(format!("{name}.sock"));
        // sun_path holds 108 bytes with the terminating NUL.
        if socket.as_os_str().len() > 100 {
            bail!(
                "device {name}: socket path {} is too long for a unix socket; \
                 use a shorter --cache-dir",
                socket.display()
            );
        }
        let (log, stats) = (log_path(out, name), stats_path(out, name));
        let _ = fs::remove_file(&stats);
        let server = spawn(bin, name, m, &socket, &stats, &servers.dir, &log)?;
        servers.list.push(server);
        let s = servers.list.last_mut().expect("just pushed");
        wait_ready(s)?;
        note(&format!(
            "device server {name}: {} ({}), log {}",
            m.device,
            m.drive_ids().join(" "),
            s.log.display()
        ));
    }
    Ok(servers)
}

fn spawn(
    bin: &Path,
    name: &str,
    m: &ModelDisk,
    socket: &Path,
    stats: &Path,
    dir: &Path,
    log: &Path,
) -> Result<Server> {
    let err = fs::File::create(log).with_context(|| format!("creating {}", log.display()))?;
    let child = Command::new(bin)
        .args(server_args(m, socket, stats, dir))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(err)
        .spawn()
        .with_context(|| format!("device {name}: could not start {}", bin.display()))?;
    Ok(Server {
        name: name.to_string(),
        child,
        log: log.to_path_buf(),
        stats: stats.to_path_buf(),
        qemu: qemu_args(m, socket),
    })
}

/// Waits for the server's `ready` line; fails if it exits or is silent
/// for [`READY_TIMEOUT`].
fn wait_ready(s: &mut Server) -> Result<()> {
    let stdout = s.child.stdout.take().context("server stdout")?;
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if line.starts_with("ready ") {
                let _ = tx.send(line);
            }
        }
    });
    let start = Instant::now();
    loop {
        if rx.recv_timeout(Duration::from_millis(100)).is_ok() {
            return Ok(());
        }
        if let Some(st) = s.child.try_wait()? {
            bail!(
                "device {}: the server exited before it was ready ({st}): {}; log: {}",
                s.name,
                last_line(&s.log),
                s.log.display()
            );
        }
        if start.elapsed() > READY_TIMEOUT {
            bail!(
                "device {}: the server was not ready within {} s; log: {}",
                s.name,
                READY_TIMEOUT.as_secs(),
                s.log.display()
            );
        }
    }
}

/// The log's last non-empty line, for error messages.
fn last_line(log: &Path) -> String {
    fs::read_to_string(log)
        .ok()
        .and_then(|t| {
            t.lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .map(str::to_string)
        })
        .unwrap_or_else(|| "no message".to_string())
}

/// Sends SIGTERM to a child.
fn terminate(child: &Child) {
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .stderr(Stdio::null())
        .status();
}

/// Waits up to `limit` for a child to exit; kills it after that.
fn reap(child: &mut Child, limit: Duration) -> Option<std::process::ExitStatus> {
    let start = Instant::now();
    while start.elapsed() < limit {
        if let Ok(Some(st)) = child.try_wait() {
            return Some(st);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

/// A server's lag (reply sent minus modelled completion), in µs.
#[derive(Debug, Clone, PartialEq)]
pub struct Lag {
    pub device: String,
    pub requests: u64,
    pub mean: f64,
    pub p99: f64,
    pub max: f64,
}

/// Reads the lag of device `name` from its stats JSON.
pub fn parse_lag(name: &str, text: &str) -> Result<Lag> {
    let v: serde_json::Value = serde_json::from_str(text).context("stats JSON")?;
    let lag = v.get("lag_us").context("stats JSON has no lag_us")?;
    let f = |k: &str| lag.get(k).and_then(|x| x.as_f64()).unwrap_or(f64::NAN);
    Ok(Lag {
        device: name.to_string(),
        requests: v.get("requests").and_then(|x| x.as_u64()).unwrap_or(0),
        mean: f("mean"),
        p99: f("p99"),
        max: f("max"),
    })
}

impl Servers {
    /// The QEMU arguments for every server's disks.
    pub fn qemu_args(&self) -> Vec<String> {
        self.list.iter().flat_map(|s| s.qemu.clone()).collect()
    }

    /// Stops every server (SIGTERM) and reads the lag from its stats. A
    /// server that exited before it was stopped died during the run: an
    /// error naming it, its exit and its log.
    pub fn stop(mut self) -> Result<Vec<Lag>> {
        let mut died = Vec::new();
        for s in &mut self.list {
            if let Ok(Some(st)) = s.child.try_wait() {
                died.push(format!(
                    "device {}: the server died during the run ({st}): {}; log: {}",
                    s.name,
                    last_line(&s.log),
                    s.log.display()
                ));
                continue;
            }
            terminate(&s.child);
            if reap(&mut s.child, STOP_TIMEOUT).is_none() {
                died.push(format!(
                    "device {}: the server did not exit within {} s of SIGTERM (killed); log: {}",
                    s.name,
                    STOP_TIMEOUT.as_secs(),
                    s.log.display()
                ));
            }
        }
        if !died.is_empty() {
            bail!("{}", died.join("\n"));
        }
        let mut lags = Vec::new();
        for s in &self.list {
            let text = fs::read_to_string(&s.stats).with_context(|| {
                format!(
                    "device {}: the server wrote no stats {}; log: {}",
                    s.name,
                    s.stats.display(),
                    s.log.display()
                )
            })?;
            lags.push(parse_lag(&s.name, &text).with_context(|| s.stats.display().to_string())?);
        }
        Ok(lags)
    }
}

impl Drop for Servers {
    fn drop(&mut self) {
        for s in &mut self.list {
            if let Ok(None) = s.child.try_wait() {
                terminate(&s.child);
                reap(&mut s.child, STOP_TIMEOUT);
            }
        }
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// A markdown table of the servers' lag.
pub fn lag_markdown(lags: &[Lag]) -> String {
    let mut s = String::from(
        "| device | requests | lag mean µs | p99 µs | max µs |\n|---|---:|---:|---:|---:|\n",
    );
    for l in lags {
        s.push_str(&format!(
            "| {} | {} | {:.1} | {:.1} | {:.1} |\n",
            l.device, l.requests, l.mean, l.p99, l.max
        ));
    }
    s
}

/// The lag of every server whose stats are in `dir/devices`, by name.
pub fn lags_in(dir: &Path) -> Vec<Lag> {
    let Ok(rd) = fs::read_dir(dir.join("devices")) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
    files.sort();
    files
        .iter()
        .filter_map(|p| {
            let name = p.file_name()?.to_str()?.strip_suffix(".stats.json")?;
            parse_lag(name, &fs::read_to_string(p).ok()?).ok()
        })
        .collect()
}

/// Adds the device servers' lag to `dir/report.md` when the run had any:
/// how late the emulated disks answered, beside the figures they shaped.
pub fn append_to_report(dir: &Path) -> Result<()> {
    let lags = lags_in(dir);
    if lags.is_empty() {
        return Ok(());
    }
    let p = dir.join("report.md");
    let mut text = fs::read_to_string(&p).unwrap_or_default();
    text.push_str(&format!(
        "\n## Device servers\n\nHow late the emulated disks' replies went out after the \
         model's completion (devices/<name>.stats.json):\n\n{}",
        lag_markdown(&lags)
    ));
    fs::write(&p, text)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raptors() -> ModelDisk {
        let all = crate::devices::load(&util::repo_root()).unwrap();
        all["hdd-raptor"].model.clone().unwrap()
    }

    #[test]
    fn server_and_qemu_lines_come_from_the_entry() {
        let m = raptors();
        let a = server_args(
            &m,
            Path::new("/s/r.sock"),
            Path::new("/o/r.json"),
            Path::new("/s"),
        );
        assert_eq!(
            a.join(" "),
            "--socket /s/r.sock --stats /o/r.json --path-latency-us 400 \
             --export r0=hdd-raptor,/s/r0.img,2048,ncq=32 --export r1=hdd-raptor,/s/r1.img,2048,ncq=32 \
             --export r2=hdd-raptor,/s/r2.img,2048,ncq=32 --export r3=hdd-raptor,/s/r3.img,2048,ncq=32"
        );
        let q = qemu_args(&m, Path::new("/s/r.sock"));
        assert_eq!(q.len(), 2 * 4 + 2 * 5);
        assert_eq!(
            q[1],
            "driver=nbd,node-name=r0,server.type=unix,server.path=/s/r.sock,export=r0"
        );
        assert_eq!(q[8], "-device");
        assert_eq!(q[9], "ahci,id=ahci2");
        assert_eq!(
            q[11],
            "ide-hd,drive=r0,bus=ahci2.0,rotation_rate=10000,model=ironlift-r0"
        );
    }

    #[test]
    fn lag_reads_from_the_stats_json() {
        let text = r#"{"uptime_s":0.3,"requests":61,"errors":5,
            "lag_us":{"mean":32.7,"p50":8.2,"p99":235.7,"max":345.6},"exports":[]}"#;
        let l = parse_lag("hdd-7200", text).unwrap();
        assert_eq!(l.requests, 61);
        assert_eq!((l.mean, l.p99, l.max), (32.7, 235.7, 345.6));
        assert!(parse_lag("x", "{}").is_err());
        assert!(parse_lag("x", "not json").is_err());
        let md = lag_markdown(&[l]);
        assert!(
            md.ends_with("| hdd-7200 | 61 | 32.7 | 235.7 | 345.6 |\n"),
            "{md}"
        );
    }

    #[test]
    fn a_server_that_cannot_start_names_the_device_and_its_log() {
        let dir = std::env::temp_dir().join(format!("xtask-blkserve-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let m = raptors();
        let e = start(
            Path::new("/bin/false"),
            &dir,
            &dir.join("out"),
            &[("hdd-raptor".to_string(), m)],
        )
        .err()
        .expect("/bin/false is no server");
        let msg = format!("{e:#}");
        assert!(msg.contains("device hdd-raptor"), "{msg}");
        assert!(msg.contains("hdd-raptor.log"), "{msg}");
        assert!(!dir
            .join("disks")
            .join(format!("serve-{}", std::process::id()))
            .exists());
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_built_server_starts_answers_ready_and_stops_with_stats() {
        // Built here (debug: `cargo test --workspace` has built it so
        // already, and it is quicker to build than the release one).
        let bin = cargo_build(false).unwrap();
        let dir = std::env::temp_dir().join(format!("xtask-serve-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let mut m = raptors();
        m.size_mb = 16;
        let out = dir.join("out");
        let servers = start(&bin, &dir, &out, &[("hdd-raptor".to_string(), m)]).unwrap();
        let sock = dir
            .join("disks")
            .join(format!("serve-{}", std::process::id()))
            .join("hdd-raptor.sock");
        assert!(sock.exists());
        assert!(servers.qemu_args()[1].contains(&sock.display().to_string()));
        let lags = servers.stop().unwrap();
        assert_eq!(lags.len(), 1);
        assert_eq!(lags[0].requests, 0);
        assert!(stats_path(&out, "hdd-raptor").exists());
        assert!(!sock.exists());
        let _ = fs::remove_dir_all(&dir);
    }
}
