// SPDX-License-Identifier: GPL-2.0

//! What each model predicts for the fixed jobs, against the calibration
//! targets, as a Markdown table; then every model on every job. Virtual
//! time: the same output on every run.
//!
//! ```text
//! cargo run --release -p ironlift-devmodel --example predict [-- --region-mb N]
//! ```
//!
//! `--region-mb N` runs the whole-device jobs over the first N MiB instead
//! (what a guest's fio sees on an export of that size).

use ironlift_devmodel::jobs::{self, Metric, JOBS, TARGETS, TOLERANCE};
use ironlift_devmodel::{by_name, MODELS};

fn unit(m: Metric) -> &'static str {
    match m {
        Metric::MbS => "MB/s",
        Metric::Iops => "IOPS",
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let region = args
        .iter()
        .position(|a| a == "--region-mb")
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse::<u64>().ok())
        .map(|mb| mb << 20);
    println!("### Calibration (within ±{:.0} %)\n", TOLERANCE * 100.0);
    println!("| device | job | target | model | ratio | within |");
    println!("|---|---|---:|---:|---:|---|");
    for t in TARGETS {
        let Some(p) = jobs::predict(t) else { continue };
        let got = p.get(t.metric);
        println!(
            "| {} | {} | {:.1} {u} | {:.1} {u} | {:.2} | {} |",
            t.device,
            t.job,
            t.value,
            got,
            got / t.value,
            if jobs::within(got, t.value) {
                "yes"
            } else {
                "NO"
            },
            u = unit(t.metric),
        );
    }
    println!("\n### Every model, every job (MB/s / IOPS)\n");
    print!("| job |");
    for m in MODELS {
        print!(" {m} |");
    }
    println!("\n|---|{}", "---:|".repeat(MODELS.len()));
    for j in JOBS {
        print!("| {} |", j.name);
        for m in MODELS {
            let Some(mut dev) = by_name(m, None) else {
                continue;
            };
            let r = if j.region == 0 { region } else { None };
            let p = jobs::run(dev.as_mut(), j, r);
            print!(" {:.1} / {:.0} |", p.mb_s, p.iops);
        }
        println!();
    }
}
