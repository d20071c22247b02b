// SPDX-License-Identifier: GPL-2.0

//! Runs the BFQ-like policy through the guest's overhead benchmark as a
//! trace (fio randread, 2 jobs, null_blk: see `benches/trace/mod.rs`) and
//! prints the trace's end time and the digest of every dispatch decision.
//!
//! To count the policy's instructions per request, as the kernel builds
//! it (overflow checks on), run it under callgrind twice and divide the
//! difference by the difference in requests:
//!
//! ```text
//! RUSTFLAGS="-C overflow-checks=on" cargo build --release -p ironlift-policy --example overhead_trace
//! valgrind --tool=callgrind target/release/examples/overhead_trace 1
//! valgrind --tool=callgrind target/release/examples/overhead_trace 200000
//! ```
//!
//! A change meant to make the policy cheaper without changing what it
//! decides must leave the digest as it was.

#[allow(dead_code)]
#[path = "../benches/trace/mod.rs"]
mod trace;

fn main() {
    let requests: usize = match std::env::args().nth(1).map(|a| a.parse()) {
        None => 200_000,
        Some(Ok(n)) => n,
        Some(Err(e)) => {
            eprintln!("overhead_trace: the argument must be a number of requests: {e}");
            std::process::exit(2);
        }
    };
    let mut t = trace::InFlight::new();
    for _ in 0..requests {
        t.step();
    }
    println!(
        "requests {requests} end {} ns digest {:016x}",
        t.now, t.digest
    );
}
