// SPDX-License-Identifier: GPL-2.0

//! The ports of the single-queue schedulers (noop, SIO, V(R)) on the
//! 7200 rpm disk: each runs a mixed workload of sequential and random
//! reads, write-back writes and synchronous writes to the end, every job
//! getting its share, with the policy's invariants checked after every
//! event (the simulation does). `none` and `rust-deadline` run the same
//! for reference.
//!
//! ```text
//! cargo test --release -p ironlift-host-model --test old_schedulers -- --nocapture
//! ```

use ironlift_host_model::device::{by_name, Device};
use ironlift_host_model::scenario::{fio, fio_write, run, Outcome, Scheduler};
use ironlift_host_model::sim::{Machine, Reader, SEC};
use ironlift_policy::Nanos;

const M: Machine = Machine {
    sched_tags: 64,
    max_sectors: 255,
    run_cost: 2_000,
};

/// The 7200 rpm disk without command queueing, its write cache on: one
/// request at a time, the order the scheduler's.
fn hdd() -> Box<dyn Device> {
    by_name("hdd-7200", Some(1)).expect("a known model")
}

/// Measured after 2 s of ramp, for 18 s.
const WINDOW: (Nanos, Nanos) = (2 * SEC, 20 * SEC);

/// A sequential reader (64 KiB, iodepth 4), a random reader (4 KiB over
/// 512 MiB, iodepth 4), a write-back writer (sequential 128 KiB, 8 in
/// flight) and a synchronous random writer (4 KiB over 512 MiB, iodepth
/// 2), each in its own region of the disk.
fn mixed() -> [Reader; 4] {
    [
        fio(0, 128, 4, 0),
        fio(1 << 26, 8, 4, 1 << 17),
        fio_write(1 << 27, 255, 8, 0, false),
        fio_write(1 << 28, 8, 2, 1 << 17, true),
    ]
}

const JOBS: [&str; 4] = ["seq read", "rand read", "wb write", "sync write"];

fn mixed_run(s: Scheduler) -> Outcome {
    let readers = mixed();
    let out = run(M, hdd(), s, &readers, WINDOW, WINDOW.1);
    let kib_s = |b: u64| b as f64 / 1024.0 / ((WINDOW.1 - WINDOW.0) as f64 / 1e9);
    let jobs: Vec<String> = JOBS
        .iter()
        .zip(&out.bytes)
        .map(|(j, &b)| format!("{j} {:.0} KiB/s", kib_s(b)))
        .collect();
    eprintln!(
        "hdd-7200 mixed, {}: {:.2} MB/s ({}), {:.1} KiB per request",
        s.name(),
        out.mb_s(WINDOW),
        jobs.join(", "),
        out.kib_per_request()
    );
    out
}

/// What a job whose requests expire after `expire_ms` must complete
/// over the window at the least: its iodepth once per expire time (and a
/// second of slack).
fn deadline_floor(r: &Reader, expire_ms: u64) -> u64 {
    let window_ms = (WINDOW.1 - WINDOW.0) / (SEC / 1000);
    u64::from(r.iodepth) * (window_ms / (expire_ms + 1000))
}

/// Every job completed at least `floor(job)` of its own requests' worth
/// over the window.
fn every_job_progresses(out: &Outcome, floor: impl Fn(usize, &Reader) -> u64) {
    for (i, ((job, &bytes), r)) in JOBS.iter().zip(&out.bytes).zip(mixed()).enumerate() {
        let requests = bytes / (u64::from(r.bs) * 512);
        let want = floor(i, &r);
        assert!(
            requests >= want,
            "{job}: {requests} requests' worth in {} s, want {want}",
            (WINDOW.1 - WINDOW.0) / SEC
        );
    }
}

/// The jobs that write.
const WRITES: [bool; 4] = [false, false, true, true];
/// The jobs that do not wait for their I/O.
const ASYNC: [bool; 4] = [false, false, true, false];

#[test]
fn noop_completes_a_mixed_workload_on_hdd_7200() {
    let out = mixed_run(Scheduler::Noop);
    // A FIFO: a request waits only for the at most 17 requests of the
    // others ahead of it, well under a second on this disk.
    every_job_progresses(&out, |_, r| deadline_floor(r, 0));
}

#[test]
fn sio_completes_a_mixed_workload_on_hdd_7200() {
    let out = mixed_run(Scheduler::Sio);
    // A read, then a sync write if one waits (writes_starved 0), so the
    // write-back writer gets the disk only when neither does, or when
    // its 16 s deadline passes: SIO's async limits are soft.
    every_job_progresses(&out, |i, r| match (WRITES[i], ASYNC[i]) {
        (false, _) => deadline_floor(r, 500),
        (true, false) => deadline_floor(r, 2_000),
        (true, true) => deadline_floor(r, 16_000),
    });
}

#[test]
fn vr_completes_a_mixed_workload_on_hdd_7200() {
    let out = mixed_run(Scheduler::Vr);
    // Nearest first, which keeps the head on the write-back stream; the
    // FIFOs, looked at every second dispatch, serve the others once their
    // requests expire (500 ms sync, 5 s async).
    every_job_progresses(&out, |i, r| {
        deadline_floor(r, if ASYNC[i] { 5_000 } else { 500 })
    });
}

#[test]
fn reference_schedulers_run_the_same_workload() {
    every_job_progresses(&mixed_run(Scheduler::None), |_, r| deadline_floor(r, 0));
    // mq-deadline's expire times: 500 ms for reads, 5 s for writes.
    every_job_progresses(&mixed_run(Scheduler::Deadline), |i, r| {
        deadline_floor(r, if WRITES[i] { 5_000 } else { 500 })
    });
}
