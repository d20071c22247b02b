// SPDX-License-Identifier: GPL-2.0

//! The policies on the device models other than null_blk: what the
//! benchmarks that ironlift grew from show, in simulated time.

use ironlift_host_model::device::{by_name, Device, Flash};
use ironlift_host_model::scenario::{alone_time, fio, run, startup_time, Scheduler};
use ironlift_host_model::sim::{anticipatory, Machine, Reader, Sim, MS, SEC};
use ironlift_policy::Nanos;

const M: Machine = Machine {
    sched_tags: 64,
    max_sectors: 255,
    run_cost: 2_000,
};

/// The 7200 rpm disk without command queueing: one request at a time, as
/// the schedulers' rotational paths assume of a disk.
fn hdd() -> Box<dyn Device> {
    by_name("hdd-7200", Some(1)).expect("a known model")
}

fn nvme() -> Box<dyn Device> {
    Box::new(Flash::nvme())
}

#[test]
fn hdd_two_sequential_readers_bfq_keeps_the_head_on_one() {
    // Two fio jobs reading sequentially, far apart, 128 KiB in flight each.
    // Served request by request (none, deadline) the head seeks between
    // them all the time; BFQ idles for the queue in service and serves it
    // for its budget. Weight raising (both start as interactive, for about
    // 6 s here) lets BFQ inject the other queue's requests meanwhile, so
    // the window starts after it.
    let readers = [fio(0, 8, 32, 0), fio(1 << 30, 8, 32, 0)];
    let window = (10 * SEC, 20 * SEC);
    let got = |s| run(M, hdd(), s, &readers, window, window.1);
    let (n, d, b) = (
        got(Scheduler::None),
        got(Scheduler::Deadline),
        got(Scheduler::Bfq),
    );
    let (nm, dm, bm) = (n.mb_s(window), d.mb_s(window), b.mb_s(window));
    let split = b.bytes[0] as f64 / b.bytes[1].max(1) as f64;
    eprintln!(
        "hdd seqread x2: none {nm:.1} MB/s, deadline {dm:.1}, bfq {bm:.1} (split {split:.2})"
    );
    // What one of them gets alone: the disk's sequential rate for these
    // requests at depth 1 (the media rate less the controller's overhead
    // per request).
    let alone = run(M, hdd(), Scheduler::None, &readers[..1], window, window.1).mb_s(window);
    eprintln!("one reader alone: {alone:.1} MB/s");
    assert!(bm > 10.0 * dm, "bfq {bm:.1} MB/s, deadline {dm:.1}");
    assert!(
        bm > 2.0 / 3.0 * alone,
        "bfq {bm:.1} MB/s: one sequential reader alone gets {alone:.1}"
    );
    assert!((0.8..=1.25).contains(&split), "bfq's split {split:.2}");
    // The model is deterministic: the same input gives the same bytes, so
    // they are judged exactly (the simulation's output for this input; a
    // change of them is a change of decisions that its commit explains).
    assert_eq!(
        b.bytes,
        [498_987_008, 492_392_448],
        "bfq's bytes per reader"
    );
}

#[test]
fn hdd_sequential_reader_beside_a_random_one_keeps_its_throughput_under_as() {
    // What the anticipatory scheduler was built for ("deceptive
    // idleness"): a process reading 64 KiB at a time, one read in flight,
    // and another reading 4 KiB at random far away, also one at a time.
    // Served request by request (none, deadline), the head goes to the
    // random reader whenever the sequential one is between two reads, and
    // back: a seek each way per 64 KiB. AS waits up to 6 ms for the
    // sequential reader's next read after each completion, which comes
    // within microseconds, and serves the random reader when its read
    // expires (read_expire, 125 ms).
    let seq = fio(0, 128, 1, 0);
    let random = fio(1 << 30, 8, 1, 1 << 24);
    let window = (2 * SEC, 12 * SEC);
    let secs = (window.1 - window.0) as f64 / SEC as f64;
    let mb_s = |bytes: u64| bytes as f64 / secs / 1e6;
    let solo = mb_s(run(M, hdd(), Scheduler::None, &[seq], window, window.1).bytes[0]);
    let got = |s| {
        let o = run(M, hdd(), s, &[seq, random], window, window.1);
        (mb_s(o.bytes[0]), o.bytes[1] as f64 / secs / 4096.0)
    };
    let (none, deadline, as_) = (
        got(Scheduler::None),
        got(Scheduler::Deadline),
        got(Scheduler::As),
    );
    eprintln!(
        "hdd sequential 64 KiB reader, solo {solo:.1} MB/s; beside a random 4 KiB reader: \
         none {:.1} MB/s ({:.0} random IOPS), deadline {:.1} ({:.0}), as {:.1} ({:.0})",
        none.0, none.1, deadline.0, deadline.1, as_.0, as_.1
    );
    assert!(as_.0 > 0.75 * solo, "as {:.1} MB/s, solo {solo:.1}", as_.0);
    assert!(
        none.0 < 0.1 * solo,
        "none {:.1} MB/s, solo {solo:.1}",
        none.0
    );
    assert!(deadline.0 < 0.1 * solo, "deadline {:.1} MB/s", deadline.0);
    // The random reader is not starved: about one read per read_expire.
    assert!(as_.1 > 6.0, "as: {:.1} random IOPS", as_.1);
}

#[test]
fn hdd_as_deferred_completions_change_nothing() {
    // rust-as hands a completion to the policy at once only while requests
    // are queued, else at the next insertion or dispatch, with its time
    // (the module core's `TimedLog`): the same bytes and requests either
    // way.
    let seq = fio(0, 128, 1, 0);
    let random = fio(1 << 30, 8, 1, 1 << 24);
    let window = (SEC, 4 * SEC);
    let go = |readers: &[Reader], defer| {
        let p = anticipatory(&M, readers.len());
        let mut sim = Sim::new(M, hdd(), p, readers, window, defer);
        sim.run(window.1);
        let bytes: Vec<u64> = sim.readers.iter().map(|r| r.bytes).collect();
        ((bytes, sim.requests), sim.deferred)
    };
    let mut deferred = 0;
    for readers in [&[seq][..], &[seq, random], &[random]] {
        let (a, _) = go(readers, false);
        let (b, n) = go(readers, true);
        assert_eq!(a, b);
        deferred += n;
    }
    assert!(deferred > 0, "no completion was deferred");
}

#[test]
fn hdd_startup_under_sequential_readers() {
    // The startup suite's scenario on the disk.
    let time = |s| startup_time(M, hdd(), s, 10 * SEC);
    let d = time(Scheduler::Deadline).expect("finished under deadline");
    let b = time(Scheduler::Bfq).expect("finished under bfq");
    let alone = alone_time(M, hdd()).expect("finished alone");
    let ms = |t: Nanos| t as f64 / MS as f64;
    eprintln!(
        "hdd start-up: alone {:.0} ms, deadline {:.0} ms, bfq {:.0} ms ({:.2} x deadline)",
        ms(alone),
        ms(d),
        ms(b),
        b as f64 / d as f64
    );
    assert!(
        b * 10 < d * 3,
        "bfq {:.0} ms, deadline {:.0} ms",
        ms(b),
        ms(d)
    );
    // Alone, the disk's read-ahead serves most of the application's reads
    // (its files lie close together); under load the readers' streams
    // take the head away between them, so BFQ keeps it within twice its
    // time alone, not within the half more it was held to when the model
    // had no cache.
    assert!(
        b < alone * 2,
        "bfq {:.0} ms, alone {:.0} ms",
        ms(b),
        ms(alone)
    );
}

#[test]
fn nvme_random_reads_every_scheduler_fills_the_device() {
    // Seeky queues on a queueing flash device: BFQ neither idles nor holds
    // requests back, so it gives what none gives.
    let readers = [fio(0, 8, 32, 1 << 20), fio(1 << 30, 8, 32, 1 << 20)];
    let window = (100 * MS, 400 * MS);
    let got = |s| run(M, nvme(), s, &readers, window, window.1).mb_s(window);
    let (n, d, b) = (
        got(Scheduler::None),
        got(Scheduler::Deadline),
        got(Scheduler::Bfq),
    );
    eprintln!("nvme randread x2: none {n:.1} MB/s, deadline {d:.1}, bfq {b:.1}");
    assert!(n > 1000.0, "none {n:.1} MB/s");
    assert!(
        b > 0.99 * n && d > 0.99 * n,
        "none {n:.1}, deadline {d:.1}, bfq {b:.1}"
    );
}

#[test]
fn hdd_a_sequential_reader_keeps_its_throughput_beside_a_random_one_under_cfq() {
    // What CFQ was built for: one process reading sequentially (64 KiB,
    // one at a time) beside one reading at random (4 KiB, one at a time).
    // Served request by request (none, deadline) the head seeks away after
    // every sequential read. CFQ gives each process a time slice (100 ms
    // at the default priority) and idles for it between its reads (the
    // random one too, as the last queue of the sync-noidle tree), so the
    // sequential reader reads sequentially for half the time.
    let readers = [fio(0, 128, 1, 0), fio(1 << 30, 8, 1, 1 << 20)];
    let window = (2 * SEC, 12 * SEC);
    let got = |s| run(M, hdd(), s, &readers, window, window.1);
    let seq_mb = |o: &ironlift_host_model::scenario::Outcome| {
        o.bytes[0] as f64 / ((window.1 - window.0) as f64 / 1e9) / 1e6
    };
    let solo = seq_mb(&run(
        M,
        hdd(),
        Scheduler::None,
        &readers[..1],
        window,
        window.1,
    ));
    let (n, d, c) = (
        got(Scheduler::None),
        got(Scheduler::Deadline),
        got(Scheduler::Cfq),
    );
    let rand_iops = |o: &ironlift_host_model::scenario::Outcome| {
        o.bytes[1] as f64 / 4096.0 / ((window.1 - window.0) as f64 / 1e9)
    };
    eprintln!(
        "hdd seq 64 KiB + rand 4 KiB, depth 1 each: sequential reader alone {solo:.1} MB/s; \
         beside the random one: none {:.1} MB/s, deadline {:.1}, cfq {:.1}; \
         random reader: none {:.0} IOPS, deadline {:.0}, cfq {:.0}",
        seq_mb(&n),
        seq_mb(&d),
        seq_mb(&c),
        rand_iops(&n),
        rand_iops(&d),
        rand_iops(&c),
    );
    assert!(seq_mb(&n) < 0.05 * solo, "none {:.1} MB/s", seq_mb(&n));
    assert!(seq_mb(&d) < 0.05 * solo, "deadline {:.1} MB/s", seq_mb(&d));
    assert!(seq_mb(&c) > 0.35 * solo, "cfq {:.1} MB/s", seq_mb(&c));
    assert!(
        rand_iops(&c) > 0.25 * rand_iops(&n),
        "the random reader is served too"
    );
}
