//! QEMU's monitor for the guest's hot-removal test (`fault_hot_remove` in
//! qemu/guest/tests_faults.sh).
//!
//! QEMU listens for QMP on a Unix socket of this run; a thread here
//! connects, and serves the guest's requests, which come as files in its
//! output share: `monitor/<n>.req` holds `del NAME` or `add NAME`, NAME a
//! disk of configs/devices/guest.toml. `del` is `device_del` of the disk's
//! `-device` (its `id=`): an ACPI hot-unplug request the guest acts on.
//! `add` waits until QEMU has let the old device go, makes the drive again
//! on the same backing file (`drive_add`: QEMU deletes a `-drive` with its
//! device) and adds the device (`device_add`). The answer goes to
//! `monitor/<n>.resp`: `ok`, or what went wrong.

use crate::devices::QemuDisk;
use crate::qemu;
use anyhow::{bail, Context, Result};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A disk the guest may ask to unplug and plug back.
#[derive(Clone, Debug)]
pub struct HotDisk {
    /// Its `-drive` value (`drive_add` takes the same).
    pub drive: String,
    pub drive_id: String,
    /// The `-device` that names the drive, and its `id=`.
    pub device: String,
    pub id: String,
}

impl HotDisk {
    /// The disk `q` backed by `image`; an error if its `-device` has no
    /// `id=` to unplug it by.
    pub fn new(q: &QemuDisk, image: &Path) -> Result<HotDisk> {
        let drive_id = q.drive_id()?.to_string();
        let device = q
            .devices
            .iter()
            .find(|d| d.split(',').any(|p| p == format!("drive={drive_id}")))
            .context("a device naming the drive")?
            .clone();
        let Some(id) = device.split(',').find_map(|p| p.strip_prefix("id=")) else {
            bail!("the -device {device:?} has no id=, which device_del needs");
        };
        Ok(HotDisk {
            drive: qemu::drive_spec(q, image)?,
            drive_id,
            id: id.to_string(),
            device,
        })
    }
}

/// The monitor thread of one boot.
pub struct Monitor {
    socket: PathBuf,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Vec<String>>>,
}

impl Monitor {
    /// Starts serving the guest whose output share is `out`, for `disks` by
    /// name; QEMU must be given [`Monitor::qemu_args`].
    pub fn start(out: &Path, disks: BTreeMap<String, HotDisk>) -> Result<Monitor> {
        let socket = std::env::temp_dir().join(format!("ironlift-qmp-{}.sock", std::process::id()));
        let _ = fs::remove_file(&socket);
        let dir = out.join("monitor");
        fs::create_dir_all(&dir)?;
        let stop = Arc::new(AtomicBool::new(false));
        let (s, st) = (socket.clone(), stop.clone());
        let thread = std::thread::spawn(move || serve(&s, &dir, &disks, &st));
        Ok(Monitor {
            socket,
            stop,
            thread: Some(thread),
        })
    }

    pub fn qemu_args(&self) -> Vec<String> {
        vec![
            "-qmp".to_string(),
            format!("unix:{},server=on,wait=off", self.socket.display()),
        ]
    }

    /// Stops the thread: what it did, a line per request.
    pub fn stop(mut self) -> Vec<String> {
        self.stop.store(true, Ordering::Relaxed);
        let log = self
            .thread
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_default();
        let _ = fs::remove_file(&self.socket);
        log
    }
}

/// One QMP connection.
struct Qmp {
    w: UnixStream,
    r: BufReader<UnixStream>,
}

impl Qmp {
    fn connect(socket: &Path) -> Result<Qmp> {
        let w = UnixStream::connect(socket)?;
        w.set_read_timeout(Some(Duration::from_secs(30)))?;
        let mut q = Qmp {
            r: BufReader::new(w.try_clone()?),
            w,
        };
        q.line().context("QMP greeting")?;
        q.execute("qmp_capabilities", json!({}))?;
        Ok(q)
    }

    fn line(&mut self) -> Result<Value> {
        let mut l = String::new();
        if self.r.read_line(&mut l)? == 0 {
            bail!("QEMU closed the monitor");
        }
        Ok(serde_json::from_str(&l)?)
    }

    /// Runs a QMP command: its `return`, or its error as an error.
    fn execute(&mut self, cmd: &str, args: Value) -> Result<Value> {
        let msg = json!({ "execute": cmd, "arguments": args });
        writeln!(self.w, "{msg}")?;
        loop {
            let v = self.line()?;
            if let Some(r) = v.get("return") {
                return Ok(r.clone());
            }
            if let Some(e) = v.get("error") {
                bail!("{cmd}: {}", e["desc"].as_str().unwrap_or("error"));
            }
            // An event: not the answer.
        }
    }

    /// Runs an HMP command: an error if it printed anything (HMP's
    /// `drive_add` says "OK" when it worked).
    fn hmp(&mut self, line: &str) -> Result<()> {
        let r = self.execute("human-monitor-command", json!({ "command-line": line }))?;
        let said = r.as_str().unwrap_or("").trim();
        if !said.is_empty() && said != "OK" {
            bail!("{line}: {said}");
        }
        Ok(())
    }

    /// Whether a device with `id` is still plugged.
    fn has_device(&mut self, id: &str) -> Result<bool> {
        let r = self.execute("qom-list", json!({ "path": "/machine/peripheral" }))?;
        Ok(r.as_array()
            .map(|a| a.iter().any(|p| p["name"] == id))
            .unwrap_or(false))
    }
}

fn serve(
    socket: &Path,
    dir: &Path,
    disks: &BTreeMap<String, HotDisk>,
    stop: &AtomicBool,
) -> Vec<String> {
    let mut log = Vec::new();
    let mut qmp: Option<Qmp> = None;
    let mut next = 1;
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(100));
        let req = dir.join(format!("{next}.req"));
        let Ok(text) = fs::read_to_string(&req) else {
            continue;
        };
        if qmp.is_none() {
            match Qmp::connect(socket) {
                Ok(q) => qmp = Some(q),
                Err(e) => log.push(format!("connecting to {}: {e:#}", socket.display())),
            }
        }
        let answer = match qmp.as_mut() {
            Some(q) => request(q, text.trim(), disks),
            None => Err(anyhow::anyhow!("no connection to QEMU's monitor")),
        };
        let line = match &answer {
            Ok(()) => "ok".to_string(),
            Err(e) => format!("{e:#}"),
        };
        log.push(format!("{}: {line}", text.trim()));
        let _ = fs::write(dir.join(format!("{next}.resp")), format!("{line}\n"));
        next += 1;
    }
    log
}

/// Carries out one request of the guest.
fn request(q: &mut Qmp, req: &str, disks: &BTreeMap<String, HotDisk>) -> Result<()> {
    let (verb, name) = req.split_once(' ').unwrap_or((req, ""));
    let d = disks
        .get(name)
        .with_context(|| format!("no disk {name:?} to plug (there are {:?})", disks.keys()))?;
    match verb {
        "del" => q.execute("device_del", json!({ "id": d.id })).map(|_| ()),
        "add" => {
            let t0 = Instant::now();
            while q.has_device(&d.id)? {
                if t0.elapsed() > Duration::from_secs(30) {
                    bail!("QEMU still has {} 30 s after the guest let it go", d.id);
                }
                std::thread::sleep(Duration::from_millis(200));
            }
            // QEMU deleted the drive with its device; if not, it goes now.
            let _ = q.hmp(&format!("drive_del {}", d.drive_id));
            q.hmp(&format!("drive_add 0 {}", d.drive))?;
            q.hmp(&format!("device_add {}", d.device))
        }
        _ => bail!("unknown request {req:?} (del NAME or add NAME)"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hot_disk_is_unplugged_by_its_devices_id() {
        let q = QemuDisk {
            size_mb: 1,
            devices: vec!["nvme,serial=s,drive=nvme0,id=nvme0-dev".into()],
        };
        let d = HotDisk::new(&q, Path::new("/d/n.img")).unwrap();
        assert_eq!(d.id, "nvme0-dev");
        assert_eq!(d.drive_id, "nvme0");
        assert_eq!(d.device, "nvme,serial=s,drive=nvme0,id=nvme0-dev");
        assert!(d.drive.starts_with("file=/d/n.img,if=none,id=nvme0,"));
        let no_id = QemuDisk {
            size_mb: 1,
            devices: vec!["virtio-blk-pci,drive=vd0".into()],
        };
        let e = HotDisk::new(&no_id, Path::new("/d/v.img")).unwrap_err();
        assert!(e.to_string().contains("no id="), "{e}");
    }

    #[test]
    fn the_guests_disks_can_be_unplugged() {
        let all = crate::devices::load(&crate::util::repo_root()).unwrap();
        for name in crate::faults::HOTPLUG_DEVICES {
            let q = all[*name].qemu.as_ref().unwrap();
            HotDisk::new(q, Path::new("/d/x.img")).unwrap();
        }
    }
}
