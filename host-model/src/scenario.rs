// SPDX-License-Identifier: GPL-2.0

//! Ready-made runs: a scheduler by name, fio-like jobs, the startup
//! suite's readers, and what a run gives.

use crate::device::Device;
use crate::fifo::Fifo;
use crate::sim::{
    anticipatory, bfq, cfq, deadline, noop, sio, vr, Io, Machine, Reader, Sim, MS, SEC,
};
use ironlift_policy::sched::SchedPolicy;
use ironlift_policy::Nanos;

/// A scheduler the simulation can run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scheduler {
    /// No scheduler ([`Fifo`]).
    None,
    /// rust-deadline's policy.
    Deadline,
    /// rust-bfq's policy, with its deferred completions.
    Bfq,
    /// rust-noop's policy: one FIFO.
    Noop,
    /// rust-sio's policy: FIFOs with deadlines, no sorting.
    Sio,
    /// rust-vr's policy: sector order with a reversal penalty, deadlines.
    Vr,
    /// rust-as's policy (the anticipatory scheduler), with its deferred
    /// completions.
    As,
    /// rust-cfq's policy, with its deferred completions.
    Cfq,
}

impl Scheduler {
    /// All of them, in report order.
    pub const ALL: [Scheduler; 8] = [
        Scheduler::None,
        Scheduler::Deadline,
        Scheduler::Bfq,
        Scheduler::Noop,
        Scheduler::Sio,
        Scheduler::Vr,
        Scheduler::As,
        Scheduler::Cfq,
    ];

    /// The elevator's name in the guest (`none` for no scheduler).
    pub fn name(self) -> &'static str {
        match self {
            Scheduler::None => "none",
            Scheduler::Deadline => "rust-deadline",
            Scheduler::Bfq => "rust-bfq",
            Scheduler::Noop => "rust-noop",
            Scheduler::Sio => "rust-sio",
            Scheduler::Vr => "rust-vr",
            Scheduler::As => "rust-as",
            Scheduler::Cfq => "rust-cfq",
        }
    }
}

/// What a run gives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// Bytes each reader completed inside the window, in the readers' order.
    pub bytes: Vec<u64>,
    /// The last reader's start-up time, if it is an application that
    /// finished.
    pub app: Option<Nanos>,
    /// Requests completed inside the window (fewer than bios when the
    /// block layer merged them).
    pub requests: u64,
}

impl Outcome {
    /// All readers' bytes over `window`, in MB/s.
    pub fn mb_s(&self, window: (Nanos, Nanos)) -> f64 {
        let secs = (window.1 - window.0) as f64 / 1e9;
        self.bytes.iter().sum::<u64>() as f64 / secs / 1e6
    }

    /// The mean request size inside the window, in KiB.
    pub fn kib_per_request(&self) -> f64 {
        self.bytes.iter().sum::<u64>() as f64 / 1024.0 / self.requests.max(1) as f64
    }
}

/// Runs `readers` on `dev` under `s` up to `until`, measuring over
/// `window`.
pub fn run(
    m: Machine,
    dev: Box<dyn Device>,
    s: Scheduler,
    readers: &[Reader],
    window: (Nanos, Nanos),
    until: Nanos,
) -> Outcome {
    fn go<P: SchedPolicy>(mut sim: Sim<P>, until: Nanos) -> Outcome {
        sim.run(until);
        let app = sim
            .readers
            .last()
            .and_then(|r| Some(r.done_at? - r.started_at?));
        Outcome {
            bytes: sim.readers.iter().map(|r| r.bytes).collect(),
            app,
            requests: sim.requests,
        }
    }
    match s {
        Scheduler::None => go(
            Sim::new(m, dev, Fifo::default(), readers, window, false),
            until,
        ),
        Scheduler::Deadline => {
            let p = deadline(&m);
            go(Sim::new(m, dev, p, readers, window, false), until)
        }
        Scheduler::Bfq => {
            let p = bfq(&m, dev.as_ref(), readers.len());
            go(Sim::new(m, dev, p, readers, window, true), until)
        }
        Scheduler::Noop => {
            let p = noop(&m);
            go(Sim::new(m, dev, p, readers, window, true), until)
        }
        Scheduler::Sio => {
            let p = sio(&m);
            go(Sim::new(m, dev, p, readers, window, true), until)
        }
        Scheduler::Vr => {
            let p = vr(&m);
            go(Sim::new(m, dev, p, readers, window, true), until)
        }
        Scheduler::As => {
            let p = anticipatory(&m, readers.len());
            go(Sim::new(m, dev, p, readers, window, true), until)
        }
        Scheduler::Cfq => {
            let p = cfq(&m, dev.as_ref(), readers.len());
            go(Sim::new(m, dev, p, readers, window, true), until)
        }
    }
}

/// An fio job: reads of `bs` sectors from `start`, `iodepth` in flight,
/// random over `random_blocks` blocks (0: sequential), 5 µs to submit.
pub fn fio(start: u64, bs: u32, iodepth: u32, random_blocks: u64) -> Reader {
    Reader {
        io: Io::Read,
        level: 4,
        start,
        bs,
        iodepth,
        submit_cost: 5_000,
        random_blocks,
        count: 0,
        start_at: 0,
        after: None,
        wakes: None,
    }
}

/// The same fio job writing: synchronously (`sync`: O_DIRECT or O_SYNC
/// writes, `REQ_SYNC`) or as the page cache's write-back.
pub fn fio_write(start: u64, bs: u32, iodepth: u32, random_blocks: u64, sync: bool) -> Reader {
    Reader {
        io: Io::Write { sync },
        ..fio(start, bs, iodepth, random_blocks)
    }
}

/// The startup suite's file: its `[startup]` table describes the greedy
/// readers the model runs.
const STARTUP_SUITE: &str = include_str!("../../configs/suites/startup.toml");

/// The startup suite's greedy readers: how many (`readers`), and each
/// one's request size in sectors and iodepth (`--bs` and `--iodepth` in
/// `reader_fio`).
fn startup_readers() -> (u32, u32, u32) {
    let suite: toml::Table = STARTUP_SUITE
        .parse()
        .expect("configs/suites/startup.toml parses");
    let t = suite["startup"].as_table().expect("a [startup] table");
    let readers = t["readers"].as_integer().expect("readers");
    let fio = t["reader_fio"].as_str().expect("reader_fio");
    let arg = |name: &str| {
        fio.split_whitespace()
            .find_map(|a| a.strip_prefix(name))
            .unwrap_or_else(|| panic!("reader_fio has no {name}"))
    };
    let bs = arg("--bs=");
    let kib: u32 = bs
        .strip_suffix('k')
        .and_then(|k| k.parse().ok())
        .unwrap_or_else(|| panic!("reader_fio: --bs={bs} is not <n>k"));
    let iodepth = arg("--iodepth=").parse().expect("--iodepth=<n>");
    (readers as u32, kib * 2, iodepth)
}

/// The startup suite: its greedy sequential readers
/// (configs/suites/startup.toml) and an application that starts after they
/// have run for `head_start`, reading 170 small files one at a time with
/// 3.6 ms of CPU between them. Returns the loaded readers (the application
/// last) and the application alone, starting at 0.
pub fn startup(head_start: Nanos) -> (Vec<Reader>, Reader) {
    let app = Reader {
        io: Io::Read,
        level: 4,
        start: 1 << 20,
        bs: 8,
        iodepth: 1,
        submit_cost: 3_600_000,
        random_blocks: 0,
        count: 170,
        start_at: head_start,
        after: None,
        wakes: None,
    };
    let (readers, bs, iodepth) = startup_readers();
    let mut loaded: Vec<Reader> = (0..readers)
        .map(|i| Reader {
            submit_cost: 20_000,
            ..fio(1 << (22 + i), bs, iodepth, 0)
        })
        .collect();
    loaded.push(app);
    (loaded, Reader { start_at: 0, ..app })
}

/// The application's start-up time under `s` among the readers of
/// [`startup`], on `dev`; `None` if it did not finish within two minutes.
pub fn startup_time(
    m: Machine,
    dev: Box<dyn Device>,
    s: Scheduler,
    head_start: Nanos,
) -> Option<Nanos> {
    let (loaded, _) = startup(head_start);
    run(m, dev, s, &loaded, (0, 0), head_start + 120 * SEC).app
}

/// The application of [`startup`] alone on `dev` (no scheduler): its
/// start-up time, the floor for [`startup_time`].
pub fn alone_time(m: Machine, dev: Box<dyn Device>) -> Option<Nanos> {
    let (_, alone) = startup(0);
    run(m, dev, Scheduler::None, &[alone], (0, 0), 120 * SEC).app
}

/// An fsync chain of `transactions`, as SQLite's inserts (each its own
/// transaction) or FS-Mark's files make on ext4: an application writes 4
/// to 64 KiB synchronously, and its write's completion wakes the journal
/// thread (jbd2), which writes a 4 KiB commit 50 µs later; the commit's
/// completion lets the application go on to its next write, after
/// `think` of CPU.
///
/// The journal thread is older than the application: an earlier
/// workload, `warmup` transactions of its own with 1 ms of CPU each, has
/// kept it busy up to 10 ms before the application starts. Under
/// rust-bfq that gives a new application (weight-raised) and a journal
/// thread no longer raised, as a benchmark run right after another
/// meets. (With the journal thread idle for 100 ms or more before the
/// application starts, rust-bfq raises it as soft real-time when it
/// wakes, and the chain runs as under the other schedulers.) The readers are
/// the journal thread, the earlier workload (if any) and the application,
/// last, so that [`Outcome::app`] is the time its chain took.
pub fn fsync_chain(transactions: u32, think: Nanos, warmup: u32) -> Vec<Reader> {
    let journal = Reader {
        io: Io::Write { sync: true },
        level: 4,
        start: 1 << 30,
        bs: 8,
        iodepth: 0,
        submit_cost: 50_000,
        random_blocks: 0,
        count: 0,
        start_at: 0,
        after: None,
        wakes: None,
    };
    let app = Reader {
        start: 1 << 20,
        iodepth: 1,
        submit_cost: think,
        count: transactions,
        wakes: Some(0),
        ..journal
    };
    if warmup == 0 {
        return vec![journal, app];
    }
    let earlier = Reader {
        start: 1 << 25,
        submit_cost: MS,
        count: warmup,
        ..app
    };
    let app = Reader {
        start_at: 10 * MS,
        after: Some(1),
        ..app
    };
    vec![journal, earlier, app]
}

/// The time the [`fsync_chain`] of `transactions` takes under `s` on
/// `dev`, from the application's first write to its last commit's
/// completion; `None` if it did not finish within ten minutes.
pub fn fsync_chain_time(
    m: Machine,
    dev: Box<dyn Device>,
    s: Scheduler,
    transactions: u32,
    think: Nanos,
    warmup: u32,
) -> Option<Nanos> {
    let readers = fsync_chain(transactions, think, warmup);
    run(m, dev, s, &readers, (0, 0), 600 * SEC).app
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_startup_readers_are_the_suite_files() {
        let (readers, bs, iodepth) = super::startup_readers();
        assert!(readers >= 1 && bs >= 1 && iodepth >= 1);
        let (loaded, alone) = super::startup(7);
        assert_eq!(loaded.len(), readers as usize + 1);
        assert!(loaded[..readers as usize]
            .iter()
            .all(|r| r.bs == bs && r.iodepth == iodepth && r.count == 0));
        assert_eq!((loaded[readers as usize].start_at, alone.start_at), (7, 0));
    }
}
