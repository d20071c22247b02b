// SPDX-License-Identifier: GPL-2.0

//! An export: a backing file for the data and a device model for the
//! time. Requests reach the model when they arrive; a timer thread sends
//! each reply when the model completes its command, on the server's
//! monotonic clock, and records how late it was.

use crate::nbd;
use ironlift_devmodel::{Command, Completion, Device, Id, Nanos, Op};
use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Write};
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Replies a connection may have outstanding before the server stops
/// reading its requests (QEMU keeps 16 in flight).
pub const MAX_IN_FLIGHT: usize = 256;

/// The server's clock: nanoseconds since it started.
#[derive(Clone, Copy, Debug)]
pub struct Clock(Instant);

impl Clock {
    /// A clock starting now.
    pub fn start() -> Self {
        Clock(Instant::now())
    }

    /// Nanoseconds since the start.
    pub fn now(&self) -> Nanos {
        self.0.elapsed().as_nanos() as Nanos
    }
}

/// A client connection's sending side, shared by its reader (error
/// replies) and the timer (modelled replies).
pub struct Conn {
    writer: Mutex<UnixStream>,
    /// Replies not yet sent, and a signal when that reaches 0.
    outstanding: Mutex<usize>,
    drained: Condvar,
}

impl Conn {
    /// A connection that sends on `stream`.
    pub fn new(stream: UnixStream) -> Self {
        Conn {
            writer: Mutex::new(stream),
            outstanding: Mutex::new(0),
            drained: Condvar::new(),
        }
    }

    /// Sends a simple reply with `data` after its header.
    pub fn reply(&self, error: u32, handle: u64, data: &[u8]) -> io::Result<()> {
        let mut w = lock(&self.writer);
        w.write_all(&nbd::simple_reply(error, handle))?;
        w.write_all(data)
    }

    /// One more reply to send; waits while the client has
    /// [`MAX_IN_FLIGHT`] outstanding (it is not reading its replies).
    fn add(&self) {
        let n = lock(&self.outstanding);
        let mut n = self
            .drained
            .wait_while(n, |n| *n >= MAX_IN_FLIGHT)
            .unwrap_or_else(|e| e.into_inner());
        *n += 1;
    }

    fn sent(&self) {
        let mut n = lock(&self.outstanding);
        *n = n.saturating_sub(1);
        self.drained.notify_all();
    }

    /// Waits until every modelled reply is sent (at most `limit`).
    pub fn drain(&self, limit: Duration) {
        let n = lock(&self.outstanding);
        let _ = self.drained.wait_timeout_while(n, limit, |n| *n > 0);
    }
}

/// A lock that a panicking holder does not poison for the rest.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A reply waiting for its modelled completion.
struct Pending {
    conn: Arc<Conn>,
    handle: u64,
    data: Vec<u8>,
    op: Op,
    offset: u64,
    length: u32,
    arrived: Nanos,
}

/// What the export measured.
#[derive(Clone, Debug, Default)]
pub struct Stats {
    /// Lateness of each modelled reply: sent minus modelled completion, ns.
    pub lags: Vec<u64>,
    /// Modelled service time (completion minus arrival) of each, ns.
    pub service: Vec<u64>,
    /// Requests by operation: read, write, flush, trim.
    pub ops: [u64; 4],
    /// Requests answered with an error (not modelled).
    pub errors: u64,
    /// Connections opened.
    pub connections: u64,
}

struct State {
    model: Box<dyn Device + Send>,
    waiting: HashMap<Id, Pending>,
    stats: Stats,
}

/// One export.
pub struct Export {
    /// The name clients ask for.
    pub name: String,
    /// The model's name.
    pub device: String,
    /// Bytes.
    pub size: u64,
    /// Whether NBD should call it rotational.
    pub rotational: bool,
    /// The data.
    pub file: File,
    state: Mutex<State>,
    wake: Condvar,
    clock: Clock,
    log: Option<Arc<Mutex<io::BufWriter<File>>>>,
}

fn op_index(op: Op) -> usize {
    match op {
        Op::Read => 0,
        Op::Write => 1,
        Op::Flush => 2,
        Op::Discard => 3,
    }
}

fn op_name(op: Op) -> &'static str {
    ["read", "write", "flush", "trim"][op_index(op)]
}

impl Export {
    /// An export of `size` bytes of `file`, timed by `model`.
    pub fn new(
        name: String,
        model: Box<dyn Device + Send>,
        file: File,
        size: u64,
        clock: Clock,
        log: Option<Arc<Mutex<io::BufWriter<File>>>>,
    ) -> Self {
        Export {
            name,
            device: model.name(),
            size,
            rotational: model.rotational(),
            file,
            state: Mutex::new(State {
                model,
                waiting: HashMap::new(),
                stats: Stats::default(),
            }),
            wake: Condvar::new(),
            clock,
            log,
        }
    }

    /// Counts a connection.
    pub fn connected(&self) {
        lock(&self.state).stats.connections += 1;
    }

    /// Counts a request answered with an error.
    pub fn refused(&self) {
        lock(&self.state).stats.errors += 1;
    }

    /// A request arrives now: the model receives it, the reply (with
    /// `data` for a read) goes out at its modelled completion.
    pub fn submit(
        &self,
        conn: &Arc<Conn>,
        handle: u64,
        op: Op,
        offset: u64,
        length: u32,
        data: Vec<u8>,
    ) {
        let cmd = Command::new(op, offset / 512, length.div_ceil(512));
        conn.add();
        let mut st = lock(&self.state);
        let now = self.clock.now();
        let id = st.model.submit(now, cmd);
        st.stats.ops[op_index(op)] += 1;
        st.waiting.insert(
            id,
            Pending {
                conn: conn.clone(),
                handle,
                data,
                op,
                offset,
                length,
                arrived: now,
            },
        );
        drop(st);
        self.wake.notify_one();
    }

    /// What the export measured so far.
    pub fn stats(&self) -> Stats {
        lock(&self.state).stats.clone()
    }

    /// The timer: sends replies at their modelled completions, for ever.
    /// It sleeps until `spin` before the next event, then yields the CPU
    /// in a loop until the event's time.
    pub fn run_timer(&self, spin: Nanos) {
        let mut done: Vec<Completion> = Vec::new();
        let mut due: Vec<(Nanos, Pending)> = Vec::new();
        loop {
            let mut st = lock(&self.state);
            let now = self.clock.now();
            done.clear();
            st.model.poll(now, &mut done);
            for c in &done {
                if let Some(p) = st.waiting.remove(&c.id) {
                    due.push((c.at, p));
                }
            }
            let next = st.model.next_event();
            if due.is_empty() {
                match next {
                    None => {
                        let _ = self.wake.wait_timeout(st, Duration::from_millis(100));
                        continue;
                    }
                    Some(t) if t > now + spin => {
                        let nap = Duration::from_nanos(t - now - spin);
                        let _ = self.wake.wait_timeout(st, nap);
                        continue;
                    }
                    Some(t) => {
                        drop(st);
                        while self.clock.now() < t {
                            std::thread::yield_now();
                        }
                        continue;
                    }
                }
            }
            drop(st);
            self.send(&mut due);
        }
    }

    /// Sends the replies due and records their lateness.
    fn send(&self, due: &mut Vec<(Nanos, Pending)>) {
        let mut lags = Vec::with_capacity(due.len());
        for (at, p) in due.drain(..) {
            let sent = self.clock.now();
            let data: &[u8] = if p.op == Op::Read { &p.data } else { &[] };
            // A client gone is the reader's to notice; the reply is lost.
            let _ = p.conn.reply(0, p.handle, data);
            p.conn.sent();
            let lag = sent.saturating_sub(at);
            lags.push((lag, at - p.arrived.min(at)));
            if let Some(log) = &self.log {
                let _ = writeln!(
                    lock(log),
                    "{},{},{},{},{},{},{},{:.1}",
                    self.name,
                    op_name(p.op),
                    p.offset,
                    p.length,
                    p.arrived,
                    at,
                    sent,
                    lag as f64 / 1e3
                );
            }
        }
        let mut st = lock(&self.state);
        for (lag, service) in lags {
            st.stats.lags.push(lag);
            st.stats.service.push(service);
        }
    }
}

/// Mean, median, 99th percentile and maximum of `ns`, in µs.
fn summary(ns: &[u64]) -> String {
    if ns.is_empty() {
        return r#"{"mean": 0, "p50": 0, "p99": 0, "max": 0}"#.into();
    }
    let mut v = ns.to_vec();
    v.sort_unstable();
    let at = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize] as f64 / 1e3;
    let mean = v.iter().map(|&x| x as f64).sum::<f64>() / v.len() as f64 / 1e3;
    format!(
        r#"{{"mean": {mean:.1}, "p50": {:.1}, "p99": {:.1}, "max": {:.1}}}"#,
        at(0.5),
        at(0.99),
        at(1.0)
    )
}

/// A JSON string literal.
fn quote(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The stats file: every export's figures and all of them together.
pub fn stats_json(exports: &[Arc<Export>], uptime: Nanos) -> String {
    let mut all = Stats::default();
    let mut parts = Vec::new();
    for e in exports {
        let s = e.stats();
        parts.push(format!(
            "    {{\"name\": {}, \"device\": {}, \"size_bytes\": {}, \"connections\": {}, \
             \"requests\": {}, \"errors\": {}, \"ops\": {{\"read\": {}, \"write\": {}, \
             \"flush\": {}, \"trim\": {}}}, \"lag_us\": {}, \"service_us\": {}}}",
            quote(&e.name),
            quote(&e.device),
            e.size,
            s.connections,
            s.lags.len(),
            s.errors,
            s.ops[0],
            s.ops[1],
            s.ops[2],
            s.ops[3],
            summary(&s.lags),
            summary(&s.service),
        ));
        all.lags.extend_from_slice(&s.lags);
        all.errors += s.errors;
        for i in 0..4 {
            all.ops[i] += s.ops[i];
        }
    }
    format!(
        "{{\n  \"uptime_s\": {:.3},\n  \"requests\": {},\n  \"errors\": {},\n  \
         \"ops\": {{\"read\": {}, \"write\": {}, \"flush\": {}, \"trim\": {}}},\n  \
         \"lag_us\": {},\n  \"exports\": [\n{}\n  ]\n}}\n",
        uptime as f64 / 1e9,
        all.lags.len(),
        all.errors,
        all.ops[0],
        all.ops[1],
        all.ops[2],
        all.ops[3],
        summary(&all.lags),
        parts.join(",\n")
    )
}
