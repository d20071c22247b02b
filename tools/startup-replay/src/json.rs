//! The replay's result line, as JSON (no serde: std and libc only).

use std::fmt::Write as _;

/// What one task (a replayed thread) did.
pub struct TaskStat {
    /// The trace's name for it (`pid/tid` or S's process name).
    pub name: String,
    pub ops: u64,
    pub bytes: u64,
    /// Seconds spent in I/O calls (reads, faults, opens, metadata, AIO waits).
    pub io_wait_s: f64,
    /// When it finished, seconds after the replay's first operation.
    pub end_s: f64,
}

/// A JSON string literal.
pub fn string(s: &str) -> String {
    let mut o = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(o, "\\u{:04x}", c as u32);
            }
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

/// `{"mode": .., "startup_s": .., "ios": .., "bytes": .., "tasks": [..]}`.
pub fn result(mode: &str, startup_s: f64, tasks: &[TaskStat]) -> String {
    let ios: u64 = tasks.iter().map(|t| t.ops).sum();
    let bytes: u64 = tasks.iter().map(|t| t.bytes).sum();
    let mut o = format!(
        "{{\"mode\": {}, \"startup_s\": {startup_s:.6}, \"ios\": {ios}, \"bytes\": {bytes}, \"tasks\": [",
        string(mode)
    );
    for (i, t) in tasks.iter().enumerate() {
        let _ = write!(
            o,
            "{}{{\"name\": {}, \"ops\": {}, \"bytes\": {}, \"io_wait_s\": {:.6}, \"end_s\": {:.6}}}",
            if i > 0 { ", " } else { "" },
            string(&t.name),
            t.ops,
            t.bytes,
            t.io_wait_s,
            t.end_s
        );
    }
    o.push_str("]}");
    o
}
