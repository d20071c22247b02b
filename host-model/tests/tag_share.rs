// SPDX-License-Identifier: GPL-2.0

//! BFQ's share of the scheduler tags on a shallow device: with 4 tags
//! (null_blk `nullb-8ms` at its default `nr_requests`, twice its hardware
//! depth of 2) and greedy readers that keep more requests queued than
//! that, a starting application sleeps for a tag before the scheduler sees
//! its reads, unless each reader is held to its weight's share of the tags
//! while a weight-raised queue is active (`Bfq::tag_depth`).

use ironlift_host_model::device::{Device, Fixed};
use ironlift_host_model::scenario::{fio, run, Scheduler};
use ironlift_host_model::sim::{Io, Machine, Reader, MS, SEC};
use ironlift_policy::Nanos;

const M: Machine = Machine {
    sched_tags: 4,
    max_sectors: 255,
    run_cost: 2_000,
};

fn nullb_8ms() -> Box<dyn Device> {
    Box::new(Fixed::jittered(8 * MS, 2, 20_000))
}

/// Five readers as the S suite's start-up benchmark runs them (buffered
/// sequential reads: about two 124 KiB read-ahead requests in flight
/// each), then an application that starts after `head` and reads 300
/// small files one at a time, thinking 0.1 ms between them. The
/// application's start-up time under `s`.
fn startup(s: Scheduler, head: Nanos, readers: u32) -> Option<Nanos> {
    let mut all: Vec<Reader> = (0..readers)
        .map(|i| Reader {
            submit_cost: 100_000,
            ..fio(1 << (22 + i), 248, 2, 0)
        })
        .collect();
    all.push(Reader {
        io: Io::Read,
        level: 4,
        start: 1 << 20,
        bs: 8,
        iodepth: 1,
        submit_cost: 100_000,
        random_blocks: 0,
        count: 300,
        start_at: head,
        after: None,
        wakes: None,
    });
    run(M, nullb_8ms(), s, &all, (0, 0), head + 120 * SEC).app
}

#[test]
fn startup_under_readers_at_4_tags() {
    let ms = |t: Nanos| t as f64 / MS as f64;
    let alone = startup(Scheduler::None, 0, 0).expect("finished alone");
    let d = startup(Scheduler::Deadline, 7 * SEC, 5).expect("finished under deadline");
    let b = startup(Scheduler::Bfq, 7 * SEC, 5).expect("finished under bfq");
    eprintln!(
        "start-up at 4 tags: alone {:.0} ms, deadline {:.0} ms, bfq {:.0} ms ({:.2} x deadline)",
        ms(alone),
        ms(d),
        ms(b),
        b as f64 / d as f64
    );
    assert!(b * 2 < d, "bfq {:.0} ms, deadline {:.0} ms", ms(b), ms(d));
}
