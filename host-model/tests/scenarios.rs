// SPDX-License-Identifier: GPL-2.0

//! Whole scenarios of the in-guest tests and benchmarks, run against the
//! BFQ-like policy (and, for the start-up, the deadline one) on models of
//! the guest's null_blk devices (their timing from
//! configs/devices/guest.toml), with the figures the guest measured. One
//! test checks that
//! handing completions over at once instead of deferring them as rust-bfq
//! does gives the same figures.

use ironlift_host_model::device::{Device, Fixed, Flash};
use ironlift_host_model::guest;
use ironlift_host_model::scenario::{self, fio, startup, Outcome, Scheduler};
use ironlift_host_model::sim::{bfq, deadline, Io, Machine, Reader, Sim, MS, SEC};
use ironlift_policy::sched::SchedPolicy;
use ironlift_policy::{Nanos, Policy};
use std::cell::Cell;

thread_local! {
    /// Whether the simulations of this thread hand completions to the
    /// policy as rust-bfq does (a `TimedLog`: at once only while requests
    /// are queued, else at the next insertion or dispatch) rather than at
    /// once, every time.
    static DEFER_COMPLETIONS: Cell<bool> = const { Cell::new(true) };
    /// How many completions were deferred in this thread.
    static DEFERRED: Cell<u64> = const { Cell::new(0) };
}

/// A simulation as the thread's tests set it up.
fn sim<P: SchedPolicy>(
    m: Machine,
    dev: &Fixed,
    b: P,
    readers: &[Reader],
    window: (Nanos, Nanos),
) -> Sim<P> {
    Sim::new(
        m,
        Box::new(dev.clone()),
        b,
        readers,
        window,
        DEFER_COMPLETIONS.get(),
    )
}

/// Runs `s` to `until`, counting its deferred completions.
fn run<P: SchedPolicy>(s: &mut Sim<P>, until: Nanos) {
    s.run(until);
    DEFERRED.set(DEFERRED.get() + s.deferred);
}

/// blk-mq's `nr_requests` with a scheduler on a device of `depth`: twice
/// the depth, up to 256 (block/blk-mq-sched.c).
fn default_sched_tags(depth: usize) -> usize {
    2 * depth.min(128)
}

/// The in-guest fairness test's device (2 ms a request, depth 2).
const FAIRNESS_DEVICE: &str = "nullb-slow";

/// The fairness test's device's queue: the default `nr_requests`, 127 KiB
/// requests at most, a queue run's CPU cost.
fn fairness_machine() -> Machine {
    Machine {
        sched_tags: default_sched_tags(Fixed::guest(FAIRNESS_DEVICE).depth),
        max_sectors: 255,
        run_cost: 30_000,
    }
}

/// The in-guest fairness test: two fio readers (16 KiB, libaio iodepth 8)
/// under `ionice -c2 -n0` and `-n4` on [`FAIRNESS_DEVICE`]; bytes over
/// 20 s after a 5 s ramp. Without
/// `set_device_depth` this gives 1:15 (the guest measured 1:12): the
/// requests parked on the dispatch list make `hw_tag` say "queueing".
/// Simulated throughput is 16 MB/s, the guest's 14 to 15.
fn fairness_run(submit_cost: Nanos) -> Bytes {
    fairness_run_under(bfq, submit_cost)
}

/// [`fairness_run`]'s readers under the policy `make` builds.
fn fairness_run_under<P: SchedPolicy>(
    make: impl Fn(&Machine, &dyn Device, usize) -> P,
    submit_cost: Nanos,
) -> Bytes {
    let m = fairness_machine();
    let dev = Fixed::guest(FAIRNESS_DEVICE);
    let reader = |level, start| Reader {
        io: Io::Read,
        level,
        start,
        bs: 32,
        iodepth: 8,
        submit_cost,
        random_blocks: 0,
        count: 0,
        start_at: 0,
        after: None,
        wakes: None,
    };
    let readers = [reader(0, 1 << 30), reader(4, 0)];
    let mut s = sim(
        m,
        &dev,
        make(&m, &dev, readers.len()),
        &readers,
        (5 * SEC, 25 * SEC),
    );
    run(&mut s, 25 * SEC);
    (s.readers[0].bytes, s.readers[1].bytes)
}

/// The band the fairness tests' 1:2 weights must put the bytes in
/// (level 0's over level 4's), as the in-guest fairness test judges it.
const WEIGHTED: std::ops::RangeInclusive<f64> = 1.7..=2.3;

/// The bytes each reader of a fairness run got: level 0's, level 4's.
type Bytes = (u64, u64);

/// Level 0's bytes over level 4's.
fn ratio((hi, lo): Bytes) -> f64 {
    hi as f64 / lo.max(1) as f64
}

/// The bytes [`fairness_run`] gives each reader (level 0, level 4) for
/// each submit cost, under BFQ and under deadline. These are the
/// simulation's output for this input, taken from a run: the simulator is
/// deterministic, so the same readers, device and policy give the same
/// bytes to the byte. They are the judge; the ratio bands beside them say
/// only that these bytes are the in-guest test's 1:2 (BFQ) and 1:1
/// (deadline). A change that moves them (to the policy, the simulator or
/// the device model) must explain the new figures before they replace
/// these.
const FAIRNESS_BYTES: [(Nanos, Bytes, Bytes); 3] = [
    (
        20_000,
        (763_936_768, 382_255_104),
        (163_840_000, 163_840_000),
    ),
    (
        100_000,
        (627_408_896, 312_819_712),
        (163_840_000, 163_840_000),
    ),
    (
        400_000,
        (201_261_056, 100_466_688),
        (163_840_000, 163_840_000),
    ),
];

#[test]
fn weights_1_to_2_give_bytes_1_to_2() {
    for (cost, want_bfq, want_deadline) in FAIRNESS_BYTES {
        let b = fairness_run(cost);
        // The negative control: the same readers under deadline, which
        // has no weights, must land outside the band, near 1:1; else the
        // band could not tell weights from none.
        let d = fairness_run_under(|m, _, _| deadline(m), cost);
        let mb = |x: u64| x as f64 / 1e6;
        eprintln!(
            "submit cost {cost} ns: bfq {b:?} bytes ({:.1} MB : {:.1} MB, ratio {:.3}), \
             deadline {d:?} ({:.1} MB : {:.1} MB, ratio {:.3})",
            mb(b.0),
            mb(b.1),
            ratio(b),
            mb(d.0),
            mb(d.1),
            ratio(d)
        );
        assert_eq!(b, want_bfq, "bfq's bytes, submit cost {cost} ns");
        assert_eq!(d, want_deadline, "deadline's bytes, submit cost {cost} ns");
        assert!(WEIGHTED.contains(&ratio(b)), "bfq's ratio {:.3}", ratio(b));
        assert!(
            !WEIGHTED.contains(&ratio(d)) && (0.9..=1.1).contains(&ratio(d)),
            "deadline's ratio {:.3}",
            ratio(d)
        );
    }
}

/// The fairness test's device and readers again, with completions up to
/// 20 µs late as a guest's timer delivers them: what the scheduler merges
/// decides the throughput there. In the guest (`cargo xtask test`, the
/// fairness test's lines, 2026-12-02): mq-deadline 40-51 MB/s in 56-61 KiB
/// requests at 1:1, rust-bfq without its merge wait 11 MB/s in 17 KiB
/// requests at 2.0; the model gives deadline 46 MB/s in 45 KiB, BFQ 56
/// MB/s in 64 KiB at 2.0 with the merge wait (16.8 in 16.5 without).
/// Without the jitter the model's two device slots stay in step and
/// deadline sends 16 KiB.
#[test]
fn fairness_device_merges_as_in_the_guest() {
    let m = fairness_machine();
    let reader = |level, start| Reader {
        level,
        ..fio(start, 32, 8, 0)
    };
    let readers = [reader(0, 1 << 30), reader(4, 0)];
    let window = (5 * SEC, 25 * SEC);
    let got = |s, jitter| {
        let dev = Fixed::guest(FAIRNESS_DEVICE).with_jitter(jitter);
        scenario::run(m, Box::new(dev), s, &readers, window, window.1)
    };
    let line = |name, o: &Outcome| {
        let ratio = o.bytes[0] as f64 / o.bytes[1].max(1) as f64;
        eprintln!(
            "{name}: {:.1} MB/s, {:.1} KiB per request, ratio {ratio:.3}",
            o.mb_s(window),
            o.kib_per_request()
        );
        ratio
    };
    let d = got(Scheduler::Deadline, 20_000);
    let b = got(Scheduler::Bfq, 20_000);
    let d_ratio = line("deadline", &d);
    let b_ratio = line("bfq", &b);
    let d0 = got(Scheduler::Deadline, 0);
    line("deadline, no jitter", &d0);
    // The simulation's output for this input, as [`FAIRNESS_BYTES`]
    // (each reader's bytes, then requests completed in the window): a
    // change that moves them must explain the new figures.
    let exact = |o: &Outcome| (o.bytes[0], o.bytes[1], o.requests);
    eprintln!(
        "deadline {:?}, bfq {:?}, deadline without jitter {:?}",
        exact(&d),
        exact(&b),
        exact(&d0)
    );
    assert_eq!(exact(&d), (458_850_304, 458_571_776, 19_901), "deadline");
    assert_eq!(exact(&b), (745_684_992, 373_080_064, 17_084), "bfq");
    assert_eq!(
        exact(&d0),
        (163_840_000, 163_840_000, 20_000),
        "deadline without jitter"
    );
    assert!(
        d.kib_per_request() > 40.0,
        "deadline {:.1} KiB",
        d.kib_per_request()
    );
    assert!(
        b.kib_per_request() > 40.0,
        "bfq {:.1} KiB",
        b.kib_per_request()
    );
    assert!(
        d0.kib_per_request() < 17.0,
        "deadline without jitter {:.1} KiB",
        d0.kib_per_request()
    );
    assert!(
        (0.9..=1.1).contains(&d_ratio) && !WEIGHTED.contains(&d_ratio),
        "deadline's ratio {d_ratio:.3}"
    );
    assert!(WEIGHTED.contains(&b_ratio), "bfq's ratio {b_ratio:.3}");
}

/// An application that sleeps for a scheduler tag sends the read it was
/// about to send once it gets one (it reads the same files as alone), and
/// it tries at once when woken: it used to wait its 3.6 ms of CPU again,
/// the greedy reader took every freed tag first, and the application
/// never finished.
#[test]
fn a_reader_woken_with_a_tag_sends_the_bio_it_held() {
    let m = Machine {
        sched_tags: 2,
        max_sectors: 255,
        run_cost: 30_000,
    };
    let app = startup(0).1;
    let greedy = fio(1 << 30, 32, 4, 0);
    let window = (0, 3600 * SEC);
    let got = |readers: &[Reader]| {
        let dev = Fixed::new(2 * MS, 1);
        scenario::run(m, Box::new(dev), Scheduler::None, readers, window, window.1)
    };
    let alone = got(&[app]);
    let loaded = got(&[greedy, app]);
    assert!(alone.app.is_some() && loaded.app.is_some());
    assert!(loaded.app > alone.app, "the tags were never short");
    assert_eq!(alone.bytes[0], loaded.bytes[1]);
}

/// The overhead benchmark's workload: two fio jobs of 4 KiB random reads,
/// iodepth 32 each, on the benchmarks' fast `nullb` (its depth, the default
/// scheduler tags), each request taking `service`. Returns requests
/// completed in the window, mean device occupancy, and mean free device
/// slots while the scheduler held requests.
fn randread_run(service: Nanos, submit_cost: Nanos, strict: bool) -> (u64, f64, f64) {
    let dev = Fixed::new(service, guest::null_blk("nullb").hw_queue_depth);
    let m = Machine {
        sched_tags: default_sched_tags(dev.depth),
        max_sectors: 255,
        run_cost: 2_000,
    };
    let reader = |start| Reader {
        io: Io::Read,
        level: 4,
        start,
        bs: 8,
        iodepth: 32,
        submit_cost,
        random_blocks: 1 << 18,
        count: 0,
        start_at: 0,
        after: None,
        wakes: None,
    };
    let readers = [reader(0), reader(1 << 30)];
    let window = (SEC, 2 * SEC);
    let mut s = sim(m, &dev, bfq(&m, &dev, readers.len()), &readers, window);
    if strict {
        s.set_tunable("strict_guarantees", "1").unwrap();
    }
    run(&mut s, window.1);
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

/// The device under the startup suite (a guest null_blk device with timer
/// completions) and the readers' head start.
#[derive(Clone, Copy, Debug)]
struct StartupDevice {
    device: &'static str,
    head_start: Nanos,
}

/// nullb-slow (2 ms a request) with a head start of the readers shorter
/// than BFQ's weight raising
/// (`docs/measurements/2026-11-30-startup-head-start.md`).
const NULLB_SLOW: StartupDevice = StartupDevice {
    device: "nullb-slow",
    head_start: 10 * SEC,
};

/// The startup suite's device, nullb-8ms (8 ms a request), with its head
/// start past the readers' weight raising.
const NULLB_8MS: StartupDevice = StartupDevice {
    device: "nullb-8ms",
    head_start: 26 * SEC,
};

/// The startup suite ([`startup`]: an application reading 170 files one
/// at a time, [`APP_THINK`] of CPU between them, while 4 greedy sequential
/// readers have run for a head start; and the same application alone) on
/// `dev`. Returns (loaded, alone) start-up times.
fn startup_run<P: SchedPolicy>(
    make: impl Fn(&Machine, &dyn Device, usize) -> P,
    dev: StartupDevice,
) -> (Nanos, Nanos) {
    let m = Machine {
        sched_tags: 64,
        max_sectors: 255,
        run_cost: 30_000,
    };
    let blk = Fixed::guest(dev.device);
    let (loaded, alone) = startup(dev.head_start);
    assert_eq!(alone.submit_cost, APP_THINK);
    let time = |readers: &[Reader], start_at| {
        let mut s = sim(m, &blk, make(&m, &blk, readers.len()), readers, (0, 0));
        let app = readers.len() - 1;
        run(&mut s, start_at + 60 * SEC);
        s.readers[app].done_at.expect("the application finished") - start_at
    };
    (time(&loaded, dev.head_start), time(&[alone], 0))
}

/// The application's CPU time between reads (tar, cat and ext4 under
/// TCG): it makes the simulated alone time on nullb-slow the guest's.
const APP_THINK: Nanos = 3_600_000;

/// The startup suite on `dev` under the BFQ and the deadline policy:
/// (bfq, deadline, alone) start-up times.
fn startup_both(dev: StartupDevice) -> (Nanos, Nanos, Nanos) {
    let (b_loaded, b_alone) = startup_run(bfq, dev);
    let (d_loaded, d_alone) = startup_run(|m, _, _| deadline(m), dev);
    assert_eq!(b_alone, d_alone, "alone, the policy does not matter");
    (b_loaded, d_loaded, b_alone)
}

fn ms(t: Nanos) -> f64 {
    t as f64 / 1e6
}

#[test]
fn startup_under_readers_bfq_near_alone_deadline_not() {
    // The guest's startup suite on nullb-slow (2026-11-30): alone 0.96 s; loaded, rust-bfq
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
    // it (weight raising alone) its reads wait for the readers' requests
    // in the device (1.20 x alone).
    let no_idle = |m: &Machine, d: &dyn Device, n| {
        let mut b = bfq(m, d, n);
        b.set_tunable("slice_idle", "0").unwrap();
        b
    };
    let (n_loaded, _) = startup_run(no_idle, NULLB_SLOW);
    let nx = n_loaded as f64 / alone as f64;
    eprintln!(
        "bfq with slice_idle 0: {:.0} ms ({nx:.2} x alone)",
        ms(n_loaded)
    );
    assert!(nx > 1.15, "bfq without idling {nx:.2} x alone");
}

#[test]
fn startup_on_8ms_device_after_weight_raising() {
    // The startup suite's device: 8 ms per request, where
    // the application's I/O, not its CPU time, makes most of its start-up.
    // The think time is the 2 ms device's (the same CPU work).
    let past = NULLB_8MS;
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
    // With the 10 s head start of the 2 ms device: the model's readers
    // are raised for their first 3 s only (the guest's C bfq raised them
    // for longer on this device and served them as the application's
    // equals at 10 s). The raised application then holds the readers, of
    // weight 40 beside its 1200, to their share of the 64 tags (2 each,
    // what they hold: one tag between them); it runs as if alone.
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
    assert!(ex < 1.15, "bfq after 10 s {ex:.2} x alone");
}

/// The devices the scenarios model are the guest's null_blk devices of
/// configs/devices/guest.toml, where their timing comes from.
/// The fsync chain ([`scenario::fsync_chain`]: a process's sync write,
/// then the journal thread's commit it waits for, 200 µs of CPU between
/// transactions) on the SATA SSD model, the guest's phoronix device: the
/// chain's time under rust-bfq and rust-deadline. In the guest, SQLite's
/// 100 inserts took 3.3 to 4.2 s under rust-bfq, 0.74 to 0.93 s under the
/// others: the device idled for the process while the commit it waited
/// for was queued. Simulated, without wakers rust-bfq took 20.4 ms a
/// transaction (the weight-raised process's 20 ms idle slice), deadline
/// 0.42 ms. With them the commit waits for the idle slice only until the
/// journal thread is detected as the process's waker (a few transactions,
/// once): about 80 ms in all, which 1000 transactions make small.
fn fsync_chain_time(s: Scheduler, transactions: u32) -> Nanos {
    let m = Machine {
        sched_tags: 64,
        max_sectors: 255,
        run_cost: 2_000,
    };
    let dev = Box::new(Flash::sata_ssd());
    scenario::fsync_chain_time(m, dev, s, transactions, 200_000, 3000).expect("the chain finished")
}

#[test]
fn fsync_chain_under_bfq_within_1_5_times_deadline() {
    for n in [100, 1000] {
        let (b, d) = (
            fsync_chain_time(Scheduler::Bfq, n),
            fsync_chain_time(Scheduler::Deadline, n),
        );
        eprintln!(
            "fsync chain, {n} transactions: rust-bfq {:.1} ms, rust-deadline {:.1} ms: {:.2} x",
            ms(b),
            ms(d),
            b as f64 / d as f64
        );
        // Detection costs a few idle slices, once.
        assert!(b < d + 100 * MS, "rust-bfq {b} ns, deadline {d} ns");
        if n >= 1000 {
            assert!(
                b as f64 <= 1.5 * d as f64,
                "rust-bfq {b} ns, deadline {d} ns"
            );
        }
    }
}

#[test]
fn the_scenario_devices_are_the_guests() {
    let guest = guest::null_blk_devices();
    for name in [
        FAIRNESS_DEVICE,
        NULLB_SLOW.device,
        NULLB_8MS.device,
        "nullb",
    ] {
        assert!(guest.iter().any(|(n, _)| n == name), "{name}");
    }
    let slow = Fixed::guest(NULLB_SLOW.device);
    let n = guest::null_blk(NULLB_SLOW.device);
    assert_eq!(
        (slow.service, slow.depth),
        (n.completion_nsec, n.hw_queue_depth)
    );
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
    both("startup, 8 ms device", || startup_both(NULLB_8MS));
}

/// The fairness test's device and readers on a loaded host: the idle
/// timer (which also ends rust-bfq's merge wait) firing up to 2 ms late,
/// and one reader starting up to 0.8 s after the other, as a guest whose
/// vCPUs the host preempts sees them. The merge wait still merges (over
/// 35 MB/s where the tree gave 16.8 without it) and the weights hold;
/// deadline, with the same readers, serves them near 1:1.
#[test]
fn fairness_holds_with_late_timers_and_a_late_reader() {
    let m = fairness_machine();
    let dev = Fixed::guest(FAIRNESS_DEVICE).with_jitter(20_000);
    let window = (5 * SEC, 25 * SEC);
    // Which reader starts late, by how much, how late the idle timer
    // fires; then the bytes each reader gets (level 0, level 4) under BFQ
    // and under deadline. The bytes are the simulation's output for this
    // input, as [`FAIRNESS_BYTES`]: a change that moves them must explain
    // the new figures.
    let cases: [(usize, Nanos, Nanos, Bytes, Bytes); 5] = [
        (
            0,
            0,
            2 * MS,
            (545_783_808, 272_629_760),
            (458_850_304, 458_571_776),
        ),
        (
            0,
            800 * MS,
            0,
            (746_307_584, 374_964_224),
            (458_637_312, 458_883_072),
        ),
        (
            1,
            800 * MS,
            0,
            (750_632_960, 374_308_864),
            (458_883_072, 458_637_312),
        ),
        (
            0,
            800 * MS,
            2 * MS,
            (546_193_408, 273_301_504),
            (458_637_312, 458_883_072),
        ),
        (
            1,
            800 * MS,
            2 * MS,
            (545_456_128, 269_615_104),
            (458_883_072, 458_637_312),
        ),
    ];
    for (late_reader, skew, timer_late, want_bfq, want_deadline) in cases {
        let reader = |r: usize, level, start| Reader {
            level,
            start_at: if r == late_reader { skew } else { 0 },
            ..fio(start, 32, 8, 0)
        };
        let readers = [reader(0, 0, 1 << 30), reader(1, 4, 0)];
        fn bytes<P: SchedPolicy>(mut s: Sim<P>, timer_late: Nanos, until: Nanos) -> Bytes {
            s.set_timer_late(timer_late);
            run(&mut s, until);
            (s.readers[0].bytes, s.readers[1].bytes)
        }
        let b = bytes(
            sim(m, &dev, bfq(&m, &dev, readers.len()), &readers, window),
            timer_late,
            window.1,
        );
        let d = bytes(
            sim(m, &dev, deadline(&m), &readers, window),
            timer_late,
            window.1,
        );
        let mb_s = (b.0 + b.1) as f64 / 1e6 / ((window.1 - window.0) as f64 / 1e9);
        eprintln!(
            "reader {late_reader} {} ms late, timers up to {} µs late: bfq {b:?} bytes, \
             {mb_s:.1} MB/s, ratio {:.3}; deadline {d:?}, ratio {:.3}",
            skew / MS,
            timer_late / 1000,
            ratio(b),
            ratio(d)
        );
        assert_eq!(b, want_bfq, "bfq's bytes");
        assert_eq!(d, want_deadline, "deadline's bytes");
        assert!((1.8..=2.2).contains(&ratio(b)), "ratio {:.3}", ratio(b));
        assert!(mb_s > 35.0, "{mb_s:.1} MB/s");
        assert!(
            !WEIGHTED.contains(&ratio(d)) && (0.9..=1.1).contains(&ratio(d)),
            "deadline's ratio {:.3}",
            ratio(d)
        );
    }
}

/// `Sim::run` in steps runs the same events as in one call: an event due
/// after a step's end waits for the next step.
#[test]
fn running_in_steps_is_running_at_once() {
    let m = fairness_machine();
    let readers = [
        Reader {
            level: 0,
            ..fio(1 << 30, 32, 8, 0)
        },
        Reader {
            level: 4,
            ..fio(0, 32, 8, 0)
        },
    ];
    let window = (SEC, 3 * SEC);
    let dev = Fixed::guest(FAIRNESS_DEVICE).with_jitter(20_000);
    let make = || sim(m, &dev, bfq(&m, &dev, readers.len()), &readers, window);
    let mut once = make();
    once.run(window.1);
    let mut steps = make();
    for ms in (0..3_000).step_by(7) {
        steps.run(ms * MS);
    }
    steps.run(window.1);
    let bytes = |s: &Sim<_>| s.readers.iter().map(|r| r.bytes).collect::<Vec<_>>();
    assert!(bytes(&once).iter().all(|&b| b > 0), "{:?}", bytes(&once));
    assert_eq!(bytes(&steps), bytes(&once));
}
