//! File-level start-up traces (`# ironlift-startup-trace 1`): the format,
//! laying out the files, and the replay through the page cache.
//!
//! The format (configs/startup/traces/README.md), tab-separated:
//!
//! ```text
//! # ironlift-startup-trace 1
//! # key: value                  header: app, command, kernel, fs, times, method
//! F  fid  kind  size  path      kind f (file), d (folder), n (absent); first-access order
//! T  pid  tid  comm             a task's name
//! t_us  think_us  pid  tid  op  args...
//! ```
//!
//! Ops: `fork CHILD_PID`, `thread CHILD_TID`, `wait CHILD_PID`, `exec FID`,
//! `open FID`, `read FID OFFSET LEN`, `fault FID OFFSET`, `stat FID`,
//! `readdir FID`, `exit`. `think_us` is the time the task computed before
//! the op (slept by the replay).
//!
//! The replay: one process per recorded pid (`fork` at its recorded place
//! in its parent's ops; a pid whose creation the trace lacks starts with
//! the replay), one thread per recorded tid (`std::thread`, so each has
//! its own `io_context`, as threads made without `CLONE_IO` have). Reads
//! are buffered `pread`s, so the kernel's read-ahead acts as in the real
//! start-up; a fault maps the file and reads a byte of the page, so the
//! fault's read-around acts; `stat`, `readdir` and `open` do the metadata
//! I/O. A task ends after joining the threads and waiting for the
//! processes it made.

use crate::json::{self, TaskStat};
use std::collections::HashMap;
use std::ffi::CString;
use std::fs;
use std::io::Write as _;
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The first line of a file-level trace.
pub const MAGIC: &str = "# ironlift-startup-trace 1";

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    File,
    Dir,
    Absent,
}

struct FileEnt {
    kind: Kind,
    size: u64,
    /// Relative to the replay folder.
    rel: PathBuf,
}

#[derive(Clone, Copy, Debug)]
enum OpKind {
    Fork(usize),
    Thread(usize),
    Wait(u32),
    Exec(usize),
    Open(usize),
    Read(usize, u64, u64),
    Fault(usize, u64),
    Stat(usize),
    Readdir(usize),
    Exit,
}

#[derive(Clone, Copy, Debug)]
struct Op {
    think_ns: u64,
    kind: OpKind,
}

struct Task {
    pid: u32,
    tid: u32,
    comm: String,
    ops: Vec<Op>,
    /// Made by a `fork` or `thread` op of another task.
    created: bool,
}

/// A file-level trace.
pub struct Trace {
    header: Vec<(String, String)>,
    files: Vec<FileEnt>,
    tasks: Vec<Task>,
}

fn num<T: std::str::FromStr>(w: Option<&&str>, what: &str) -> Result<T, String> {
    w.and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("bad or missing {what}"))
}

impl Trace {
    /// The task of (pid, tid), added if new.
    fn task(&mut self, pid: u32, tid: u32) -> usize {
        if let Some(i) = self.tasks.iter().position(|t| t.pid == pid && t.tid == tid) {
            return i;
        }
        self.tasks.push(Task {
            pid,
            tid,
            comm: String::new(),
            ops: Vec::new(),
            created: false,
        });
        self.tasks.len() - 1
    }

    fn fid(&self, w: Option<&&str>) -> Result<usize, String> {
        let f: usize = num(w, "file id")?;
        if f >= self.files.len() {
            return Err(format!("file id {f} not in the file table"));
        }
        Ok(f)
    }

    pub fn parse(text: &str) -> Result<Trace, String> {
        let mut t = Trace {
            header: Vec::new(),
            files: Vec::new(),
            tasks: Vec::new(),
        };
        for (i, line) in text.lines().enumerate().skip(1) {
            t.parse_line(line)
                .map_err(|e| format!("line {}: {e}", i + 1))?;
        }
        if t.tasks.is_empty() {
            return Err("no operations".into());
        }
        Ok(t)
    }

    fn parse_line(&mut self, line: &str) -> Result<(), String> {
        if let Some(h) = line.strip_prefix("# ") {
            if let Some((k, v)) = h.split_once(':') {
                self.header.push((k.trim().into(), v.trim().into()));
            }
            return Ok(());
        }
        let w: Vec<&str> = line.split('\t').collect();
        match w.first().copied() {
            None | Some("") => Ok(()),
            Some("F") => {
                let fid: usize = num(w.get(1), "file id")?;
                if fid != self.files.len() || w.len() != 5 {
                    return Err("F lines: F fid kind size path, fids in order from 0".into());
                }
                let kind = match w[2] {
                    "f" => Kind::File,
                    "d" => Kind::Dir,
                    "n" => Kind::Absent,
                    k => return Err(format!("file kind {k:?}")),
                };
                let rel = PathBuf::from(w[4].trim_start_matches('/'));
                if rel
                    .components()
                    .any(|c| !matches!(c, std::path::Component::Normal(_)))
                {
                    return Err(format!("path {:?} must be absolute, without . or ..", w[4]));
                }
                let size = num(w.get(3), "size")?;
                self.files.push(FileEnt { kind, size, rel });
                Ok(())
            }
            Some("T") => {
                let i = self.task(num(w.get(1), "pid")?, num(w.get(2), "tid")?);
                self.tasks[i].comm = w.get(3).unwrap_or(&"").to_string();
                Ok(())
            }
            Some(_) => self.parse_op(&w),
        }
    }

    fn parse_op(&mut self, w: &[&str]) -> Result<(), String> {
        let think_us: f64 = num(w.get(1), "think_us")?;
        let (pid, tid) = (num(w.get(2), "pid")?, num(w.get(3), "tid")?);
        let a = |k: usize| w.get(5 + k);
        let kind = match w.get(4).copied().unwrap_or("") {
            "fork" => {
                let c: u32 = num(a(0), "child pid")?;
                let i = self.task(c, c);
                self.tasks[i].created = true;
                OpKind::Fork(i)
            }
            "thread" => {
                let i = self.task(pid, num(a(0), "child tid")?);
                self.tasks[i].created = true;
                OpKind::Thread(i)
            }
            "wait" => OpKind::Wait(num(a(0), "child pid")?),
            "exec" => OpKind::Exec(self.fid(a(0))?),
            "open" => OpKind::Open(self.fid(a(0))?),
            "read" => OpKind::Read(self.fid(a(0))?, num(a(1), "offset")?, num(a(2), "length")?),
            "fault" => OpKind::Fault(self.fid(a(0))?, num(a(1), "offset")?),
            "stat" => OpKind::Stat(self.fid(a(0))?),
            "readdir" => OpKind::Readdir(self.fid(a(0))?),
            "exit" => OpKind::Exit,
            o => return Err(format!("unknown op {o:?}")),
        };
        let i = self.task(pid, tid);
        self.tasks[i].ops.push(Op {
            think_ns: (think_us.max(0.0) * 1000.0) as u64,
            kind,
        });
        Ok(())
    }

    /// Creates the file table under `dir`, in first-access order, so the
    /// layout on disk follows the trace: folders, files of their recorded
    /// size (pseudo-random content), and the folders of absent paths.
    pub fn prepare(&self, dir: &Path) -> Result<(), String> {
        let err = |p: &Path, e: std::io::Error| format!("{}: {e}", p.display());
        let mut rng = 0x2545_f491_4f6c_dd1du64;
        let mut chunk = vec![0u8; 1 << 16];
        for f in &self.files {
            let p = dir.join(&f.rel);
            match f.kind {
                Kind::Dir => fs::create_dir_all(&p).map_err(|e| err(&p, e))?,
                Kind::Absent => {
                    if let Some(d) = p.parent() {
                        fs::create_dir_all(d).map_err(|e| err(d, e))?;
                    }
                }
                Kind::File => {
                    if fs::metadata(&p).ok().map(|m| m.len()) == Some(f.size) {
                        continue;
                    }
                    if let Some(d) = p.parent() {
                        fs::create_dir_all(d).map_err(|e| err(d, e))?;
                    }
                    let mut out = fs::File::create(&p).map_err(|e| err(&p, e))?;
                    let mut left = f.size as usize;
                    while left > 0 {
                        for b in chunk.chunks_mut(8) {
                            rng ^= rng << 13;
                            rng ^= rng >> 7;
                            rng ^= rng << 17;
                            b.copy_from_slice(&rng.to_le_bytes()[..b.len()]);
                        }
                        let n = left.min(chunk.len());
                        out.write_all(&chunk[..n]).map_err(|e| err(&p, e))?;
                        left -= n;
                    }
                }
            }
        }
        // SAFETY: no arguments.
        unsafe { libc::sync() };
        Ok(())
    }

    pub fn info(&self) -> String {
        let mut by: HashMap<&str, u64> = HashMap::new();
        let (mut read_bytes, mut think_ns) = (0u64, 0u64);
        for o in self.tasks.iter().flat_map(|t| &t.ops) {
            let name = match o.kind {
                OpKind::Fork(_) => "fork",
                OpKind::Thread(_) => "thread",
                OpKind::Wait(_) => "wait",
                OpKind::Exec(_) => "exec",
                OpKind::Open(_) => "open",
                OpKind::Read(_, _, n) => {
                    read_bytes += n;
                    "read"
                }
                OpKind::Fault(..) => "fault",
                OpKind::Stat(_) => "stat",
                OpKind::Readdir(_) => "readdir",
                OpKind::Exit => "exit",
            };
            *by.entry(name).or_default() += 1;
            think_ns += o.think_ns;
        }
        let mut ops: Vec<_> = by.into_iter().collect();
        ops.sort();
        let pids: std::collections::BTreeSet<u32> = self.tasks.iter().map(|t| t.pid).collect();
        let file_bytes: u64 = self
            .files
            .iter()
            .filter(|f| f.kind == Kind::File)
            .map(|f| f.size)
            .sum();
        let header: Vec<String> = self
            .header
            .iter()
            .map(|(k, v)| format!("{}: {}", json::string(k), json::string(v)))
            .collect();
        format!(
            "{{\"mode\": \"file\", \"header\": {{{}}}, \"processes\": {}, \"tasks\": {}, \"files\": {}, \"file_bytes\": {file_bytes}, \"read_bytes\": {read_bytes}, \"think_s\": {:.6}, \"ops\": {{{}}}}}",
            header.join(", "),
            pids.len(),
            self.tasks.len(),
            self.files.len(),
            think_ns as f64 / 1e9,
            ops.iter()
                .map(|(k, v)| format!("\"{k}\": {v}"))
                .collect::<Vec<_>>()
                .join(", ")
        )
    }

    /// Replays the trace from `dir` (prepared); the result line.
    pub fn run(&self, dir: &Path, think: bool) -> Result<String, String> {
        let shared = Shared::new(self.tasks.len())?;
        let paths: Vec<CString> = self
            .files
            .iter()
            .map(|f| CString::new(dir.join(&f.rel).as_os_str().as_bytes()).unwrap())
            .collect();
        let r = Replay {
            trace: self,
            paths,
            shared,
            t0: Instant::now(),
            think,
        };
        // The whole replay runs in scoped threads and forked processes of
        // this one; every process waits for what it made before it ends.
        let roots: Vec<usize> = (0..self.tasks.len())
            .filter(|&i| !self.tasks[i].created && self.tasks[i].tid == self.tasks[i].pid)
            .collect();
        let Some(&first) = roots.first() else {
            return Err("no task starts the trace (a pid whose tid is its pid)".into());
        };
        let mut kids = Vec::new();
        for &i in &roots[1..] {
            kids.push(r.fork(i)?);
        }
        r.task(first);
        for k in kids {
            wait_pid(k);
        }
        let startup_s = r.t0.elapsed().as_secs_f64();
        let tasks: Vec<TaskStat> = self
            .tasks
            .iter()
            .enumerate()
            .map(|(i, t)| {
                r.shared
                    .stat(i, format!("{} ({}/{})", t.comm, t.pid, t.tid))
            })
            .collect();
        Ok(json::result("file", startup_s, &tasks))
    }
}

/// Per-task counters in memory shared by the replay's processes: ops,
/// bytes, I/O wait (ns), end (ns after the start).
struct Shared {
    base: *mut AtomicU64,
    n: usize,
}

// SAFETY: the counters are atomics in a mapping that outlives the replay.
unsafe impl Sync for Shared {}

impl Shared {
    fn new(n: usize) -> Result<Shared, String> {
        let len = (n * 4 * 8).max(8);
        // SAFETY: an anonymous shared mapping, zeroed by the kernel.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(format!("mmap: {}", std::io::Error::last_os_error()));
        }
        Ok(Shared { base: p.cast(), n })
    }

    fn at(&self, task: usize, k: usize) -> &AtomicU64 {
        assert!(task < self.n && k < 4);
        // SAFETY: in bounds of the mapping; AtomicU64 has u64's layout.
        unsafe { &*self.base.add(task * 4 + k) }
    }

    fn stat(&self, i: usize, name: String) -> TaskStat {
        let g = |k| self.at(i, k).load(Ordering::Relaxed);
        TaskStat {
            name,
            ops: g(0),
            bytes: g(1),
            io_wait_s: g(2) as f64 / 1e9,
            end_s: g(3) as f64 / 1e9,
        }
    }
}

fn wait_pid(pid: libc::pid_t) {
    let mut status = 0;
    // SAFETY: waits for our own child.
    while unsafe { libc::waitpid(pid, &mut status, 0) } < 0
        && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted
    {}
}

struct Replay<'a> {
    trace: &'a Trace,
    paths: Vec<CString>,
    shared: Shared,
    t0: Instant,
    think: bool,
}

/// What one task holds while it replays.
#[derive(Default)]
struct TaskState {
    fds: HashMap<usize, i32>,
    maps: HashMap<usize, *const u8>,
    buf: Vec<u8>,
}

impl Replay<'_> {
    /// Forks a process that replays task `i` and what it makes, then exits.
    fn fork(&self, i: usize) -> Result<libc::pid_t, String> {
        // SAFETY: the child only replays (allocating through glibc, which
        // is fork-safe) and leaves with _exit.
        match unsafe { libc::fork() } {
            -1 => Err(format!("fork: {}", std::io::Error::last_os_error())),
            0 => {
                self.task(i);
                // SAFETY: ends the child without running the parent's exit handlers.
                unsafe { libc::_exit(0) }
            }
            pid => Ok(pid),
        }
    }

    /// Replays task `i`, then joins its threads and waits for its processes.
    fn task(&self, i: usize) {
        std::thread::scope(|s| {
            let mut st = TaskState::default();
            let mut kids: Vec<(u32, libc::pid_t)> = Vec::new();
            for op in &self.trace.tasks[i].ops {
                if self.think && op.think_ns >= 10_000 {
                    std::thread::sleep(Duration::from_nanos(op.think_ns));
                }
                match op.kind {
                    OpKind::Fork(c) => match self.fork(c) {
                        Ok(pid) => kids.push((self.trace.tasks[c].pid, pid)),
                        Err(e) => eprintln!("startup-replay: {e}"),
                    },
                    OpKind::Thread(c) => {
                        s.spawn(move || self.task(c));
                    }
                    OpKind::Wait(p) => {
                        if let Some(k) = kids.iter().position(|k| k.0 == p) {
                            wait_pid(kids.remove(k).1);
                        }
                    }
                    OpKind::Exit => break,
                    _ => self.io(i, op.kind, &mut st),
                }
            }
            let end = self.t0.elapsed().as_nanos() as u64;
            self.shared.at(i, 3).store(end, Ordering::Relaxed);
            for (_, pid) in kids {
                wait_pid(pid);
            }
            for (f, p) in st.maps {
                let len = self.trace.files[f].size as usize;
                // SAFETY: our own mapping of `len` bytes.
                unsafe { libc::munmap(p as *mut libc::c_void, len) };
            }
            for (_, fd) in st.fds {
                // SAFETY: our own descriptor.
                unsafe { libc::close(fd) };
            }
        });
    }

    /// The file's descriptor in this task, opened on first use (-1 if it
    /// cannot be opened, as an absent path).
    fn fd(&self, f: usize, st: &mut TaskState) -> i32 {
        *st.fds.entry(f).or_insert_with(|| {
            let dir = self.trace.files[f].kind == Kind::Dir;
            let flags = libc::O_RDONLY | libc::O_CLOEXEC | if dir { libc::O_DIRECTORY } else { 0 };
            // SAFETY: a NUL-terminated path.
            unsafe { libc::open(self.paths[f].as_ptr(), flags) }
        })
    }

    /// One I/O op of task `i`, timed into its counters.
    fn io(&self, i: usize, op: OpKind, st: &mut TaskState) {
        let w = Instant::now();
        let mut bytes = 0u64;
        match op {
            OpKind::Open(f) => {
                self.fd(f, st);
            }
            OpKind::Exec(f) => bytes = self.pread(f, 0, 256, st),
            OpKind::Read(f, off, len) => bytes = self.pread(f, off, len, st),
            OpKind::Fault(f, off) => bytes = self.touch(f, off, st),
            OpKind::Stat(f) => {
                // SAFETY: a NUL-terminated path and a stat buffer.
                let mut sb: libc::stat = unsafe { std::mem::zeroed() };
                unsafe { libc::stat(self.paths[f].as_ptr(), &mut sb) };
            }
            OpKind::Readdir(f) => {
                let p = std::ffi::OsStr::from_bytes(self.paths[f].as_bytes());
                if let Ok(rd) = fs::read_dir(p) {
                    rd.for_each(drop);
                }
            }
            _ => {}
        }
        self.shared.at(i, 0).fetch_add(1, Ordering::Relaxed);
        self.shared.at(i, 1).fetch_add(bytes, Ordering::Relaxed);
        let ns = w.elapsed().as_nanos() as u64;
        self.shared.at(i, 2).fetch_add(ns, Ordering::Relaxed);
    }

    fn pread(&self, f: usize, off: u64, len: u64, st: &mut TaskState) -> u64 {
        let fd = self.fd(f, st);
        if fd < 0 || len == 0 {
            return 0;
        }
        if st.buf.len() < len as usize {
            st.buf.resize(len as usize, 0);
        }
        // SAFETY: `buf` holds `len` bytes.
        let n = unsafe { libc::pread(fd, st.buf.as_mut_ptr().cast(), len as usize, off as i64) };
        n.max(0) as u64
    }

    /// Maps the file (once per task) and reads a byte at `off`: the fault.
    fn touch(&self, f: usize, off: u64, st: &mut TaskState) -> u64 {
        let size = self.trace.files[f].size;
        if off >= size {
            return 0;
        }
        let fd = self.fd(f, st);
        if fd < 0 {
            return 0;
        }
        let p = *st.maps.entry(f).or_insert_with(|| {
            // SAFETY: a read-only private mapping of the whole file.
            let p = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    size as usize,
                    libc::PROT_READ,
                    libc::MAP_PRIVATE,
                    fd,
                    0,
                )
            };
            if p == libc::MAP_FAILED {
                std::ptr::null()
            } else {
                p as *const u8
            }
        });
        if p.is_null() {
            return 0;
        }
        // SAFETY: `off` is inside the mapping.
        unsafe { std::ptr::read_volatile(p.add(off as usize)) };
        4096
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A trace with every op: a process with a thread, a child process
    /// waited for, reads, a fault, metadata and an absent path.
    const TRACE: &str = "# ironlift-startup-trace 1
# app: test
F\t0\tf\t20000\t/usr/bin/app
F\t1\td\t0\t/usr/lib
F\t2\tf\t9000\t/usr/lib/libx.so
F\t3\tn\t0\t/etc/missing
T\t10\t10\tapp
0\t0\t10\t10\texec\t0
5\t0\t10\t10\topen\t2
6\t0\t10\t10\tread\t2\t0\t832
7\t0\t10\t10\tfault\t2\t4096
8\t0\t10\t10\tstat\t3
9\t0\t10\t10\treaddir\t1
10\t0\t10\t10\tthread\t11
11\t0\t10\t11\tread\t0\t8192\t4096
12\t0\t10\t10\tfork\t12
13\t20\t12\t12\tread\t2\t100\t10
14\t0\t10\t10\twait\t12
";

    #[test]
    fn parses_the_format_and_refuses_bad_lines() {
        let t = Trace::parse(TRACE).unwrap();
        assert_eq!(t.files.len(), 4);
        assert_eq!(t.tasks.len(), 3);
        assert!(t.tasks[1].created && t.tasks[2].created && !t.tasks[0].created);
        assert_eq!(t.tasks[0].ops.len(), 9);
        assert!(t
            .info()
            .contains("\"processes\": 2, \"tasks\": 3, \"files\": 4"));
        for bad in [
            "F\t1\tf\t1\t/a\n",            // fids in order from 0
            "F\t0\tf\t1\t/a/../b\n",       // no ..
            "0\t0\t1\t1\tread\t5\t0\t1\n", // fid outside the table
            "0\t0\t1\t1\tjump\n",          // unknown op
        ] {
            assert!(Trace::parse(&format!("{MAGIC}\n{bad}")).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn prepares_and_replays_every_op() {
        let dir = std::env::temp_dir().join(format!("startup-replay-test-{}", std::process::id()));
        let t = Trace::parse(TRACE).unwrap();
        t.prepare(&dir).unwrap();
        assert_eq!(
            fs::metadata(dir.join("usr/lib/libx.so")).unwrap().len(),
            9000
        );
        assert!(dir.join("etc").is_dir() && !dir.join("etc/missing").exists());
        let out = t.run(&dir, true).unwrap();
        let _ = fs::remove_dir_all(&dir);
        // Main: exec 256 + read 832 + fault 4096, and open, stat, readdir;
        // the thread 4096, the child 10.
        assert!(out.contains("\"ios\": 8, \"bytes\": 9290"), "{out}");
        assert!(
            out.contains("\"name\": \"app (10/10)\", \"ops\": 6"),
            "{out}"
        );
        assert!(
            out.contains("\"name\": \" (12/12)\", \"ops\": 1, \"bytes\": 10"),
            "{out}"
        );
    }
}
