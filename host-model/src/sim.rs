// SPDX-License-Identifier: GPL-2.0

//! The simulation: what blk-mq and the modules do around a policy
//! (scheduler tags, the device's depth, bio back merges, the dispatch list
//! and restart, the idle timer), a [`Device`], fio-like jobs (readers, and
//! writers, synchronous or write-back) and an application reading files
//! one at a time. Deterministic: the same run gives the same bytes.
//! Around the policy runs the modules' own core ([`Core`] and [`Shared`],
//! as the kernel glue runs them), whose effects the simulation carries
//! out: completions reach the policy as in the module (for BFQ and CFQ
//! through a `TimedLog`, deferred while nothing is queued), unless told to
//! hand them over at once.

use crate::device::{Command, Completion, Device, Id};
use ironlift_policy::anticipatory::{Anticipatory, ContextSlot, Slot as AsSlot};
use ironlift_policy::bfq::{Bfq, IssuerSlot, ReqSlot};
use ironlift_policy::cfq::{self, Cfq, QueueSlot};
use ironlift_policy::deadline::{Deadline, Slot};
use ironlift_policy::noop::{self, Noop};
use ironlift_policy::sched::{Core, Effect, SchedPolicy, Shared};
use ironlift_policy::sio::{self, Sio};
use ironlift_policy::vr::{self, Vr};
use ironlift_policy::{IoPrio, Nanos, Op, PrioClass, RequestDesc, TunableError, NSEC_PER_MSEC};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::sync::atomic::AtomicU64;

/// The BFQ-like policy over vectors.
pub type B = Bfq<Vec<ReqSlot>, Vec<IssuerSlot>>;
/// The deadline policy over a vector.
pub type D = Deadline<Vec<Slot>>;
/// The noop policy over a vector.
pub type N = Noop<Vec<noop::Slot>>;
/// The SIO policy over a vector.
pub type S = Sio<Vec<sio::Slot>>;
/// The V(R) policy over a vector.
pub type V = Vr<Vec<vr::Slot>>;
/// The anticipatory policy over vectors.
pub type A = Anticipatory<Vec<AsSlot>, Vec<ContextSlot>>;
/// The CFQ policy over vectors.
pub type C = Cfq<Vec<cfq::ReqSlot>, Vec<QueueSlot>>;

/// A millisecond.
pub const MS: Nanos = NSEC_PER_MSEC;
/// A second.
pub const SEC: Nanos = 1000 * MS;

/// The block layer and device around the policy.
#[derive(Clone, Copy, Debug)]
pub struct Machine {
    /// Scheduler tags (`nr_requests`: twice the device's depth by default).
    pub sched_tags: usize,
    /// Largest request, sectors (`max_sectors`; null_blk's default 255).
    pub max_sectors: u32,
    /// Time a CPU spends in one queue run before the request it took from
    /// the scheduler without a driver tag is on the dispatch list. A run
    /// starting meanwhile (a completion's restart, an insertion) does not
    /// see it there and takes another: more requests dispatched than the
    /// device holds, as blk-mq gives on several CPUs.
    pub run_cost: Nanos,
}

/// What a job's I/Os are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Io {
    /// Reads (synchronous, as every read).
    Read,
    /// Writes: synchronous (`REQ_SYNC`: O_DIRECT or O_SYNC) or not (the
    /// page cache's write-back).
    Write {
        /// Whether the writer waits for them.
        sync: bool,
    },
}

impl Io {
    /// The operation and sync flag of the job's requests.
    pub fn op(self) -> (Op, bool) {
        match self {
            Io::Read => (Op::Read, true),
            Io::Write { sync } => (Op::Write, sync),
        }
    }
}

/// An fio job: sequential I/Os of `bs` sectors, `iodepth` in flight.
/// Called a reader, as most are.
#[derive(Clone, Copy, Debug)]
pub struct Reader {
    /// What its I/Os are.
    pub io: Io,
    /// Best-effort level (`ionice -c2 -n`), 0 to 7.
    pub level: u8,
    /// First sector.
    pub start: u64,
    /// Sectors per read.
    pub bs: u32,
    /// Reads in flight.
    pub iodepth: u32,
    /// Time fio takes to submit one I/O after it reaped a completion.
    pub submit_cost: Nanos,
    /// Random reads over this many `bs` blocks after `start` (0:
    /// sequential).
    pub random_blocks: u64,
    /// An application instead of fio: `count` reads one at a time, of 8 to
    /// 128 sectors (log-uniform), each after the previous one completed
    /// and `submit_cost` of CPU, starting at `start_at`. 0: a greedy reader.
    pub count: u32,
    /// When an application or a greedy reader starts (an application with
    /// `after`: how long after).
    pub start_at: Nanos,
    /// An application that starts `start_at` after reader `after` is done
    /// (instead of at `start_at`).
    pub after: Option<usize>,
    /// Another reader that each completed I/O of this one wakes: that
    /// reader, not this one, then has an I/O to submit (after its own
    /// `submit_cost`), as a journal thread (jbd2) is woken by an
    /// fsync'ing process and wakes it again with its commit done. `None`:
    /// the reader resubmits its own, except one that only others wake
    /// (`iodepth` 0, not an application), which wakes the reader that
    /// last woke it: the journal thread of whichever process waits.
    pub wakes: Option<usize>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    /// The device has a completion or a decision due
    /// ([`Device::next_event`]).
    Device,
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
    op: Op,
    sector: u64,
    sectors: u32,
    ios: u32,
}

/// A reader as the simulation runs it.
pub struct ReaderState {
    /// What it was set up as.
    pub cfg: Reader,
    next: u64,
    /// I/Os fio still has to submit (reaped, not yet resubmitted).
    to_submit: u32,
    submit_pending: bool,
    blocked_on_tag: bool,
    /// The depth the allocation the reader sleeps in was limited to
    /// (`limit_depth` runs once per allocation; the retries after a wake-up
    /// keep its depth).
    limit: Option<u32>,
    /// The bio was chosen before the reader slept for a tag: the retry
    /// sends that one, not a new one.
    bio_ready: bool,
    /// Bytes completed inside the measured window.
    pub bytes: u64,
    /// State of the random offset generator.
    rng: u64,
    /// I/Os submitted (for an application).
    submitted: u32,
    /// When the reader first submitted an I/O (or tried to, and slept
    /// for a tag).
    pub started_at: Option<Nanos>,
    /// When an application's last read completed.
    pub done_at: Option<Nanos>,
    /// The reader whose completion last woke this one ([`Reader::wakes`]).
    woken_by: Option<usize>,
}

impl ReaderState {
    /// Advances the offset generator (a 64-bit LCG); its high bits are
    /// the random ones.
    fn step_rng(&mut self) {
        self.rng = crate::lcg_next(self.rng);
    }
}

/// Storage of the module core's completion log.
type Words = Vec<AtomicU64>;

/// The block layer, the module around the policy and a device, in
/// simulated time.
pub struct Sim<P: SchedPolicy> {
    m: Machine,
    /// The module core around the policy, behind the scheduler lock.
    core: Core<P>,
    /// Its lock-free part.
    shared: Shared<P, Words>,
    /// Whether completions reach the policy as the module hands them over
    /// ([`Shared::finish`]), rather than at once, each under the lock.
    defer: bool,
    dev: Box<dyn Device>,
    now: Nanos,
    seq: u64,
    events: BinaryHeap<Reverse<(Nanos, u64, Ev)>>,
    reqs: Vec<Option<Req>>,
    /// The request (tag) in each of the device's slots.
    device: Vec<Option<usize>>,
    /// The slot of each command on the device, by the device's number.
    slot_of: HashMap<Id, usize>,
    /// When the next [`Ev::Device`] is due, if one is.
    device_due: Option<Nanos>,
    completions: Vec<Completion>,
    /// How many of them hold one.
    busy: usize,
    /// By tag: dispatched by the policy and not yet completed.
    out: Vec<bool>,
    dispatch_list: VecDeque<usize>,
    /// Taken without a driver tag by a run still under way.
    parking: Vec<usize>,
    restart: bool,
    timer_gen: u64,
    timer_at: Option<Nanos>,
    /// The most the idle timer fires late ([`Sim::set_timer_late`]), and
    /// the generator of how late each firing is.
    timer_late: Nanos,
    timer_rng: u64,
    delayed_gen: u64,
    /// The readers, in the order given.
    pub readers: Vec<ReaderState>,
    tag_waiters: VecDeque<usize>,
    window: (Nanos, Nanos),
    /// Time-weighted sums over the window: requests on the device, and
    /// free device slots while the scheduler held requests.
    pub occupancy: u128,
    /// See `occupancy`.
    pub withheld: u128,
    last_sample: Nanos,
    /// Completions that were deferred (did not take the lock).
    pub deferred: u64,
    /// Requests completed inside the measured window.
    pub requests: u64,
}

/// rust-bfq's policy as its init_sched sets it up for `dev`, with a
/// queue for each of `issuers` processes and the shared one.
pub fn bfq(m: &Machine, dev: &dyn Device, issuers: usize) -> B {
    let mut b = Bfq::new(
        vec![ReqSlot::default(); m.sched_tags],
        vec![IssuerSlot::default(); issuers + 1],
    )
    .expect("storage for at least one request and two issuers");
    b.set_nonrotational(!dev.rotational());
    b.set_device_depth(dev.depth() as u32);
    b
}

/// rust-cfq's policy as its init_sched sets it up for `dev`, with a sync
/// queue for each of `issuers` processes and the shared one.
pub fn cfq(m: &Machine, dev: &dyn Device, issuers: usize) -> C {
    let mut c = Cfq::new(
        vec![cfq::ReqSlot::default(); m.sched_tags],
        vec![QueueSlot::default(); C::queue_slots(issuers + 1)],
    )
    .expect("storage for at least one request and one issuer");
    c.set_nonrotational(!dev.rotational());
    c
}

/// rust-deadline's policy at `nr_requests` = the scheduler tags.
pub fn deadline(m: &Machine) -> D {
    let mut d = Deadline::new(vec![Slot::default(); m.sched_tags])
        .expect("storage for at least one request");
    d.depth_updated(m.sched_tags as u32);
    d
}

/// rust-noop's policy.
pub fn noop(m: &Machine) -> N {
    Noop::new(vec![noop::Slot::default(); m.sched_tags]).expect("storage for at least one request")
}

/// rust-sio's policy, with the C's defaults.
pub fn sio(m: &Machine) -> S {
    Sio::new(vec![sio::Slot::default(); m.sched_tags]).expect("storage for at least one request")
}

/// rust-vr's policy, with the C's defaults.
pub fn vr(m: &Machine) -> V {
    Vr::new(vec![vr::Slot::default(); m.sched_tags]).expect("storage for at least one request")
}

/// rust-as's policy, with a process slot for each of `issuers` processes
/// and the shared one.
pub fn anticipatory(m: &Machine, issuers: usize) -> A {
    Anticipatory::new(
        vec![AsSlot::default(); m.sched_tags],
        vec![ContextSlot::default(); issuers + 1],
    )
    .expect("storage for at least one request and one process")
}

impl<P: SchedPolicy> Sim<P> {
    /// A simulation of `readers` on `dev` under policy `b`, measuring
    /// bytes, occupancy and holding over `window`. With `defer`, completions
    /// reach the policy as in its module ([`SchedPolicy::Log`]); otherwise
    /// at once, each under the lock.
    pub fn new(
        m: Machine,
        dev: Box<dyn Device>,
        b: P,
        readers: &[Reader],
        window: (Nanos, Nanos),
        defer: bool,
    ) -> Self {
        let depth = dev.depth();
        let words = |n| (0..n).map(|_| AtomicU64::new(0)).collect();
        let (bitmap, times) = Shared::<P, Words>::log_words(m.sched_tags);
        let shared = Shared::new(words(bitmap), words(times), m.sched_tags as u32);
        let core = Core::new(b, m.sched_tags, &shared);
        let mut s = Sim {
            m,
            core,
            shared,
            defer,
            dev,
            now: 0,
            seq: 0,
            events: BinaryHeap::new(),
            reqs: (0..m.sched_tags).map(|_| None).collect(),
            device: vec![None; depth],
            slot_of: HashMap::new(),
            device_due: None,
            completions: Vec::new(),
            busy: 0,
            out: vec![false; m.sched_tags],
            dispatch_list: VecDeque::new(),
            parking: Vec::new(),
            restart: false,
            timer_gen: 0,
            timer_at: None,
            timer_late: 0,
            timer_rng: 1,
            delayed_gen: 0,
            readers: readers
                .iter()
                .map(|&cfg| ReaderState {
                    cfg,
                    next: cfg.start,
                    to_submit: cfg.iodepth,
                    submit_pending: false,
                    blocked_on_tag: false,
                    limit: None,
                    bio_ready: false,
                    bytes: 0,
                    rng: cfg.start ^ 0x2545_f491_4f6c_dd1d,
                    submitted: 0,
                    started_at: None,
                    done_at: None,
                    woken_by: None,
                })
                .collect(),
            tag_waiters: VecDeque::new(),
            window,
            occupancy: 0,
            withheld: 0,
            last_sample: 0,
            deferred: 0,
            requests: 0,
        };
        for (r, cfg) in readers.iter().enumerate() {
            if cfg.count != 0 {
                s.readers[r].to_submit = 1;
                s.readers[r].submit_pending = true;
                if cfg.after.is_none() {
                    s.at(cfg.start_at, Ev::Submit(r));
                }
            } else {
                s.submit_in(r, cfg.start_at + cfg.submit_cost);
            }
        }
        s
    }

    /// Makes the idle timer (which also runs the reruns a policy asks for
    /// at once) fire up to `late` after the time it was armed for, drawn
    /// evenly in `0..late` (deterministic): a guest on a loaded host,
    /// whose vCPUs see their hrtimers late.
    pub fn set_timer_late(&mut self, late: Nanos) {
        self.timer_late = late;
    }

    /// The policy.
    pub fn policy(&self) -> &P {
        self.core.policy()
    }

    /// Writes a tunable by name, as its sysfs file does.
    pub fn set_tunable(&mut self, name: &str, text: &str) -> Result<(), TunableError> {
        let index = P::TUNABLES
            .iter()
            .position(|t| t.to_bytes() == name.as_bytes())
            .ok_or(TunableError::UnknownName)?;
        self.core.set_tunable(&self.shared, index, text)
    }

    /// Accounts the time from the last event to `t`.
    fn sample(&mut self, t: Nanos) {
        let from = self.last_sample.max(self.window.0);
        let to = t.min(self.window.1);
        if to > from {
            let dt = u128::from(to - from);
            self.occupancy += dt * self.busy as u128;
            if self.policy().has_work() {
                self.withheld += dt * (self.device.len() - self.busy) as u128;
            }
        }
        self.last_sample = t;
    }

    fn at(&mut self, t: Nanos, ev: Ev) {
        self.seq += 1;
        self.events.push(Reverse((t, self.seq, ev)));
    }

    fn schedule_submit(&mut self, r: usize) {
        self.submit_in(r, self.readers[r].cfg.submit_cost);
    }

    /// Reader `r`'s next submission, `delay` from now, if it has one to
    /// make and none is on its way.
    fn submit_in(&mut self, r: usize, delay: Nanos) {
        let rs = &mut self.readers[r];
        if rs.to_submit > 0 && !rs.submit_pending && !rs.blocked_on_tag {
            rs.submit_pending = true;
            self.at(self.now + delay, Ev::Submit(r));
        }
    }

    /// Runs the events up to `until`; later ones stay for the next call.
    pub fn run(&mut self, until: Nanos) {
        while self
            .events
            .peek()
            .is_some_and(|Reverse((t, _, _))| *t <= until)
        {
            let Some(Reverse((t, _, ev))) = self.events.pop() else {
                break;
            };
            self.sample(t);
            self.now = t;
            match ev {
                Ev::Submit(r) => {
                    self.readers[r].started_at.get_or_insert(t);
                    self.submit(r)
                }
                Ev::Device => self.device_event(),
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
            if let Err(e) = self.policy().check_invariants() {
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
        if std::mem::take(&mut rs.bio_ready) {
            // Woken with a tag free: the same bio tries again.
        } else if rs.cfg.count != 0 {
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
            self.core.back_merged(t, n);
            self.readers[r].next += bs as u64;
            self.readers[r].to_submit -= 1;
            self.schedule_submit(r);
            return;
        }
        // `limit_depth`, as the module's glue: with depth 1, Debian's
        // sbitmap leaves only the first tag (`__map_depth_with_shallow`);
        // a depth d leaves d tags, here the first d.
        let limit = match self.readers[r].limit.take() {
            Some(d) => Some(d),
            None => self.depth_limit(r),
        };
        let tags = limit.map_or(self.reqs.len(), |d| (d as usize).clamp(1, self.reqs.len()));
        if let Some(t) = (0..tags).find(|&t| self.reqs[t].is_none()) {
            let (op, sync) = self.readers[r].cfg.io.op();
            self.reqs[t] = Some(Req {
                reader: r,
                op,
                sector,
                sectors: bs,
                ios: 1,
            });
            let desc = RequestDesc {
                sector,
                sectors: bs,
                op,
                sync,
                prio: IoPrio {
                    class: PrioClass::BestEffort,
                    level: self.readers[r].cfg.level,
                },
                issuer: r,
                arrival: self.now,
            };
            let now = self.now;
            self.core.begin_insert(&self.shared, now);
            self.core.insert(t, &desc, false, now);
            let effect = self.core.end_insert(&self.shared, now);
            self.carry_out(effect);
            self.run_queue();
        } else {
            self.readers[r].blocked_on_tag = true;
            self.readers[r].limit = limit;
            self.readers[r].bio_ready = true;
            self.tag_waiters.push_back(r);
            return;
        }
        self.readers[r].next += bs as u64;
        self.readers[r].to_submit -= 1;
        self.schedule_submit(r);
    }

    /// The glue's `limit_depth` for the next request of reader `r`: the
    /// policy's depth limit for its kind, or 1 if its issuer holds its
    /// share of the tags while the policy shares them.
    fn depth_limit(&mut self, r: usize) -> Option<u32> {
        let (op, sync) = self.readers[r].cfg.io.op();
        if self.shared.tags_shared() {
            self.core.tag_depth(&self.shared, r, op, sync)
        } else {
            self.shared.depth_limit(op, sync)
        }
    }

    /// The module's `completed_request` and `finish_request` for `t`: what
    /// the completion calls for, if it reached the policy now (it did
    /// unless it was deferred).
    fn finish(&mut self, t: usize) -> Option<Effect> {
        let now = self.now;
        self.shared.completed(t, now);
        let lock = self.shared.finish(t, || now);
        if self.defer && !lock {
            self.deferred += 1;
            return None;
        }
        Some(self.core.finished(&self.shared, || now))
    }

    /// Carries out what the module core asked for.
    fn carry_out(&mut self, effect: Effect) {
        match effect {
            Effect::Nothing => {}
            Effect::ArmRerun(at) => self.arm_timer(at),
            Effect::CancelRerun => self.cancel_timer(),
            Effect::RerunNow => self.arm_timer(self.now),
            Effect::RunAsync => self.run_queue(),
        }
    }

    /// Whether the policy dispatched `t` (it is on the device, on the
    /// dispatch list or in a run on its way there).
    fn in_flight_or_listed(&self, t: usize) -> bool {
        self.out[t]
    }

    fn cancel_timer(&mut self) {
        self.timer_at = None;
        self.timer_gen += 1;
    }

    fn arm_timer(&mut self, at: Nanos) {
        self.timer_gen += 1;
        self.timer_at = Some(at);
        let g = self.timer_gen;
        let late = if self.timer_late == 0 {
            0
        } else {
            self.timer_rng = crate::lcg_next(self.timer_rng);
            (self.timer_rng >> 33) % self.timer_late
        };
        self.at(at.max(self.now) + late, Ev::Timer(g));
    }

    fn start_on_device(&mut self, t: usize) -> bool {
        let Some(slot) = self.device.iter().position(Option::is_none) else {
            return false;
        };
        self.device[slot] = Some(t);
        self.busy += 1;
        let q = self.reqs[t].as_ref().expect("a started request exists");
        let id = self
            .dev
            .submit(self.now, Command::new(q.op, q.sector, q.sectors));
        self.slot_of.insert(id, slot);
        self.watch_device();
        true
    }

    /// An [`Ev::Device`] at the device's next event, unless one is due by
    /// then.
    fn watch_device(&mut self) {
        let Some(t) = self.dev.next_event() else {
            return;
        };
        let t = t.max(self.now);
        if self.device_due.is_none_or(|due| t < due) {
            self.device_due = Some(t);
            self.at(t, Ev::Device);
        }
    }

    /// The device's completions due now, in the order it made them.
    fn device_event(&mut self) {
        if self.device_due.is_some_and(|due| due <= self.now) {
            self.device_due = None;
        }
        let mut done = std::mem::take(&mut self.completions);
        done.clear();
        self.dev.poll(self.now, &mut done);
        for c in &done {
            if let Some(slot) = self.slot_of.remove(&c.id) {
                self.complete(slot);
            }
        }
        self.completions = done;
        self.watch_device();
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
        while self.policy().has_work() {
            match self.core.dispatch(&self.shared, self.now, Some) {
                (Some(t), _) => {
                    self.out[t] = true;
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
                (None, Effect::ArmRerun(u)) => {
                    self.arm_timer(u);
                    return;
                }
                (None, _) => {
                    self.delayed_gen += 1;
                    let g = self.delayed_gen;
                    self.at(self.now + 3 * MS, Ev::DelayedRun(g));
                    return;
                }
            }
        }
    }

    fn complete(&mut self, slot: usize) {
        let t = self.device[slot]
            .take()
            .expect("a request completes in its slot");
        self.busy -= 1;
        self.out[t] = false;
        let effect = self.finish(t);
        let q = self.reqs[t].take().unwrap();
        let rs = &mut self.readers[q.reader];
        if self.now > self.window.0 && self.now <= self.window.1 {
            rs.bytes += q.sectors as u64 * 512;
            self.requests += 1;
        }
        // The reader that goes on: this one, or the one it wakes. An
        // application that has submitted all its I/Os is done, and those
        // that start after it are started.
        let next = match rs.cfg.wakes {
            Some(w) => Some(w),
            None if rs.cfg.iodepth == 0 && rs.cfg.count == 0 => rs.woken_by,
            None => Some(q.reader),
        };
        if let Some(next) = next {
            let ns = &mut self.readers[next];
            if next != q.reader {
                ns.woken_by = Some(q.reader);
            }
            if ns.cfg.count != 0 && ns.submitted >= ns.cfg.count {
                ns.done_at = Some(self.now);
                for r in 0..self.readers.len() {
                    let cfg = self.readers[r].cfg;
                    if cfg.after == Some(next) {
                        self.at(self.now + cfg.start_at, Ev::Submit(r));
                    }
                }
            } else {
                ns.to_submit += q.ios;
                self.schedule_submit(next);
            }
        }
        // What the completion called for, if it took the lock; the run
        // after the unlock, below.
        let run = effect == Some(Effect::RunAsync);
        if let Some(effect) = effect.filter(|_| !run) {
            self.carry_out(effect);
        }
        // The freed scheduler tag wakes a sleeper, which tries again at
        // once: it sleeps inside its submission, its CPU work done.
        if let Some(w) = self.tag_waiters.pop_front() {
            self.readers[w].blocked_on_tag = false;
            self.submit_in(w, 0);
        }
        if std::mem::take(&mut self.restart) || run || !self.dispatch_list.is_empty() {
            self.run_queue();
        }
    }
}
