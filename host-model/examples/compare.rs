// SPDX-License-Identifier: GPL-2.0

//! What each scheduler (none, deadline, bfq, as, cfq) gives on each device model: two fio-like jobs of
//! random and of sequential reads (measured as the guest's fio-basic
//! suite does: 10 s after 2 s of ramp), and an application's start-up
//! under four greedy sequential readers (the startup suite's scenario),
//! printed as Markdown tables. Simulated time; the same output on every
//! run.
//!
//! ```text
//! cargo run --release -p ironlift-host-model --example compare
//! ```

mod common;

use common::{machine, DEVICES, SCHEDULERS};
use ironlift_host_model::device::Device;
use ironlift_host_model::scenario::{alone_time, fio, run, startup_time};
use ironlift_host_model::sim::SEC;

fn main() {
    // As the guest's fio-basic suite: 2 s of ramp, 10 s measured.
    let window = (2 * SEC, 12 * SEC);
    for (name, readers) in [
        (
            "randread: 2 jobs, 4 KiB, iodepth 32",
            [fio(0, 8, 32, 1 << 20), fio(1 << 30, 8, 32, 1 << 20)],
        ),
        (
            "seqread: 2 jobs, 4 KiB bios, iodepth 32",
            [fio(0, 8, 32, 0), fio(1 << 30, 8, 32, 0)],
        ),
    ] {
        println!("### {name}\n");
        println!(
            "| device | none MB/s | deadline MB/s | bfq MB/s | as MB/s | cfq MB/s | bfq / none \
             | bfq: job 1 / job 2 | KiB per request: none / deadline / bfq / as / cfq |"
        );
        println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
        for dev in DEVICES {
            let m = machine(dev().as_ref());
            let out = SCHEDULERS.map(|s| run(m, dev(), s, &readers, window, window.1));
            let mb = out.clone().map(|o| o.mb_s(window));
            let b = &out[2].bytes;
            let kib = out.clone().map(|o| o.kib_per_request());
            println!(
                "| {} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.2} | {:.2} | {:.1} / {:.1} / {:.1} / {:.1} / {:.1} |",
                dev().name(),
                mb[0],
                mb[1],
                mb[2],
                mb[3],
                mb[4],
                mb[2] / mb[0].max(1e-9),
                b[0] as f64 / b[1].max(1) as f64,
                kib[0],
                kib[1],
                kib[2],
                kib[3],
                kib[4]
            );
        }
        println!();
    }

    println!(
        "### start-up: 170 small reads one at a time, 3.6 ms of CPU between them, \
         under 4 sequential readers (64 KiB, iodepth 2)\n"
    );
    println!(
        "| device | alone ms | none ms | deadline ms | bfq ms | as ms | cfq ms | bfq / deadline |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    let ms = |t: Option<u64>| t.map_or("-".to_string(), |t| format!("{:.0}", t as f64 / 1e6));
    for dev in DEVICES {
        let m = machine(dev().as_ref());
        let t = SCHEDULERS.map(|s| startup_time(m, dev(), s, 10 * SEC));
        let ratio = match (t[2], t[1]) {
            (Some(b), Some(d)) => format!("{:.2}", b as f64 / d as f64),
            _ => "-".into(),
        };
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {ratio} |",
            dev().name(),
            ms(alone_time(m, dev())),
            ms(t[0]),
            ms(t[1]),
            ms(t[2]),
            ms(t[3]),
            ms(t[4]),
        );
    }
}
