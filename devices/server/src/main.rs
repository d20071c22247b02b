// SPDX-License-Identifier: GPL-2.0

//! ironlift-blkserve: an NBD server on a unix socket whose exports keep
//! their data in sparse backing files and answer with a device model's
//! timing, in wall-clock time. QEMU attaches an export with its built-in
//! NBD client:
//!
//! ```text
//! -blockdev driver=nbd,node-name=hdd0,server.type=unix,server.path=SOCK,export=hdd-7200
//! -device ide-hd,drive=hdd0,bus=ahci0.0,rotation_rate=7200
//! ```
//!
//! Usage (one export, named after its device unless `--name`):
//!
//! ```text
//! ironlift-blkserve --device hdd-7200 --socket SOCK --backing FILE --size-mb N \
//!     --stats FILE [--ncq-depth N] [--name NAME] [--log FILE] [--spin-us N] \
//!     [--path-latency-us N] [--exit-when-idle]
//! ```
//!
//! or several, each its own disk (`--export` repeated):
//!
//! ```text
//! ironlift-blkserve --socket SOCK --stats FILE \
//!     --export NAME=DEVICE,BACKING,SIZE_MB[,ncq=N] ...
//! ```
//!
//! `--path-latency-us` takes the latency of the path from the client's
//! application to the server (a guest's kernel, QEMU, NBD) off each
//! command's modelled latency, so that the application sees about the
//! model's figures rather than the path's on top of them; measure it as
//! the round trip on a `null` export, which completes every command on
//! arrival.
//!
//! The socket appears only once the server listens (it is bound under
//! another name and renamed), and the server then prints one line,
//! `ready SOCK EXPORT...`, on stdout. On SIGTERM or SIGINT, or with
//! `--exit-when-idle` when the last client has disconnected, it writes the
//! stats file and exits 0; it also rewrites the stats file whenever its
//! last client disconnects. A setup failure exits 1 with one line on
//! stderr saying why.

#![forbid(unsafe_code)]

mod conn;
mod export;
mod nbd;

use export::{stats_json, Clock, Export};
use ironlift_devmodel::{build, Nanos, Setup, MODELS, SECTOR_BYTES};
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::FileTypeExt;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One export as the command line gives it.
#[derive(Clone, Debug, PartialEq)]
struct ExportArg {
    name: String,
    device: String,
    backing: PathBuf,
    size_mb: u64,
    ncq: Option<usize>,
}

#[derive(Debug, Default)]
struct Args {
    socket: PathBuf,
    stats: PathBuf,
    log: Option<PathBuf>,
    spin_us: u64,
    path_latency_us: u64,
    exit_when_idle: bool,
    exports: Vec<ExportArg>,
}

const USAGE: &str = "usage: ironlift-blkserve --socket SOCK --stats FILE \
(--device NAME --backing FILE --size-mb N [--ncq-depth N] [--name EXPORT] | \
--export NAME=DEVICE,BACKING,SIZE_MB[,ncq=N]...) [--log FILE] [--spin-us N] \
[--path-latency-us N] [--exit-when-idle]";

fn parse_export(v: &str) -> Result<ExportArg, String> {
    let bad = || format!("--export {v}: want NAME=DEVICE,BACKING,SIZE_MB[,ncq=N]");
    let (name, rest) = v.split_once('=').ok_or_else(bad)?;
    let parts: Vec<&str> = rest.split(',').collect();
    if parts.len() < 3 || parts.len() > 4 || name.is_empty() {
        return Err(bad());
    }
    let ncq = match parts.get(3) {
        None => None,
        Some(p) => Some(
            p.strip_prefix("ncq=")
                .and_then(|n| n.parse().ok())
                .ok_or_else(bad)?,
        ),
    };
    Ok(ExportArg {
        name: name.into(),
        device: parts[0].into(),
        backing: parts[1].into(),
        size_mb: parts[2].parse().map_err(|_| bad())?,
        ncq,
    })
}

// Long: one flat match over every option keeps the command line in one
// place.
fn parse_args(argv: &[String]) -> Result<Args, String> {
    let mut a = Args {
        spin_us: 100,
        ..Args::default()
    };
    let (mut device, mut backing, mut size, mut ncq, mut name) = (None, None, None, None, None);
    let mut it = argv.iter();
    while let Some(flag) = it.next() {
        if flag == "--exit-when-idle" {
            a.exit_when_idle = true;
            continue;
        }
        let v = it
            .next()
            .ok_or_else(|| format!("{flag} needs a value\n{USAGE}"))?;
        let num = |v: &str| {
            v.parse::<u64>()
                .map_err(|_| format!("{flag} {v}: not a number"))
        };
        match flag.as_str() {
            "--socket" => a.socket = v.into(),
            "--stats" => a.stats = v.into(),
            "--log" => a.log = Some(v.into()),
            "--spin-us" => a.spin_us = num(v)?,
            "--path-latency-us" => a.path_latency_us = num(v)?,
            "--device" => device = Some(v.clone()),
            "--backing" => backing = Some(PathBuf::from(v)),
            "--size-mb" => size = Some(num(v)?),
            "--ncq-depth" => ncq = Some(num(v)? as usize),
            "--name" => name = Some(v.clone()),
            "--export" => a.exports.push(parse_export(v)?),
            _ => return Err(format!("unknown option {flag}\n{USAGE}")),
        }
    }
    if let Some(device) = device {
        let (Some(backing), Some(size_mb)) = (backing, size) else {
            return Err(format!("--device needs --backing and --size-mb\n{USAGE}"));
        };
        a.exports.push(ExportArg {
            name: name.unwrap_or_else(|| device.clone()),
            device,
            backing,
            size_mb,
            ncq,
        });
    }
    if a.socket.as_os_str().is_empty() || a.stats.as_os_str().is_empty() || a.exports.is_empty() {
        return Err(USAGE.into());
    }
    for (i, e) in a.exports.iter().enumerate() {
        if a.exports[..i].iter().any(|o| o.name == e.name) {
            return Err(format!("export {} given twice", e.name));
        }
    }
    Ok(a)
}

/// Opens (creating or extending) the backing file and builds the export.
fn make_export(
    e: &ExportArg,
    path_latency: Nanos,
    clock: Clock,
    log: &Option<Arc<Mutex<BufWriter<File>>>>,
) -> Result<Arc<Export>, String> {
    let setup = Setup {
        ncq: e.ncq,
        path_latency,
    };
    let model = build(&e.device, setup).ok_or_else(|| {
        format!(
            "export {}: unknown device {} (known: {}, null)",
            e.name,
            e.device,
            MODELS.join(", ")
        )
    })?;
    let size = e
        .size_mb
        .checked_mul(1 << 20)
        .filter(|&s| s > 0)
        .ok_or_else(|| format!("export {}: bad size {} MiB", e.name, e.size_mb))?;
    let cap = model.capacity().saturating_mul(SECTOR_BYTES);
    if size > cap {
        return Err(format!(
            "export {}: {} MiB is more than the {} model's {} MiB",
            e.name,
            e.size_mb,
            e.device,
            cap >> 20
        ));
    }
    let why = |err: io::Error| format!("backing file {}: {err}", e.backing.display());
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&e.backing)
        .map_err(why)?;
    if file.metadata().map_err(why)?.len() < size {
        file.set_len(size).map_err(why)?;
    }
    Ok(Arc::new(Export::new(
        e.name.clone(),
        model,
        file,
        size,
        clock,
        log.clone(),
    )))
}

/// Binds the socket under a temporary name and renames it into place, so
/// that it appears only when it accepts connections.
fn listen(path: &Path) -> Result<UnixListener, String> {
    let why = |err: io::Error| format!("socket {}: {err}", path.display());
    match fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_socket() => fs::remove_file(path).map_err(why)?,
        Ok(_) => {
            return Err(format!(
                "socket {}: exists and is not a socket",
                path.display()
            ))
        }
        Err(_) => {}
    }
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".{}.tmp", std::process::id()));
    let tmp = PathBuf::from(tmp);
    let _ = fs::remove_file(&tmp);
    let l = UnixListener::bind(&tmp).map_err(why)?;
    fs::rename(&tmp, path).map_err(why)?;
    l.set_nonblocking(true).map_err(why)?;
    Ok(l)
}

fn write_stats(path: &Path, exports: &[Arc<Export>], clock: &Clock) {
    let text = stats_json(exports, clock.now());
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    let ok = fs::write(&tmp, text).and_then(|()| fs::rename(&tmp, path));
    if let Err(e) = ok {
        eprintln!("ironlift-blkserve: stats {}: {e}", path.display());
    }
}

fn run(args: Args) -> Result<(), String> {
    let clock = Clock::start();
    let log = match &args.log {
        None => None,
        Some(p) => {
            let f = File::create(p).map_err(|e| format!("log {}: {e}", p.display()))?;
            let mut w = BufWriter::new(f);
            let _ = writeln!(
                w,
                "export,op,offset,length,arrived_ns,model_ns,sent_ns,lag_us"
            );
            Some(Arc::new(Mutex::new(w)))
        }
    };
    let exports = args
        .exports
        .iter()
        .map(|e| make_export(e, args.path_latency_us * 1000, clock, &log))
        .collect::<Result<Vec<_>, _>>()?;
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        signal_hook::flag::register(sig, stop.clone()).map_err(|e| format!("signal: {e}"))?;
    }
    let spin: Nanos = args.spin_us * 1000;
    for e in &exports {
        let e = e.clone();
        std::thread::spawn(move || e.run_timer(spin));
    }
    let listener = listen(&args.socket)?;
    let names: Vec<&str> = exports.iter().map(|e| e.name.as_str()).collect();
    println!("ready {} {}", args.socket.display(), names.join(" "));
    let _ = io::stdout().flush();
    let active = Arc::new(AtomicUsize::new(0));
    let idle = Arc::new(AtomicBool::new(false));
    let mut served = false;
    while !stop.load(Ordering::Relaxed) {
        match listener.accept() {
            Ok((stream, _)) => {
                served = true;
                let _ = stream.set_nonblocking(false);
                active.fetch_add(1, Ordering::SeqCst);
                let (exports, active, idle) = (exports.clone(), active.clone(), idle.clone());
                std::thread::spawn(move || {
                    if let Err(e) = conn::serve(stream, &exports) {
                        eprintln!("ironlift-blkserve: connection: {e}");
                    }
                    if active.fetch_sub(1, Ordering::SeqCst) == 1 {
                        idle.store(true, Ordering::SeqCst);
                    }
                });
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => eprintln!("ironlift-blkserve: accept: {e}"),
        }
        if idle.swap(false, Ordering::SeqCst) && active.load(Ordering::SeqCst) == 0 {
            write_stats(&args.stats, &exports, &clock);
            if args.exit_when_idle && served {
                break;
            }
        }
    }
    write_stats(&args.stats, &exports, &clock);
    if let Some(log) = &log {
        let _ = log.lock().map(|mut w| w.flush());
    }
    let _ = fs::remove_file(&args.socket);
    Ok(())
}

fn main() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let result = parse_args(&argv).and_then(run);
    if let Err(e) = result {
        eprintln!("ironlift-blkserve: {e}");
        std::process::exit(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Result<Args, String> {
        parse_args(&s.split_whitespace().map(String::from).collect::<Vec<_>>())
    }

    #[test]
    fn command_lines_parse_or_say_why_not() {
        let a =
            args("--device hdd-7200 --socket s --backing b --size-mb 64 --stats j --ncq-depth 1")
                .unwrap();
        assert_eq!(a.exports[0].name, "hdd-7200");
        assert_eq!(a.exports[0].ncq, Some(1));
        assert_eq!((a.spin_us, a.path_latency_us), (100, 0));
        let a =
            args("--device emmc --socket s --backing b --size-mb 1 --stats j --path-latency-us 80")
                .unwrap();
        assert_eq!(a.path_latency_us, 80);
        let a = args(
            "--socket s --stats j --export r0=hdd-raptor,b0,8 --export r1=hdd-raptor,b1,8,ncq=4",
        )
        .unwrap();
        assert_eq!(a.exports.len(), 2);
        assert_eq!(a.exports[1].ncq, Some(4));
        assert!(args("--socket s --stats j").is_err());
        assert!(args("--device x --socket s --stats j").is_err());
        assert!(args("--socket s --stats j --export r0=hdd,b").is_err());
        assert!(args("--socket s --stats j --export a=emmc,b,1 --export a=emmc,c,1").is_err());
        assert!(args("--socket s --stats j --size-mb lots").is_err());
        assert!(args("--bogus 1").is_err());
        assert!(args("--socket").is_err());
    }
}
