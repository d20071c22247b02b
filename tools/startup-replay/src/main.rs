//! `startup-replay`: replays a recorded application start-up on a test
//! file system, for the `startup` benchmark suite (`app = "replay"`).
//!
//! Two trace formats, told apart by the first line:
//!
//! - **file level** (`# ironlift-startup-trace 1`, [`file`]): what a real
//!   start-up did to its files, recorded by `tools/startup-replay/record.sh`
//!   (processes, threads, opens, buffered reads, major faults, metadata,
//!   think times). `prepare` lays the files out; `run` replays the tasks
//!   as processes and threads, through the page cache.
//! - **block level** (the S suite's `replay-startup-io` traces, [`block`]):
//!   one line per request as blktrace saw it. Replayed as S's replayer
//!   does: one thread per traced process, O_DIRECT on a 20 MB file per
//!   thread, read-ahead requests as libaio submissions.
//!
//! ```text
//! startup-replay prepare TRACE DIR        create the files the replay reads
//! startup-replay run TRACE DIR [--no-think]
//!                                         replay; one JSON line on stdout
//! startup-replay info TRACE               what the trace holds, as JSON
//! ```
//!
//! `run` prints `{"mode", "startup_s", "ios", "bytes", "tasks": [...]}`:
//! the start-up time from the first operation until every task is done,
//! and per task its operations, bytes and time waiting in I/O calls.

mod aio;
mod block;
mod file;
mod json;

use std::process::ExitCode;

/// A trace of either format.
enum Trace {
    File(file::Trace),
    Block(block::Trace),
}

fn load(path: &str) -> Result<Trace, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("reading {path}: {e}"))?;
    if text.starts_with(file::MAGIC) {
        file::Trace::parse(&text).map(Trace::File)
    } else {
        block::Trace::parse(&text).map(Trace::Block)
    }
    .map_err(|e| format!("{path}: {e}"))
}

fn usage() -> String {
    "usage: startup-replay prepare TRACE DIR | run TRACE DIR [--no-think] | info TRACE".into()
}

fn real_main(args: &[String]) -> Result<(), String> {
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    match a.as_slice() {
        ["prepare", trace, dir] => match load(trace)? {
            Trace::File(t) => t.prepare(dir.as_ref()),
            Trace::Block(t) => t.prepare(dir.as_ref()),
        },
        ["run", trace, dir, rest @ ..] => {
            let think = match rest {
                [] => true,
                ["--no-think"] => false,
                _ => return Err(usage()),
            };
            let out = match load(trace)? {
                Trace::File(t) => t.run(dir.as_ref(), think)?,
                Trace::Block(t) => t.run(dir.as_ref())?,
            };
            println!("{out}");
            Ok(())
        }
        ["info", trace] => {
            let out = match load(trace)? {
                Trace::File(t) => t.info(),
                Trace::Block(t) => t.info(),
            };
            println!("{out}");
            Ok(())
        }
        _ => Err(usage()),
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match real_main(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("startup-replay: {e}");
            ExitCode::FAILURE
        }
    }
}
