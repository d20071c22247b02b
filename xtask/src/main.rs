//! `cargo xtask`: ironlift's task runner.
//!
//! The README's two commands are `cargo xtask qemu-bench` (a benchmark
//! suite in a QEMU guest, [`suite`]) and `cargo xtask test` (host tests,
//! then the in-guest KTAP suite, [`test`]). The other commands are their
//! steps. This file parses the command line ([`flags`]) and dispatches.

mod blkserve;
mod blktests;
mod calibrate;
mod chart;
mod clippy;
mod compare;
mod debsrc;
mod deps;
mod devices;
mod fairness;
mod faults;
mod flags;
mod guest;
mod html;
mod insns;
mod kcidb;
mod kernel;
mod ktap;
mod kver;
mod line_chart;
mod modules;
mod monitor;
mod patches;
mod qemu;
mod report;
mod results;
mod seeds;
// The deliberate skips of tests; no unit test skips at present, so only
// its own test and xtask/tests/ (which include the file) call it.
#[cfg(test)]
#[allow(dead_code)]
mod skip;
mod stats;
mod suite;
mod summary;
mod test;
mod util;

use anyhow::Result;
use clap::Parser;
use flags::{Cli, Cmd};

fn main() {
    let res = match Cli::parse().cmd {
        Cmd::Deps { kernel } => deps::ensure(kernel).map(|_| ()),
        Cmd::Kernel { k } => kernel(&k).map(|_| ()),
        Cmd::Modules { k } => modules(&k),
        Cmd::QemuBench(o) => suite::qemu_bench(&o),
        Cmd::HostBench(o) => suite::host::host_bench(&o),
        Cmd::Compare(c) => compare::run(&c),
        Cmd::Test(t) => test::run(&t),
        Cmd::Devices(d) => calibrate::run(&d),
        Cmd::Blktests(b) => blktests::run(&b),
        Cmd::Patches(p) => patches::cmd(&p),
        Cmd::Report { path } => suite::report(&path),
        Cmd::Ktap { file, console } => ktap::cmd(&file, console.as_deref()),
    };
    if let Err(e) = res {
        eprintln!("\x1b[1;31merror:\x1b[0m {e:#}");
        std::process::exit(1);
    }
}

/// `cargo xtask kernel`.
fn kernel(k: &flags::KernelArgs) -> Result<(deps::Toolchain, kernel::Kernel)> {
    let tc = deps::ensure(k.kernel)?;
    let kern = kernel::ensure(&tc, &k.kernel_opts())?;
    Ok((tc, kern))
}

/// `cargo xtask modules`.
fn modules(k: &flags::KernelArgs) -> Result<()> {
    let (tc, kern) = kernel(k)?;
    modules::build(&tc, &kern, k.jobs()).map(|_| ())
}
