//! The S suite's block-level start-up traces (github Algodev-github/S,
//! `comm_startup_lat/replay-startup-io.cc`), replayed as S's replayer
//! does.
//!
//! A trace line: `proc-pid delta_s size_sectors sector Seq|Rand dist seqoff
//! action ...`, where action is `R`, `RA` (read-ahead) or `RM` (metadata).
//! The replay:
//!
//! - one thread per traced process (each its own `io_context`, so its own
//!   BFQ queue), each reading its own 20 MB file with O_DIRECT;
//! - "Seq" continues from the thread's last offset, "Rand" picks a random
//!   512-byte-aligned offset;
//! - an `RA` request (unless it is the trace's last) is submitted with
//!   native AIO on the thread's context (`io_setup(1)`, as S); any other
//!   first waits for the thread's pending AIO, then reads with `pread`;
//! - one thread at a time: a thread issues until the next request is
//!   another thread's, then hands over and waits (its AIO may still be in
//!   flight);
//! - no think time (S's replayer does not sleep either).

use crate::aio::{Buf, Context};
use crate::json::{self, TaskStat};
use std::fs;
use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::os::unix::io::AsRawFd as _;
use std::path::Path;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

/// S's per-thread file size (`OUT_FILE_SIZE`).
const FILE_SIZE: u64 = 20_000_000;
const FILE_BASENAME: &str = "replay_startup_file";

/// One request of the trace.
#[derive(Clone, Debug)]
struct Req {
    thread: usize,
    sectors: u64,
    seq: bool,
    /// `RA`: a read-ahead request (submitted asynchronously).
    ahead: bool,
}

/// A block-level trace.
pub struct Trace {
    /// Process names, by thread index (first appearance).
    names: Vec<String>,
    reqs: Vec<Req>,
}

impl Trace {
    pub fn parse(text: &str) -> Result<Trace, String> {
        let mut names: Vec<String> = Vec::new();
        let mut reqs = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let w: Vec<&str> = line.split_whitespace().collect();
            if w.is_empty() {
                continue;
            }
            if w.len() < 8 {
                return Err(format!("line {}: expected at least 8 fields", i + 1));
            }
            let thread = match names.iter().position(|n| n == w[0]) {
                Some(t) => t,
                None => {
                    names.push(w[0].to_string());
                    names.len() - 1
                }
            };
            let sectors: u64 = w[2]
                .parse()
                .map_err(|_| format!("line {}: bad size {:?}", i + 1, w[2]))?;
            if sectors == 0 || sectors * 512 >= FILE_SIZE {
                return Err(format!(
                    "line {}: size {sectors} sectors out of range",
                    i + 1
                ));
            }
            reqs.push(Req {
                thread,
                sectors,
                seq: w[4] == "Seq",
                ahead: w[7] == "RA",
            });
        }
        if reqs.is_empty() {
            return Err("no requests".into());
        }
        Ok(Trace { names, reqs })
    }

    fn path(dir: &Path, i: usize) -> std::path::PathBuf {
        dir.join(format!("{FILE_BASENAME}{i}"))
    }

    /// Creates each thread's 20 MB file (kept if it has the right size).
    pub fn prepare(&self, dir: &Path) -> Result<(), String> {
        fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let chunk = vec![0u8; 1 << 20];
        for i in 0..self.names.len() {
            let p = Self::path(dir, i);
            if fs::metadata(&p).ok().map(|m| m.len()) == Some(FILE_SIZE) {
                continue;
            }
            let mut f = fs::File::create(&p).map_err(|e| format!("{}: {e}", p.display()))?;
            let mut left = FILE_SIZE as usize;
            while left > 0 {
                let n = left.min(chunk.len());
                f.write_all(&chunk[..n])
                    .map_err(|e| format!("{}: {e}", p.display()))?;
                left -= n;
            }
            f.sync_all().map_err(|e| format!("{}: {e}", p.display()))?;
        }
        Ok(())
    }

    pub fn info(&self) -> String {
        let bytes: u64 = self.reqs.iter().map(|r| r.sectors * 512).sum();
        let ahead = self.reqs.iter().filter(|r| r.ahead).count();
        let switches = self
            .reqs
            .windows(2)
            .filter(|w| w[0].thread != w[1].thread)
            .count();
        format!(
            "{{\"mode\": \"block\", \"threads\": {}, \"ios\": {}, \"read_ahead\": {ahead}, \"bytes\": {bytes}, \"switches\": {switches}}}",
            self.names.len(),
            self.reqs.len()
        )
    }

    /// Replays the trace; the result line (see the crate docs).
    pub fn run(&self, dir: &Path) -> Result<String, String> {
        let files: Vec<fs::File> = (0..self.names.len())
            .map(|i| {
                let p = Self::path(dir, i);
                let f = fs::OpenOptions::new()
                    .read(true)
                    .custom_flags(libc::O_DIRECT)
                    .open(&p)
                    .map_err(|e| format!("{}: {e} (run prepare first)", p.display()))?;
                // SAFETY: a valid descriptor; advice only.
                unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
                Ok(f)
            })
            .collect::<Result<_, String>>()?;
        let reqs = Arc::new(self.reqs.clone());
        let turn = Arc::new((Mutex::new(Turn { next: 0, thread: 0 }), Condvar::new()));
        let t0 = Instant::now();
        let handles: Vec<_> = files
            .into_iter()
            .enumerate()
            .map(|(id, f)| {
                let (reqs, turn) = (reqs.clone(), turn.clone());
                std::thread::spawn(move || worker(id, f, &reqs, &turn, t0))
            })
            .collect();
        let mut tasks = Vec::new();
        for (h, name) in handles.into_iter().zip(&self.names) {
            let mut st = h
                .join()
                .map_err(|_| "a replay thread panicked".to_string())??;
            st.name = name.clone();
            tasks.push(st);
        }
        Ok(json::result("block", t0.elapsed().as_secs_f64(), &tasks))
    }
}

/// Whose turn it is, and the next request's index.
struct Turn {
    next: usize,
    thread: usize,
}

/// A small deterministic generator for "Rand" offsets.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// One replay thread: waits for its turn, issues its run of requests,
/// hands over; drains its AIO (destroying the context) at the end.
fn worker(
    id: usize,
    file: fs::File,
    reqs: &[Req],
    turn: &(Mutex<Turn>, Condvar),
    t0: Instant,
) -> Result<TaskStat, String> {
    let fd = file.as_raw_fd();
    let mut ctx = Context::new(1).map_err(|e| format!("io_setup: {e}"))?;
    let mut st = TaskStat {
        name: String::new(),
        ops: 0,
        bytes: 0,
        io_wait_s: 0.0,
        end_s: 0.0,
    };
    let mut offset = 0u64;
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ (id as u64 + 1));
    let (lock, cv) = turn;
    loop {
        let mut g = lock.lock().unwrap();
        while g.thread != id && g.next < reqs.len() {
            g = cv.wait(g).unwrap();
        }
        if g.next >= reqs.len() {
            break;
        }
        while g.next < reqs.len() && reqs[g.next].thread == id {
            let last = g.next + 1 == reqs.len();
            issue(
                &reqs[g.next],
                last,
                fd,
                &mut ctx,
                &mut offset,
                &mut rng,
                &mut st,
            )?;
            g.next += 1;
        }
        if g.next < reqs.len() {
            g.thread = reqs[g.next].thread;
        }
        cv.notify_all();
    }
    let w = Instant::now();
    drop(ctx);
    st.io_wait_s += w.elapsed().as_secs_f64();
    st.end_s = t0.elapsed().as_secs_f64();
    Ok(st)
}

/// Issues one request as S's `issue_next_rq` does.
fn issue(
    r: &Req,
    last: bool,
    fd: i32,
    ctx: &mut Context,
    offset: &mut u64,
    rng: &mut Rng,
    st: &mut TaskStat,
) -> Result<(), String> {
    let len = r.sectors * 512;
    if r.seq {
        if *offset >= FILE_SIZE - len {
            *offset = 0;
        }
    } else {
        *offset = rng.next() % (FILE_SIZE / 512 - r.sectors) * 512;
    }
    let buf = Buf::new(len as usize).map_err(|e| format!("buffer: {e}"))?;
    if r.ahead && !last {
        ctx.submit_read(fd, buf, *offset)
            .map_err(|e| format!("io_submit: {e}"))?;
    } else {
        let w = Instant::now();
        if ctx.pending() > 0 {
            ctx.drain().map_err(|e| format!("io_getevents: {e}"))?;
        }
        // SAFETY: `buf` holds `len` bytes.
        let n = unsafe { libc::pread(fd, buf.ptr().cast(), len as usize, *offset as i64) };
        if n < 0 {
            return Err(format!("pread: {}", std::io::Error::last_os_error()));
        }
        st.io_wait_s += w.elapsed().as_secs_f64();
    }
    st.ops += 1;
    st.bytes += len;
    *offset += len;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const TRACE: &str = "\
a-1 0 8 100 Rand 0 0 RM 0.1 START
a-1 .01 8 108 Seq 0 8 RA 0.1 C
a-1 .01 8 116 Seq 0 16 RA 0.1 C
b-2 .01 16 900 Rand 0 0 R 0.1 C
a-1 .01 8 124 Seq 0 24 R 0.1 C
";

    #[test]
    fn parses_processes_and_actions() {
        let t = Trace::parse(TRACE).unwrap();
        assert_eq!(t.names, ["a-1", "b-2"]);
        assert_eq!(t.reqs.len(), 5);
        assert!(t.reqs[1].ahead && t.reqs[1].seq && !t.reqs[0].ahead);
        assert_eq!(t.reqs[3].thread, 1);
        assert!(t
            .info()
            .contains("\"threads\": 2, \"ios\": 5, \"read_ahead\": 2"));
        assert!(Trace::parse("a 0 8 1 Seq\n").is_err());
        assert!(Trace::parse("").is_err());
    }

    #[test]
    fn replays_with_direct_io() {
        let t = Trace::parse(TRACE).unwrap();
        // The temporary folder, or where its file system has no O_DIRECT
        // (EINVAL: tmpfs before Linux 6.6), the test binary's folder in
        // the build's target folder.
        let exe = std::env::current_exe().unwrap();
        let mut refused = Vec::new();
        for base in [std::env::temp_dir().as_path(), exe.parent().unwrap()] {
            let dir = base.join(format!("startup-replay-block-{}", std::process::id()));
            t.prepare(&dir).unwrap();
            let out = t.run(&dir);
            let _ = fs::remove_dir_all(&dir);
            match out {
                Ok(out) => {
                    assert!(out.contains("\"ios\": 5, \"bytes\": 24576"), "{out}");
                    return;
                }
                Err(e) if e.contains("Invalid argument") => {
                    refused.push(format!("{}: {e}", base.display()));
                }
                Err(e) => panic!("{e}"),
            }
        }
        panic!("no folder whose file system has O_DIRECT: {refused:?}");
    }
}
