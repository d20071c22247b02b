// SPDX-License-Identifier: GPL-2.0

//! Whole scenarios of the in-guest tests and benchmarks, run against the
//! BFQ-like policy (and, for the start-up, the deadline one) in simulated
//! time: a small model of what blk-mq and the modules do around the policy
//! (scheduler tags, the device's depth, bio back merges, the dispatch list
//! and restart, the idle timer), a device that completes every request a
//! fixed time after it starts, fio-like readers and an application reading
//! files one at a time. Deterministic: the same run gives the same bytes.
//! Completions reach the BFQ policy as in rust-bfq, through its
//! `TimedLog` (deferred while nothing is queued); one test checks that
//! handing them over at once instead gives the same figures.

use ironlift_policy::bfq::{AfterCompletion, Bfq, IssuerSlot, ReqSlot};
use ironlift_policy::completions::{words_for, DrainBatch, TimedLog};
use ironlift_policy::deadline::{Deadline, Slot};
use ironlift_policy::{Dispatch, IoPrio, Nanos, Op, Policy, PrioClass, RequestDesc, NSEC_PER_MSEC};
use std::cell::Cell;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::sync::atomic::AtomicU64;

type B = Bfq<Vec<ReqSlot>, Vec<IssuerSlot>>;
type D = Deadline<Vec<Slot>>;

/// What the simulation needs of a policy beyond [`Policy`]: what its module
/// does on a completion.
trait SimPolicy: Policy {
    /// The end of the idle slice the policy waits in, if it idles.
    fn idling_until(&self) -> Option<Nanos> {
        None
    }
    /// What a completion must trigger (rust-bfq's `finish_request` asks
    /// the policy; rust-deadline's triggers nothing).
    fn after_completion(&mut self) -> AfterCompletion {
        AfterCompletion::Nothing
    }
    fn check(&self) -> Result<(), &'static str>;
}

impl SimPolicy for B {
    fn idling_until(&self) -> Option<Nanos> {
        Bfq::idling_until(self)
    }
    fn after_completion(&mut self) -> AfterCompletion {
        Bfq::after_completion(self)
    }
    fn check(&self) -> Result<(), &'static str> {
        self.check_invariants()
    }
}

impl SimPolicy for D {
    fn check(&self) -> Result<(), &'static str> {
        self.check_invariants()
    }
}

thread_local! {
    /// Whether the simulations of this thread hand completions to the
    /// policy as rust-bfq does (a [`TimedLog`]: at once only while requests
    /// are queued, else at the next insertion or dispatch) rather than at
    /// once, every time.
    static DEFER_COMPLETIONS: Cell<bool> = const { Cell::new(true) };
    /// How many completions were deferred in this thread.
    static DEFERRED: Cell<u64> = const { Cell::new(0) };
}

const MS: Nanos = NSEC_PER_MSEC;
const SEC: Nanos = 1000 * MS;

/// The block layer and device around the policy.
#[derive(Clone, Copy, Debug)]
struct Machine {
    /// Scheduler tags (`nr_requests`: twice the device's depth by default).
    sched_tags: usize,
    /// Requests the device holds at once (null_blk's `hw_queue_depth`).
    depth: usize,
    /// Time from a request's start to its completion, whatever its size
    /// (null_blk with `irqmode=2`).
    service: Nanos,
    /// Largest request, sectors (`max_sectors`; null_blk's default 255).
    max_sectors: u32,
    /// Time a CPU spends in one queue run before the request it took from
    /// the scheduler without a driver tag is on the dispatch list. A run
    /// starting meanwhile (a completion's restart, an insertion) does not
    /// see it there and takes another: more requests dispatched than the
    /// device holds, as blk-mq gives on several CPUs.
    run_cost: Nanos,
}

/// An fio job: sequential reads of `bs` sectors, `iodepth` in flight.
#[derive(Clone, Copy, Debug)]
struct Reader {
    level: u8,
    start: u64,
    bs: u32,
    iodepth: u32,
    /// Time fio takes to submit one I/O after it reaped a completion.
    submit_cost: Nanos,
    /// Random reads over this many `bs` blocks after `start` (0:
    /// sequential).
    random_blocks: u64,
    /// An application instead of fio: `count` reads one at a time, of 8 to
    /// 128 sectors (log-uniform), each after the previous one completed
    /// and `submit_cost` of CPU, starting at `start_at`. 0: a greedy reader.
    count: u32,
    start_at: Nanos,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    /// Device slot `slot` completes its request.
    Complete(usize),
    /// Reader submits its next bio.
    Submit(usize),
    /// The idle timer (the module's hrtimer) of generation `gen`.
    Timer(u64),
    /// blk-mq's delayed run (`BLK_MQ_BUDGET_DELAY` after an empty dispatch).
    DelayedRun(u64),
    /// A run that took a request without a driver tag ends: the request
    /// is on the dispatch list.
    Parked(usize),
}

struct Req {
    reader: usize,
    sector: u64,
    sectors: u32,
    ios: u32,
}

struct ReaderState {
    cfg: Reader,
    next: u64,
    /// I/Os fio still has to submit (reaped, not yet resubmitted).
    to_submit: u32,
    submit_pending: bool,
    blocked_on_tag: bool,
    /// Bytes completed inside the measured window.
    bytes: u64,
    /// State of the random offset generator.
    rng: u64,
    /// I/Os submitted (for an application).
    submitted: u32,
    /// When an application's last read completed.
    done_at: Option<Nanos>,
}

impl ReaderState {
    /// Advances the offset generator (a 64-bit LCG); its high bits are
    /// the random ones.
    fn step_rng(&mut self) {
        self.rng = self
            .rng
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
    }
}

struct Sim<P> {
    m: Machine,
    b: P,
    now: Nanos,
    seq: u64,
    events: BinaryHeap<Reverse<(Nanos, u64, Ev)>>,
    reqs: Vec<Option<Req>>,
    /// The request (tag) in each of the device's slots.
    device: Vec<Option<usize>>,
    dispatch_list: VecDeque<usize>,
    /// Taken without a driver tag by a run still under way.
    parking: Vec<usize>,
    restart: bool,
    timer_gen: u64,
    timer_at: Option<Nanos>,
    delayed_gen: u64,
    readers: Vec<ReaderState>,
    tag_waiters: VecDeque<usize>,
    window: (Nanos, Nanos),
    /// Time-weighted sums over the window: requests on the device, and
    /// free device slots while the scheduler held requests.
    occupancy: u128,
    withheld: u128,
    last_sample: Nanos,
    /// rust-bfq's completion log, if completions are deferred as there.
    defer: Option<TimedLog<Vec<AtomicU64>, Vec<AtomicU64>>>,
    /// Where the drains sort, kept as rust-bfq keeps it.
    drain_batch: DrainBatch,
}

/// rust-bfq's policy as its init_sched sets it up on null_blk.
fn bfq(m: &Machine, issuers: usize) -> B {
    let mut b = Bfq::new(
        vec![ReqSlot::default(); m.sched_tags],
        vec![IssuerSlot::default(); issuers + 1],
    )
    .unwrap();
    b.set_nonrotational(true);
    b.set_device_depth(m.depth as u32);
    b
}

/// rust-deadline's policy at `nr_requests` = the scheduler tags.
fn deadline(m: &Machine) -> D {
    let mut d = Deadline::new(vec![Slot::default(); m.sched_tags]).unwrap();
    d.depth_updated(m.sched_tags as u32);
    d
}

impl<P: SimPolicy> Sim<P> {
    fn new(m: Machine, b: P, readers: &[Reader], window: (Nanos, Nanos)) -> Self {
        let mut s = Sim {
            m,
            b,
            now: 0,
            seq: 0,
            events: BinaryHeap::new(),
            reqs: (0..m.sched_tags).map(|_| None).collect(),
            device: vec![None; m.depth],
            dispatch_list: VecDeque::new(),
            parking: Vec::new(),
            restart: false,
            timer_gen: 0,
            timer_at: None,
            delayed_gen: 0,
            readers: readers
                .iter()
                .map(|&cfg| ReaderState {
                    cfg,
                    next: cfg.start,
                    to_submit: cfg.iodepth,
                    submit_pending: false,
                    blocked_on_tag: false,
                    bytes: 0,
                    rng: cfg.start ^ 0x2545_f491_4f6c_dd1d,
                    submitted: 0,
                    done_at: None,
                })
                .collect(),
            tag_waiters: VecDeque::new(),
            window,
            occupancy: 0,
            withheld: 0,
            last_sample: 0,
            drain_batch: DrainBatch::default(),
            defer: DEFER_COMPLETIONS.get().then(|| {
                TimedLog::new(
                    (0..words_for(m.sched_tags))
                        .map(|_| AtomicU64::new(0))
                        .collect(),
                    (0..m.sched_tags).map(|_| AtomicU64::new(0)).collect(),
                )
            }),
        };
        for (r, cfg) in readers.iter().enumerate() {
            if cfg.count != 0 {
                s.readers[r].to_submit = 1;
                s.readers[r].submit_pending = true;
                s.at(cfg.start_at, Ev::Submit(r));
            } else {
                s.schedule_submit(r);
            }
        }
        s
    }

    /// Accounts the time from the last event to `t`.
    fn sample(&mut self, t: Nanos) {
        let from = self.last_sample.max(self.window.0);
        let to = t.min(self.window.1);
        if to > from {
            let dt = u128::from(to - from);
            let busy = self.device.iter().filter(|d| d.is_some()).count();
            self.occupancy += dt * busy as u128;
            if self.b.has_work() {
                self.withheld += dt * (self.m.depth - busy) as u128;
            }
        }
        self.last_sample = t;
    }

    fn at(&mut self, t: Nanos, ev: Ev) {
        self.seq += 1;
        self.events.push(Reverse((t, self.seq, ev)));
    }

    fn schedule_submit(&mut self, r: usize) {
        let rs = &mut self.readers[r];
        if rs.to_submit > 0 && !rs.submit_pending && !rs.blocked_on_tag {
            rs.submit_pending = true;
            let t = self.now + rs.cfg.submit_cost;
            self.at(t, Ev::Submit(r));
        }
    }

    fn run(&mut self, until: Nanos) {
        while let Some(Reverse((t, _, ev))) = self.events.pop() {
            if t > until {
                break;
            }
            self.sample(t);
            self.now = t;
            match ev {
                Ev::Submit(r) => self.submit(r),
                Ev::Complete(slot) => self.complete(slot),
                Ev::Timer(g) if g == self.timer_gen && self.timer_at.is_some() => {
                    self.timer_at = None;
                    self.run_queue();
                }
                Ev::DelayedRun(g) if g == self.delayed_gen => self.run_queue(),
                Ev::Parked(t) => {
                    self.parking.retain(|&p| p != t);
                    self.dispatch_list.push_back(t);
                    self.restart = true;
                    if self.device.contains(&None) {
                        self.run_queue();
                    }
                }
                _ => {}
            }
            if let Err(e) = self.b.check() {
                panic!("invariant broken at {} ns: {e}", self.now);
            }
        }
    }

    /// One bio of reader `r`: back-merged into its queued request that ends
    /// where the bio starts (the block layer's request hash), or a new
    /// request if a scheduler tag is free, or the reader sleeps for a tag.
    fn submit(&mut self, r: usize) {
        self.readers[r].submit_pending = false;
        let rs = &mut self.readers[r];
        if rs.cfg.count != 0 {
            // The application's next file: a gap, then 4 to 64 KiB.
            rs.step_rng();
            let ln = ((rs.rng >> 33) % 1000) as f64 / 1000.0 * (16f64).ln();
            rs.cfg.bs = (8.0 * ln.exp()) as u32;
            rs.next += 8 * ((rs.rng >> 20) % 4);
            rs.submitted += 1;
        } else if rs.cfg.random_blocks != 0 {
            rs.step_rng();
            rs.next = rs.cfg.start + (rs.rng >> 33) % rs.cfg.random_blocks * u64::from(rs.cfg.bs);
        }
        let (sector, bs) = (self.readers[r].next, self.readers[r].cfg.bs);
        let merge = (0..self.reqs.len()).find(|&t| {
            matches!(&self.reqs[t], Some(q) if q.reader == r
                && q.sector + q.sectors as u64 == sector
                && q.sectors + bs <= self.m.max_sectors)
                && !self.in_flight_or_listed(t)
        });
        if let Some(t) = merge {
            let q = self.reqs[t].as_mut().unwrap();
            q.sectors += bs;
            q.ios += 1;
            let n = q.sectors;
            self.b.back_merged(t, n);
        } else if let Some(t) = (0..self.reqs.len()).find(|&t| self.reqs[t].is_none()) {
            self.reqs[t] = Some(Req {
                reader: r,
                sector,
                sectors: bs,
                ios: 1,
            });
            let desc = RequestDesc {
                sector,
                sectors: bs,
                op: Op::Read,
                sync: true,
                prio: IoPrio {
                    class: PrioClass::BestEffort,
                    level: self.readers[r].cfg.level,
                },
                issuer: r,
                arrival: self.now,
            };
            self.hand_over();
            self.b.insert(t, &desc, false, self.now);
            if self.timer_at.is_some() && self.b.idling_until().is_none() {
                self.cancel_timer();
            }
            self.publish();
            self.run_queue();
        } else {
            self.readers[r].blocked_on_tag = true;
            self.tag_waiters.push_back(r);
            return;
        }
        self.readers[r].next += bs as u64;
        self.readers[r].to_submit -= 1;
        self.schedule_submit(r);
    }

    /// rust-bfq's `finish_request` up to the lock: whether the completion
    /// of `t` reached the policy now (it did unless it was deferred).
    fn finish(&mut self, t: usize) -> bool {
        let Some(l) = &self.defer else {
            self.b.completed(t, self.now);
            return true;
        };
        l.set_time(t, self.now);
        if !l.complete(t, || unreachable!("the time was given")) {
            DEFERRED.set(DEFERRED.get() + 1);
            return false;
        }
        self.hand_over();
        true
    }

    /// Hands the deferred completions to the policy (rust-bfq's `drain`,
    /// first in every hook that lets the policy decide).
    fn hand_over(&mut self) {
        if let Some(l) = &self.defer {
            let b = &mut self.b;
            l.drain(&mut self.drain_batch, |tag, at| b.completed(tag, at));
        }
    }

    /// rust-bfq's `publish`, last in those hooks.
    fn publish(&mut self) {
        let Some(l) = &self.defer else {
            return;
        };
        if l.set_busy(self.b.has_work()) {
            self.hand_over();
            let _ = self.b.after_completion();
        }
    }

    fn in_flight_or_listed(&self, t: usize) -> bool {
        self.device.contains(&Some(t))
            || self.dispatch_list.contains(&t)
            || self.parking.contains(&t)
    }

    fn cancel_timer(&mut self) {
        self.timer_at = None;
        self.timer_gen += 1;
    }

    fn arm_timer(&mut self, at: Nanos) {
        self.timer_gen += 1;
        self.timer_at = Some(at);
        let g = self.timer_gen;
        self.at(at.max(self.now), Ev::Timer(g));
    }

    fn start_on_device(&mut self, t: usize) -> bool {
        let Some(slot) = self.device.iter().position(Option::is_none) else {
            return false;
        };
        self.device[slot] = Some(t);
        let done = self.now + self.m.service;
        self.at(done, Ev::Complete(slot));
        true
    }

    /// `blk_mq_sched_dispatch_requests()`: the dispatch list first; then
    /// the scheduler, one request at a time, until the device is full or the
    /// scheduler gives nothing.
    fn run_queue(&mut self) {
        while let Some(&t) = self.dispatch_list.front() {
            if !self.start_on_device(t) {
                self.restart = true;
                return;
            }
            self.dispatch_list.pop_front();
        }
        while self.b.has_work() {
            self.hand_over();
            let d = self.b.dispatch(self.now);
            self.publish();
            match d {
                Dispatch::Request(t) => {
                    if !self.start_on_device(t) {
                        // No driver tag: the request goes to the dispatch
                        // list when this run ends; a completion restarts
                        // the queue.
                        self.parking.push(t);
                        let at = self.now + self.m.run_cost;
                        self.at(at, Ev::Parked(t));
                        return;
                    }
                }
                Dispatch::IdleUntil(u) => {
                    self.arm_timer(u);
                    return;
                }
                Dispatch::Empty => {
                    self.delayed_gen += 1;
                    let g = self.delayed_gen;
                    self.at(self.now + 3 * MS, Ev::DelayedRun(g));
                    return;
                }
            }
        }
    }

    fn complete(&mut self, slot: usize) {
        let t = self.device[slot].take().unwrap();
        let told = self.finish(t);
        let q = self.reqs[t].take().unwrap();
        let rs = &mut self.readers[q.reader];
        if self.now > self.window.0 && self.now <= self.window.1 {
            rs.bytes += q.sectors as u64 * 512;
        }
        if rs.cfg.count != 0 && rs.submitted >= rs.cfg.count {
            rs.done_at = Some(self.now);
        } else {
            rs.to_submit += q.ios;
            self.schedule_submit(q.reader);
        }
        // The module's finish_request, if the completion took the lock.
        let mut run = false;
        if told {
            match self.b.after_completion() {
                AfterCompletion::RunAt(u) => self.arm_timer(u),
                AfterCompletion::RunNow => run = true,
                AfterCompletion::Nothing => {}
            }
            self.publish();
        }
        // The freed scheduler tag wakes a sleeper.
        if let Some(w) = self.tag_waiters.pop_front() {
            self.readers[w].blocked_on_tag = false;
            self.schedule_submit(w);
        }
        if std::mem::take(&mut self.restart) || run || !self.dispatch_list.is_empty() {
            self.run_queue();
        }
    }
}

/// The in-guest fairness test: two fio readers (16 KiB, libaio iodepth 8)
/// under `ionice -c2 -n0` and `-n4` on null_blk with a 2 ms completion
/// delay and depth 2; bytes over 20 s after a 5 s ramp. Without
/// `set_device_depth` this gives 1:15 (the guest measured 1:12): the
/// requests parked on the dispatch list make `hw_tag` say "queueing".
/// Simulated throughput is 16 MB/s, the guest's 14 to 15.
fn fairness_run(submit_cost: Nanos) -> (u64, u64) {
    let m = Machine {
        sched_tags: 4,
        depth: 2,
        service: 2 * MS,
        max_sectors: 255,
        run_cost: 30_000,
    };
    let reader = |level, start| Reader {
        level,
        start,
        bs: 32,
        iodepth: 8,
        submit_cost,
        random_blocks: 0,
        count: 0,
        start_at: 0,
    };
    let readers = [reader(0, 1 << 30), reader(4, 0)];
    let mut s = Sim::new(m, bfq(&m, readers.len()), &readers, (5 * SEC, 25 * SEC));
    s.run(25 * SEC);
    (s.readers[0].bytes, s.readers[1].bytes)
}

#[test]
fn weights_1_to_2_give_bytes_1_to_2() {
    for cost in [20_000, 100_000, 400_000] {
        let (hi, lo) = fairness_run(cost);
        let ratio = hi as f64 / lo.max(1) as f64;
        eprintln!(
            "submit cost {cost} ns: level 0 {:.1} MB, level 4 {:.1} MB: ratio {ratio:.3}",
            hi as f64 / 1e6,
            lo as f64 / 1e6
        );
        assert!((1.7..=2.3).contains(&ratio), "ratio {ratio:.3}");
    }
}

/// The overhead benchmark's workload: two fio jobs of 4 KiB random reads,
/// iodepth 32 each, on a fast null_blk (depth 64, twice that in scheduler
/// tags). Returns requests completed in the window, mean device occupancy,
/// and mean free device slots while the scheduler held requests.
fn randread_run(service: Nanos, submit_cost: Nanos, strict: bool) -> (u64, f64, f64) {
    let m = Machine {
        sched_tags: 128,
        depth: 64,
        service,
        max_sectors: 255,
        run_cost: 2_000,
    };
    let reader = |start| Reader {
        level: 4,
        start,
        bs: 8,
        iodepth: 32,
        submit_cost,
        random_blocks: 1 << 18,
        count: 0,
        start_at: 0,
    };
    let readers = [reader(0), reader(1 << 30)];
    let window = (SEC, 2 * SEC);
    let mut s = Sim::new(m, bfq(&m, readers.len()), &readers, window);
    if strict {
        s.b.set_tunable("strict_guarantees", "1").unwrap();
    }
    s.run(window.1);
    let span = (window.1 - window.0) as f64;
    let reqs = s.readers.iter().map(|r| r.bytes / 4096).sum();
    (reqs, s.occupancy as f64 / span, s.withheld as f64 / span)
}

#[test]
fn randread_keeps_the_device_busy() {
    // Two symmetric random readers: nothing to idle for (seeky queues on a
    // queueing device, equal weights), so the policy must fill the device
    // whenever it holds requests. In the guest rust-bfq gets fewer IOPS
    // than C bfq here; this shows it is not the policy holding requests back.
    let (reqs, occ, withheld) = randread_run(1_000_000, 5_000, false);
    eprintln!("{reqs} requests, device occupancy {occ:.1}, free slots while holding {withheld:.3}");
    assert!(withheld < 0.1, "free slots while holding {withheld:.3}");
    assert!(occ > 60.0, "occupancy {occ:.1}");
    // The measure sees idling: with strict guarantees the policy idles.
    let (_, _, withheld) = randread_run(1_000_000, 5_000, true);
    assert!(
        withheld > 1.0,
        "strict: free slots while holding {withheld:.3}"
    );
}

/// The device under the startup suite (null_blk, depth 2, a timer
/// completion `service` after dispatch) and the readers' head start.
#[derive(Clone, Copy, Debug)]
struct StartupDevice {
    service: Nanos,
    head_start: Nanos,
}

/// nullb-slow with the head start of sessions 4 and 5.
const NULLB_SLOW: StartupDevice = StartupDevice {
    service: 2 * MS,
    head_start: 10 * SEC,
};

/// The startup suite: an application reading `APP_READS` files one at a
/// time ([`APP_THINK`] of CPU between them) while 4
/// greedy sequential readers (64 KiB, iodepth 2) have run for a head start;
/// and the same application alone. Returns (loaded, alone) start-up times.
fn startup_run<P: SimPolicy>(
    make: impl Fn(&Machine, usize) -> P,
    dev: StartupDevice,
) -> (Nanos, Nanos) {
    const APP_READS: u32 = 170;
    let m = Machine {
        sched_tags: 64,
        depth: 2,
        service: dev.service,
        max_sectors: 255,
        run_cost: 30_000,
    };
    let reader = |start| Reader {
        level: 4,
        start,
        bs: 128,
        iodepth: 2,
        submit_cost: 20_000,
        random_blocks: 0,
        count: 0,
        start_at: 0,
    };
    let head_start = dev.head_start;
    let app = Reader {
        level: 4,
        start: 1 << 20,
        bs: 8,
        iodepth: 1,
        submit_cost: APP_THINK,
        random_blocks: 0,
        count: APP_READS,
        start_at: head_start,
    };
    let time = |readers: &[Reader], start_at| {
        let mut s = Sim::new(m, make(&m, readers.len()), readers, (0, 0));
        let app = readers.len() - 1;
        s.run(start_at + 60 * SEC);
        s.readers[app].done_at.expect("the application finished") - start_at
    };
    let loaded = time(
        &[
            reader(1 << 22),
            reader(1 << 23),
            reader(1 << 24),
            reader(1 << 25),
            app,
        ],
        head_start,
    );
    let alone = time(&[Reader { start_at: 0, ..app }], 0);
    (loaded, alone)
}

/// The application's CPU time between reads (tar, cat and ext4 under
/// TCG): it makes the simulated alone time on nullb-slow the guest's.
const APP_THINK: Nanos = 3_600_000;

/// The startup suite on `dev` under the BFQ and the deadline policy:
/// (bfq, deadline, alone) start-up times.
fn startup_both(dev: StartupDevice) -> (Nanos, Nanos, Nanos) {
    let (b_loaded, b_alone) = startup_run(bfq, dev);
    let (d_loaded, d_alone) = startup_run(|m, _| deadline(m), dev);
    assert_eq!(b_alone, d_alone, "alone, the policy does not matter");
    (b_loaded, d_loaded, b_alone)
}

fn ms(t: Nanos) -> f64 {
    t as f64 / 1e6
}

#[test]
fn startup_under_readers_bfq_near_alone_deadline_not() {
    // The guest's startup suite (session 5): alone 0.96 s; loaded, rust-bfq
    // 1.01 x alone, mq-deadline 2.74 x, rust-deadline 2.89 x.
    let (b_loaded, d_loaded, alone) = startup_both(NULLB_SLOW);
    let (bx, dx) = (
        b_loaded as f64 / alone as f64,
        d_loaded as f64 / alone as f64,
    );
    eprintln!(
        "alone {:.0} ms; loaded: bfq {:.0} ms ({bx:.2} x alone), deadline {:.0} ms ({dx:.2} x alone)",
        ms(alone),
        ms(b_loaded),
        ms(d_loaded)
    );
    assert!(bx < 1.15, "bfq {bx:.2} x alone");
    assert!(dx > 1.8, "deadline {dx:.2} x alone");
    // Idling for the application is what brings it to the floor: without
    // it (weight raising alone) each of its reads waits for the readers'
    // requests in the device (1.43 x alone).
    let no_idle = |m: &Machine, n| {
        let mut b = bfq(m, n);
        b.set_tunable("slice_idle", "0").unwrap();
        b
    };
    let (n_loaded, _) = startup_run(no_idle, NULLB_SLOW);
    let nx = n_loaded as f64 / alone as f64;
    eprintln!(
        "bfq with slice_idle 0: {:.0} ms ({nx:.2} x alone)",
        ms(n_loaded)
    );
    assert!(nx > 1.3, "bfq without idling {nx:.2} x alone");
}

#[test]
fn startup_on_8ms_device_after_weight_raising() {
    // The startup suite's device since session 6: 8 ms per request, where
    // the application's I/O, not its CPU time, makes most of its start-up.
    // The think time is the 2 ms device's (the same CPU work).
    let past = StartupDevice {
        service: 8 * MS,
        head_start: 26 * SEC,
    };
    let (b_loaded, d_loaded, alone) = startup_both(past);
    let (bx, floor) = (
        b_loaded as f64 / d_loaded as f64,
        alone as f64 / d_loaded as f64,
    );
    eprintln!(
        "8 ms, 26 s head start: alone {:.0} ms; bfq {:.0} ms, deadline {:.0} ms: \
         bfq {bx:.3} x deadline (floor {floor:.3})",
        ms(alone),
        ms(b_loaded),
        ms(d_loaded)
    );
    assert!(b_loaded < alone * 115 / 100, "bfq {:.0} ms", ms(b_loaded));
    assert!(bx < 0.3, "bfq {bx:.3} x deadline");
    // With the 10 s head start of the 2 ms device the readers' own weight
    // raising has not ended (on a slower device BFQ raises for longer, up
    // to 25 s) and they share the drive with the application as equals.
    let early = StartupDevice {
        head_start: 10 * SEC,
        ..past
    };
    let (e_loaded, _) = startup_run(bfq, early);
    let ex = e_loaded as f64 / alone as f64;
    eprintln!(
        "8 ms, 10 s head start: bfq {:.0} ms ({ex:.2} x alone)",
        ms(e_loaded)
    );
    assert!(ex > 1.5, "bfq after 10 s {ex:.2} x alone");
}

/// rust-bfq hands a completion to the policy at once only while requests
/// are queued, and otherwise at the next insertion or dispatch, with the
/// time it happened (`TimedLog`). That must change no decision: every
/// scenario gives the same figures, to the byte and the nanosecond, with
/// completions handed over at once and deferred as in the module.
#[test]
fn deferred_completions_change_nothing() {
    fn both<T: PartialEq + std::fmt::Debug>(what: &str, run: impl Fn() -> T) {
        DEFER_COMPLETIONS.set(false);
        let at_once = run();
        DEFER_COMPLETIONS.set(true);
        DEFERRED.set(0);
        let deferred = run();
        let n = DEFERRED.get();
        eprintln!("{what}: {deferred:?}, {n} completions deferred");
        assert_eq!(at_once, deferred, "{what}");
        assert!(n > 0, "{what}: no completion was deferred");
    }
    both("fairness", || fairness_run(100_000));
    both("randread", || {
        let (reqs, occ, withheld) = randread_run(1_000_000, 5_000, false);
        (reqs, occ.to_bits(), withheld.to_bits())
    });
    both("startup, 2 ms device", || startup_both(NULLB_SLOW));
    both("startup, 8 ms device", || {
        startup_both(StartupDevice {
            service: 8 * MS,
            head_start: 26 * SEC,
        })
    });
}
