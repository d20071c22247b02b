//! File system workloads after two benchmarks that Debian does not
//! package, for the phoronix suite (configs/suites/phoronix.toml): each
//! prints `key value` lines that xtask reads (suite/tool/parse.rs).
//!
//! - `blogbench DIR SECONDS WRITERS REWRITERS COMMENTERS READERS`: after
//!   Frank Denis's BlogBench, a blog server's files. Writers make blogs
//!   (folders) of articles (files of 4–64 KiB); rewriters replace a random
//!   article; commenters append 1–4 KiB to a random article's comments;
//!   readers read a random article whole. Prints `reads_s` and `writes_s`:
//!   article reads, and writes of any of the three kinds, per second
//!   (BlogBench prints the counts per iteration as its scores).
//! - `compilebench DIR FOLDERS FILES`: after Chris Mason's compilebench, a
//!   source tree's life. Initial create: FOLDERS × FILES sources of 1–64
//!   KiB (log-uniform, so most are small, as a kernel tree's), then sync;
//!   compile: each source read and an object of 3/4 its size written, then
//!   sync; read tree: every file read, the cache dropped first. Prints
//!   `create_mb_s`, `compile_mb_s` (bytes written) and `read_mb_s`.
//!
//! Sizes and choices come from a fixed-seed generator, so every run does
//! the same work.

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// xorshift64*: small, fast and the same everywhere.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// Uniform in lo..=hi.
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo + 1)
    }
    /// Log-uniform in lo..=hi.
    fn log_range(&mut self, lo: u64, hi: u64) -> u64 {
        let (a, b) = ((lo as f64).ln(), (hi as f64).ln());
        let u = (self.next() >> 11) as f64 / (1u64 << 53) as f64;
        ((a + u * (b - a)).exp() as u64).clamp(lo, hi)
    }
}

fn write_file(path: &Path, bytes: usize, append: bool) -> std::io::Result<()> {
    let mut f = OpenOptions::new()
        .create(true)
        .write(true)
        .append(append)
        .truncate(!append)
        .open(path)?;
    let block = [b'x'; 4096];
    let mut left = bytes;
    while left > 0 {
        let n = left.min(block.len());
        f.write_all(&block[..n])?;
        left -= n;
    }
    Ok(())
}

fn read_file(path: &Path) -> std::io::Result<u64> {
    let mut f = File::open(path)?;
    let mut buf = vec![0u8; 64 * 1024];
    let mut total = 0;
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            return Ok(total);
        }
        total += n as u64;
    }
}

fn sync() {
    // SAFETY: sync(2) takes no arguments and cannot fail.
    unsafe { libc::sync() };
}

/// Drops the page cache (root in the guest); elsewhere it only syncs.
fn drop_caches() {
    sync();
    let _ = fs::write("/proc/sys/vm/drop_caches", "3");
}

/// The blog server's shared state: the articles so far, the counts.
struct Blog {
    articles: Mutex<Vec<PathBuf>>,
    reads: AtomicU64,
    writes: AtomicU64,
    stop: AtomicBool,
    failed: Mutex<Option<String>>,
}

impl Blog {
    fn pick(&self, rng: &mut Rng) -> Option<PathBuf> {
        let a = self.articles.lock().unwrap();
        (!a.is_empty()).then(|| a[rng.next() as usize % a.len()].clone())
    }
}

#[derive(Clone, Copy)]
enum Role {
    Writer,
    Rewriter,
    Commenter,
    Reader,
}

/// One thread's loop until the time is up.
fn blog_thread(b: &Blog, dir: &Path, role: Role, id: u64) -> std::io::Result<()> {
    let mut rng = Rng::new(id + 1);
    let mut blog = 0;
    let mut in_blog = 0;
    while !b.stop.load(Ordering::Relaxed) {
        match role {
            Role::Writer => {
                if in_blog == 0 {
                    blog += 1;
                    fs::create_dir_all(dir.join(format!("blog-{id}-{blog}")))?;
                }
                let p = dir.join(format!("blog-{id}-{blog}/article-{in_blog}"));
                write_file(&p, rng.range(4, 64) as usize * 1024, false)?;
                b.articles.lock().unwrap().push(p);
                in_blog = (in_blog + 1) % 16;
                b.writes.fetch_add(1, Ordering::Relaxed);
            }
            Role::Rewriter | Role::Commenter => {
                let Some(p) = b.pick(&mut rng) else {
                    std::thread::sleep(Duration::from_millis(10));
                    continue;
                };
                if let Role::Rewriter = role {
                    write_file(&p, rng.range(4, 64) as usize * 1024, false)?;
                } else {
                    write_file(
                        &p.with_extension("comments"),
                        rng.range(1, 4) as usize * 1024,
                        true,
                    )?;
                }
                b.writes.fetch_add(1, Ordering::Relaxed);
            }
            Role::Reader => {
                let Some(p) = b.pick(&mut rng) else {
                    std::thread::sleep(Duration::from_millis(10));
                    continue;
                };
                read_file(&p)?;
                b.reads.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
    Ok(())
}

fn blogbench(dir: &Path, secs: u64, counts: [u64; 4]) -> Result<(), String> {
    let b = Arc::new(Blog {
        articles: Mutex::new(Vec::new()),
        reads: AtomicU64::new(0),
        writes: AtomicU64::new(0),
        stop: AtomicBool::new(false),
        failed: Mutex::new(None),
    });
    let roles = [Role::Writer, Role::Rewriter, Role::Commenter, Role::Reader];
    let mut threads = Vec::new();
    let mut id = 0;
    let t0 = Instant::now();
    for (role, n) in roles.into_iter().zip(counts) {
        for _ in 0..n {
            id += 1;
            let (b, dir) = (b.clone(), dir.to_path_buf());
            threads.push(std::thread::spawn(move || {
                if let Err(e) = blog_thread(&b, &dir, role, id) {
                    *b.failed.lock().unwrap() = Some(e.to_string());
                    b.stop.store(true, Ordering::Relaxed);
                }
            }));
        }
    }
    std::thread::sleep(Duration::from_secs(secs));
    b.stop.store(true, Ordering::Relaxed);
    for t in threads {
        let _ = t.join();
    }
    let secs = t0.elapsed().as_secs_f64();
    if let Some(e) = b.failed.lock().unwrap().take() {
        return Err(e);
    }
    println!(
        "reads_s {:.3}",
        b.reads.load(Ordering::Relaxed) as f64 / secs
    );
    println!(
        "writes_s {:.3}",
        b.writes.load(Ordering::Relaxed) as f64 / secs
    );
    Ok(())
}

/// MB/s of `bytes` over the time since `t0`.
fn mb_s(bytes: u64, t0: Instant) -> f64 {
    bytes as f64 / 1e6 / t0.elapsed().as_secs_f64()
}

fn compilebench(dir: &Path, folders: u64, files: u64) -> std::io::Result<()> {
    let mut rng = Rng::new(7);
    let mut sources = Vec::new();
    let t0 = Instant::now();
    let mut bytes = 0;
    for d in 0..folders {
        let sub = dir.join(format!("tree/d{d}"));
        fs::create_dir_all(&sub)?;
        for f in 0..files {
            let size = rng.log_range(1024, 64 * 1024);
            let p = sub.join(format!("f{f}.c"));
            write_file(&p, size as usize, false)?;
            bytes += size;
            sources.push((p, size));
        }
    }
    sync();
    println!("create_mb_s {:.3}", mb_s(bytes, t0));
    drop_caches();
    let t0 = Instant::now();
    let mut written = 0;
    for (p, size) in &sources {
        read_file(p)?;
        let obj = size * 3 / 4;
        write_file(&p.with_extension("o"), obj as usize, false)?;
        written += obj;
    }
    sync();
    println!("compile_mb_s {:.3}", mb_s(written, t0));
    drop_caches();
    let t0 = Instant::now();
    let mut read = 0;
    for (p, _) in &sources {
        read += read_file(p)?;
        read += read_file(&p.with_extension("o"))?;
    }
    println!("read_mb_s {:.3}", mb_s(read, t0));
    Ok(())
}

const USAGE: &str = "usage: fsbench blogbench DIR SECONDS WRITERS REWRITERS COMMENTERS READERS\n       fsbench compilebench DIR FOLDERS FILES";

fn run(args: &[String]) -> Result<(), String> {
    let nums = |xs: &[String]| -> Result<Vec<u64>, String> {
        xs.iter()
            .map(|x| {
                x.parse::<u64>()
                    .map_err(|_| format!("{x:?} is not a count\n{USAGE}"))
            })
            .collect()
    };
    match args {
        [cmd, dir, rest @ ..] if cmd == "blogbench" && rest.len() == 5 => {
            let n = nums(rest)?;
            if n[0] == 0 || n[1] == 0 {
                return Err("blogbench needs some seconds and at least one writer".into());
            }
            blogbench(Path::new(dir), n[0], [n[1], n[2], n[3], n[4]])
        }
        [cmd, dir, rest @ ..] if cmd == "compilebench" && rest.len() == 2 => {
            let n = nums(rest)?;
            if n.contains(&0) {
                return Err("compilebench needs at least one folder and one file".into());
            }
            compilebench(Path::new(dir), n[0], n[1]).map_err(|e| e.to_string())
        }
        _ => Err(USAGE.into()),
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("fsbench: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("fsbench-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn compilebench_makes_compiles_and_reads_the_tree() {
        let d = scratch("cb");
        compilebench(&d, 2, 3).unwrap();
        let objs = fs::read_dir(d.join("tree/d1")).unwrap().count();
        assert_eq!(objs, 6, "3 sources and 3 objects");
        let _ = fs::remove_dir_all(&d);
    }

    #[test]
    fn blogbench_writes_and_reads_articles() {
        let d = scratch("bb");
        blogbench(&d, 1, [1, 1, 1, 2]).unwrap();
        assert!(fs::read_dir(&d).unwrap().count() >= 1);
        let _ = fs::remove_dir_all(&d);
    }

    #[test]
    fn bad_arguments_say_how() {
        let s = |xs: &[&str]| xs.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert!(run(&s(&["compilebench", "/tmp/x", "0", "1"])).is_err());
        assert!(run(&s(&["blogbench", "/tmp/x", "1", "a", "1", "1", "1"]))
            .unwrap_err()
            .contains("usage"));
        assert!(run(&s(&["nope"])).is_err());
    }

    #[test]
    fn the_generator_is_fixed_and_in_range() {
        let (mut a, mut b) = (Rng::new(3), Rng::new(3));
        for _ in 0..1000 {
            let x = a.log_range(1024, 65536);
            assert_eq!(x, b.log_range(1024, 65536));
            assert!((1024..=65536).contains(&x));
        }
    }
}
