// SPDX-License-Identifier: GPL-2.0

//! The fsync chain ([`scenario::fsync_chain`]): an application's sync
//! write, then a journal thread's commit that the application waits for,
//! `N` times, under each scheduler on each device model: the time the chain
//! takes and the time per transaction, as a Markdown table. Simulated
//! time; the same output on every run.
//!
//! ```text
//! cargo run --release -p ironlift-host-model --example fsync_chain [N [WARMUP]]
//! ```

mod common;

use common::{machine, DEVICES, SCHEDULERS};
use ironlift_host_model::device::Device;
use ironlift_host_model::scenario::fsync_chain_time;

fn main() {
    let arg = |i: usize, default: u32| -> u32 {
        std::env::args()
            .nth(i)
            .map(|a| a.parse().expect("a number of transactions"))
            .unwrap_or(default)
    };
    let (n, warmup) = (arg(1, 100), arg(2, 3000));
    println!(
        "### fsync chain: {n} transactions after {warmup} of an earlier workload, \
         ms in all (ms per transaction)\n"
    );
    print!("| device |");
    for s in SCHEDULERS {
        print!(" {} |", s.name());
    }
    println!("\n|---|{}", "---:|".repeat(SCHEDULERS.len()));
    for dev in DEVICES {
        let m = machine(dev().as_ref());
        print!("| {} |", dev().name());
        for s in SCHEDULERS {
            match fsync_chain_time(m, dev(), s, n, 200_000, warmup) {
                Some(t) => {
                    let ms = t as f64 / 1e6;
                    print!(" {ms:.1} ({:.2}) |", ms / n as f64)
                }
                None => print!(" did not finish |"),
            }
        }
        println!();
    }
}
