// SPDX-License-Identifier: GPL-2.0

//! A hard disk: zones, seeks, rotation, a read-ahead cache, a write-back
//! cache and native command queueing.
//!
//! - Geometry: tracks in zones of equal track count; sectors per track
//!   fall linearly from the outer zone to the inner one (zone bit
//!   recording), so the media rate does too. A sector's angle on the
//!   platter is its place in its track; the platter's angle is a function
//!   of absolute time, so a command waits until its first sector comes
//!   under the head.
//! - Seeks: a square-root curve from the track-to-track time up to a
//!   knee, then linear up to the full stroke.
//! - Each command takes a fixed latency before the drive acts on it (the
//!   drive's firmware and the host's path to it; queued commands overlap
//!   it) and a short controller time, one command at a time; data moves
//!   over the interface.
//! - Reads: a read the cache holds completes after the controller and
//!   the interface. A read that the current media stream reaches (the
//!   continuation of the last read, or a short skip ahead) waits for the
//!   stream. Any other read waits for the mechanism. After a read the
//!   head keeps reading ahead into the read's cache segment, up to a
//!   limit past what the host has consumed, until the mechanism is needed
//!   elsewhere.
//! - Writes, with the write cache on: complete once in the cache; the
//!   cache destages them later (when the mechanism is idle and the oldest
//!   dirty data is old enough, when it is half full, or at once when a
//!   flush or a write waiting for room needs it). A flush completes when
//!   everything written before it is on the media. With the write cache
//!   off, writes wait for the mechanism as reads do.
//! - The mechanism serves, among the first `ncq_depth` commands waiting
//!   for it (and the dirty extents, when destaging), the one with the
//!   shortest positioning time (seek, then rotation); with `ncq_depth` 1
//!   it serves them in arrival order. A command's positioning time counts
//!   less the longer it has waited (aging), and one that has waited too
//!   long goes first.

use crate::{ns_per_sector, Command, Completion, Decided, Device, Id, Nanos, Op, Sector};
use std::collections::VecDeque;

/// What a disk is: its geometry, mechanics, caches and queue.
#[derive(Clone, Debug)]
pub struct HddSpec {
    /// A name for reports.
    pub name: &'static str,
    /// Sectors.
    pub capacity: Sector,
    /// Revolutions per minute.
    pub rpm: u32,
    /// Media rate on the outermost and the innermost track, MB/s.
    pub outer_mb_s: f64,
    /// See `outer_mb_s`.
    pub inner_mb_s: f64,
    /// Zones (each of constant sectors per track).
    pub zones: usize,
    /// Seek to the next track (with settling).
    pub track_seek: Nanos,
    /// Where the seek curve turns from square root to linear, as a
    /// fraction of the full stroke, and the seek time there.
    pub knee: (f64, Nanos),
    /// Seek over the full stroke.
    pub full_seek: Nanos,
    /// Latency a read (and flush, discard) command takes before the drive
    /// acts on it: the drive's firmware and the host's path to it. Queued
    /// commands overlap it.
    pub read_overhead: Nanos,
    /// The same for a write.
    pub write_overhead: Nanos,
    /// Time the controller spends on each command, one at a time.
    pub command_time: Nanos,
    /// Interface rate, MB/s.
    pub interface_mb_s: f64,
    /// Read cache: segments and sectors each.
    pub segments: usize,
    /// See `segments`.
    pub segment_sectors: Sector,
    /// Whether writes complete in the cache.
    pub write_cache: bool,
    /// Sectors the write cache holds, and dirty extents at most.
    pub write_cache_sectors: Sector,
    /// See `write_cache_sectors`.
    pub dirty_extents: usize,
    /// Age of the oldest dirty data before an idle disk destages it.
    pub destage_delay: Nanos,
    /// Commands the mechanism chooses among (NCQ's 32; 1 without NCQ).
    pub ncq_depth: usize,
    /// A command waiting this long for the mechanism goes first (and the
    /// read-ahead stream takes no more reads until it has).
    pub max_wait: Nanos,
    /// Aging: the positioning time a command is credited per unit of time
    /// it has waited, so that far commands are not starved for long.
    pub aging: f64,
}

impl HddSpec {
    /// Samsung SpinPoint F3 HD103SJ: 1 TB, 7200 rpm, 8.9 ms average seek
    /// (the model's average over random sector pairs is 8.3 ms), 1 to
    /// 18 ms, 32 MB cache, 140 to 70 MB/s, SATA 3 Gb/s, NCQ. The
    /// controller overheads make 4 KiB sequential direct I/O at depth 1
    /// give the 17 MB/s reading and 14 MB/s writing that a 2011 benchmark
    /// of it measured.
    pub fn hd103sj() -> Self {
        HddSpec {
            name: "hdd-7200",
            capacity: 1_953_525_168,
            rpm: 7200,
            outer_mb_s: 140.0,
            inner_mb_s: 70.0,
            zones: 16,
            track_seek: 1_000_000,
            knee: (0.4, 9_400_000),
            full_seek: 18_000_000,
            read_overhead: 228_000,
            write_overhead: 279_000,
            command_time: 25_000,
            interface_mb_s: 300.0,
            segments: 16,
            segment_sectors: 4096,
            write_cache: true,
            write_cache_sectors: 32768,
            dirty_extents: 128,
            destage_delay: 20_000_000,
            ncq_depth: 32,
            max_wait: 1_000_000_000,
            aging: 0.02,
        }
    }

    /// Western Digital Raptor WD1500ADFD: 150 GB, 10,000 rpm, 4.6 ms
    /// average seek (the model's: 4.2 ms), 16 MB cache, 88 to 60 MB/s,
    /// SATA 1.5 Gb/s, NCQ.
    pub fn raptor() -> Self {
        HddSpec {
            name: "hdd-raptor",
            capacity: 293_046_768,
            rpm: 10_000,
            outer_mb_s: 88.0,
            inner_mb_s: 60.0,
            zones: 16,
            track_seek: 600_000,
            knee: (0.4, 4_500_000),
            full_seek: 10_000_000,
            read_overhead: 200_000,
            write_overhead: 250_000,
            command_time: 25_000,
            interface_mb_s: 150.0,
            segments: 16,
            segment_sectors: 2048,
            write_cache: true,
            write_cache_sectors: 16384,
            dirty_extents: 128,
            destage_delay: 20_000_000,
            ncq_depth: 32,
            max_wait: 1_000_000_000,
            aging: 0.02,
        }
    }
}

/// A zone: tracks of the same sectors per track.
#[derive(Clone, Copy, Debug)]
struct Zone {
    first_sector: Sector,
    first_track: u64,
    spt: u64,
    /// Media time per sector, ns.
    ps: f64,
}

/// The head reading on from where a read started: the sectors it has
/// read by a time, up to a limit past what the host consumed.
#[derive(Clone, Copy, Debug)]
struct Stream {
    pos0: Sector,
    t0: Nanos,
    ps: f64,
    limit: Sector,
    seg: usize,
}

impl Stream {
    fn front(&self, t: Nanos) -> Sector {
        if t <= self.t0 {
            return self.pos0;
        }
        let read = ((t - self.t0) as f64 / self.ps) as Sector;
        (self.pos0 + read).min(self.limit)
    }

    /// When the stream has read up to `end`.
    fn reaches(&self, end: Sector) -> Nanos {
        self.t0 + (end.saturating_sub(self.pos0) as f64 * self.ps) as Nanos
    }
}

/// A read cache segment: sectors `start..end` (for the stream's segment,
/// `end` is the stream's front).
#[derive(Clone, Copy, Debug, Default)]
struct Segment {
    start: Sector,
    end: Sector,
    used: u64,
}

/// Dirty data in the write cache: sectors `start..end`, the oldest write
/// in it.
#[derive(Clone, Copy, Debug)]
struct Extent {
    start: Sector,
    end: Sector,
    seq: u64,
}

#[derive(Clone, Copy, Debug)]
struct Waiting {
    id: Id,
    cmd: Command,
    /// When it reached the controller, and when the controller is done.
    arrived: Nanos,
    ready: Nanos,
    /// For a write: its place among writes.
    seq: u64,
}

/// What the mechanism serves next.
#[derive(Clone, Copy, Debug)]
enum Pick {
    Queued(usize),
    Dirty(usize),
}

/// A hard disk.
#[derive(Clone, Debug)]
pub struct Hdd {
    spec: HddSpec,
    rev: Nanos,
    zones: Vec<Zone>,
    tracks: u64,
    iface: f64,
    readahead: Sector,
    clock: Nanos,
    decided: Decided,
    /// Commands at the controller, in arrival order.
    ctrl: VecDeque<Waiting>,
    ctrl_free: Nanos,
    /// Commands waiting for the mechanism, in arrival order.
    queued: VecDeque<Waiting>,
    /// When the mechanism has done what it was given.
    mech_free: Nanos,
    /// Where the head is when no stream runs.
    head: Sector,
    stream: Option<Stream>,
    segments: Vec<Segment>,
    uses: u64,
    dirty: Vec<Extent>,
    dirty_sectors: Sector,
    dirty_since: Nanos,
    /// The destage under way: sectors, written when the mechanism is free.
    destaging: Option<(Sector, Sector)>,
    writes: u64,
    /// Writes waiting for room in the cache.
    blocked: VecDeque<Waiting>,
    /// Flushes waiting: the id and the last write before each.
    flushes: Vec<(Id, u64)>,
}

impl Hdd {
    /// A disk as `spec` describes it, idle, head at sector 0.
    pub fn new(spec: HddSpec) -> Self {
        let rev = 60_000_000_000 / Nanos::from(spec.rpm.max(1));
        let z = spec.zones.max(1);
        let spt_outer = spec.outer_mb_s * 1e6 * rev as f64 / 1e9 / crate::SECTOR_BYTES as f64;
        let ratio = spec.inner_mb_s / spec.outer_mb_s;
        let spts: Vec<u64> = (0..z)
            .map(|i| {
                let f = (i as f64 + 0.5) / z as f64;
                ((spt_outer * (1.0 - (1.0 - ratio) * f)).round() as u64).max(1)
            })
            .collect();
        let mean = spts.iter().sum::<u64>() as f64 / z as f64;
        let per_zone = ((spec.capacity as f64 / mean / z as f64).ceil() as u64).max(1);
        let mut zones = Vec::with_capacity(z);
        let (mut sector, mut track) = (0, 0);
        for spt in spts {
            zones.push(Zone {
                first_sector: sector,
                first_track: track,
                spt,
                ps: rev as f64 / spt as f64,
            });
            sector += spt * per_zone;
            track += per_zone;
        }
        let segments = vec![Segment::default(); spec.segments.max(1)];
        Hdd {
            rev,
            zones,
            tracks: track,
            iface: ns_per_sector(spec.interface_mb_s),
            readahead: spec.segment_sectors / 2,
            clock: 0,
            decided: Decided::default(),
            ctrl: VecDeque::new(),
            ctrl_free: 0,
            queued: VecDeque::new(),
            mech_free: 0,
            head: 0,
            stream: None,
            segments,
            uses: 0,
            dirty: Vec::new(),
            dirty_sectors: 0,
            dirty_since: 0,
            destaging: None,
            writes: 0,
            blocked: VecDeque::new(),
            flushes: Vec::new(),
            spec,
        }
    }

    /// What it is.
    pub fn spec(&self) -> &HddSpec {
        &self.spec
    }

    /// One revolution.
    pub fn revolution(&self) -> Nanos {
        self.rev
    }

    /// Tracks on the disk.
    pub fn tracks(&self) -> u64 {
        self.tracks
    }

    fn zone(&self, s: Sector) -> &Zone {
        let i = self.zones.partition_point(|z| z.first_sector <= s);
        &self.zones[i.saturating_sub(1)]
    }

    /// The track sector `s` is on.
    pub fn track(&self, s: Sector) -> u64 {
        let z = self.zone(s);
        z.first_track + (s - z.first_sector) / z.spt
    }

    /// Media time per sector at sector `s`, ns.
    pub fn media_ns_per_sector(&self, s: Sector) -> f64 {
        self.zone(s).ps
    }

    /// Where in a revolution sector `s` passes under the head, ns after
    /// the platter's zero angle.
    pub fn angle(&self, s: Sector) -> Nanos {
        let z = self.zone(s);
        (s - z.first_sector) % z.spt * self.rev / z.spt
    }

    /// The seek over `tracks` tracks.
    pub fn seek_tracks(&self, tracks: u64) -> Nanos {
        if tracks == 0 {
            return 0;
        }
        let s = &self.spec;
        let x = (tracks as f64 / self.tracks.max(1) as f64).min(1.0);
        let (x0, knee) = (s.knee.0.clamp(1e-6, 1.0 - 1e-6), s.knee.1 as f64);
        let t1 = s.track_seek as f64;
        let t = if x <= x0 {
            t1 + (knee - t1) * (x / x0).sqrt()
        } else {
            knee + (s.full_seek as f64 - knee) * (x - x0) / (1.0 - x0)
        };
        t as Nanos
    }

    /// Where the head is at `t` (the mechanism free by then).
    fn head_at(&self, t: Nanos) -> Sector {
        self.stream.map_or(self.head, |s| s.front(t))
    }

    /// Seek and rotation from the head at `t` to sector `s`.
    pub fn positioning(&self, t: Nanos, s: Sector) -> Nanos {
        let h = self.head_at(t);
        let seek = self.seek_tracks(self.track(h).abs_diff(self.track(s)));
        let arrive = t + seek;
        let rot = (self.angle(s) + self.rev - arrive % self.rev) % self.rev;
        seek + rot
    }

    fn xfer(&self, sectors: u32) -> Nanos {
        (self.iface * f64::from(sectors)) as Nanos
    }

    /// The part of segment `i` the cache holds at `t`.
    fn segment_range(&self, i: usize, t: Nanos) -> (Sector, Sector) {
        let seg = self.segments[i];
        let end = match self.stream {
            Some(st) if st.seg == i => st.front(t),
            _ => seg.end,
        };
        (
            seg.start.max(end.saturating_sub(self.spec.segment_sectors)),
            end,
        )
    }

    fn cached(&mut self, t: Nanos, s: Sector, e: Sector) -> bool {
        if self.dirty.iter().any(|x| x.start <= s && e <= x.end) {
            return true;
        }
        let hit = (0..self.segments.len()).find(|&i| {
            let (lo, hi) = self.segment_range(i, t);
            lo <= s && e <= hi && lo < hi
        });
        let Some(i) = hit else { return false };
        self.uses += 1;
        self.segments[i].used = self.uses;
        if self.stream.is_some_and(|st| st.seg == i) {
            self.extend_stream(t, e);
        }
        true
    }

    /// The host consumed up to `e`: the read-ahead goes on past it (a
    /// stream that stopped at its limit resumes at `t`).
    fn extend_stream(&mut self, t: Nanos, e: Sector) {
        let ra = self.readahead;
        if let Some(st) = self.stream.as_mut() {
            let f = st.front(t);
            if f >= st.limit && e + ra > st.limit {
                st.pos0 = f;
                st.t0 = t;
            }
            st.limit = st.limit.max(e + ra);
        }
    }

    /// Serves read `w` from the running stream if the stream reaches it:
    /// whether it did.
    fn join_stream(&mut self, t: Nanos, w: &Waiting) -> bool {
        let Some(st) = self.stream else { return false };
        // A command waiting too long for the mechanism goes first.
        if self.starving(t) {
            return false;
        }
        let (lo, _) = self.segment_range(st.seg, t);
        let (s, e) = (w.cmd.sector, w.cmd.end());
        if s < lo || s > st.limit.max(st.front(t)) {
            return false;
        }
        self.extend_stream(t, e);
        let st = self.stream.unwrap_or(st);
        let media = st.reaches(e).max(t);
        self.mech_free = self.mech_free.max(media);
        self.decided
            .push(media + self.xfer(w.cmd.sectors.min(8)), w.id);
        true
    }

    /// Stops the stream: its segment keeps what it read by `t`.
    fn stop_stream(&mut self, t: Nanos) {
        if let Some(st) = self.stream.take() {
            let f = st.front(t);
            self.segments[st.seg].end = f;
            self.head = f;
        }
    }

    /// Whether the oldest command waiting for the mechanism has waited
    /// too long.
    fn starving(&self, t: Nanos) -> bool {
        self.queued
            .front()
            .is_some_and(|w| t.saturating_sub(w.arrived) > self.spec.max_wait)
    }

    fn room_for(&self, sectors: Sector) -> bool {
        self.dirty.is_empty()
            || (self.dirty_sectors + sectors <= self.spec.write_cache_sectors
                && self.dirty.len() < self.spec.dirty_extents)
    }

    /// Puts `[s, e)` in the write cache, merging with what it touches.
    fn make_dirty(&mut self, t: Nanos, s: Sector, e: Sector, seq: u64) {
        if self.dirty.is_empty() {
            self.dirty_since = t;
        }
        let mut x = Extent {
            start: s,
            end: e,
            seq,
        };
        self.dirty.retain(|d| {
            let touches = d.start <= x.end && x.start <= d.end;
            if touches {
                x.start = x.start.min(d.start);
                x.end = x.end.max(d.end);
                x.seq = x.seq.min(d.seq);
            }
            !touches
        });
        let at = self.dirty.partition_point(|d| d.start < x.start);
        self.dirty.insert(at, x);
        self.dirty_sectors = self.dirty.iter().map(|d| d.end - d.start).sum();
    }

    /// Command `w` leaves the controller at `t`.
    fn arrive(&mut self, t: Nanos, w: Waiting) {
        let (s, e) = (w.cmd.sector, w.cmd.end());
        match w.cmd.op {
            _ if w.cmd.sectors == 0 && w.cmd.op != Op::Flush => self.decided.push(t, w.id),
            Op::Read => {
                if self.cached(t, s, e) {
                    self.decided.push(t + self.xfer(w.cmd.sectors), w.id);
                } else if !self.join_stream(t, &w) {
                    self.queued.push_back(w);
                }
            }
            Op::Write if self.spec.write_cache => {
                if self.blocked.is_empty() && self.room_for(e - s) {
                    self.make_dirty(t, s, e, w.seq);
                    self.decided.push(t + self.xfer(w.cmd.sectors), w.id);
                } else {
                    self.blocked.push_back(w);
                }
            }
            Op::Write => self.queued.push_back(w),
            Op::Flush => {
                if self.dirty.is_empty() && self.blocked.is_empty() {
                    self.decided.push(t, w.id);
                } else {
                    self.flushes.push((w.id, w.seq));
                }
            }
            Op::Discard => self.decided.push(t, w.id),
        }
    }

    /// The destage under way ends at `t`.
    fn destaged(&mut self, t: Nanos) {
        let Some((s, e)) = self.destaging.take() else {
            return;
        };
        let mut rest = Vec::new();
        for d in self.dirty.drain(..) {
            if d.end <= s || e <= d.start {
                rest.push(d);
                continue;
            }
            if d.start < s {
                rest.push(Extent { end: s, ..d });
            }
            if e < d.end {
                rest.push(Extent { start: e, ..d });
            }
        }
        self.dirty = rest;
        self.dirty_sectors = self.dirty.iter().map(|d| d.end - d.start).sum();
        while let Some(w) = self.blocked.front().copied() {
            if !self.room_for(w.cmd.end() - w.cmd.sector) {
                break;
            }
            self.blocked.pop_front();
            self.make_dirty(t, w.cmd.sector, w.cmd.end(), w.seq);
            self.decided.push(t + self.xfer(w.cmd.sectors), w.id);
        }
        let oldest = self
            .dirty
            .iter()
            .map(|d| d.seq)
            .chain(self.blocked.iter().map(|w| w.seq))
            .min();
        let decided = &mut self.decided;
        self.flushes.retain(|&(id, upto)| {
            let done = oldest.is_none_or(|o| o > upto);
            if done {
                decided.push(t, id);
            }
            !done
        });
    }

    fn must_destage(&self) -> bool {
        !self.dirty.is_empty()
            && (!self.flushes.is_empty()
                || !self.blocked.is_empty()
                || 2 * self.dirty_sectors >= self.spec.write_cache_sectors)
    }

    /// When the mechanism next has something to decide.
    fn decision_at(&self) -> Option<Nanos> {
        let free = self.mech_free.max(self.clock);
        if !self.queued.is_empty() || self.must_destage() {
            return Some(free);
        }
        (!self.dirty.is_empty()).then(|| free.max(self.dirty_since + self.spec.destage_delay))
    }

    fn next_internal(&self) -> Option<Nanos> {
        let ctrl = self.ctrl.front().map(|w| w.ready);
        let op = self.destaging.map(|_| self.mech_free);
        [ctrl, op, self.decision_at()].into_iter().flatten().min()
    }

    /// The mechanism, free at `t`, takes its next work.
    fn decide(&mut self, t: Nanos) {
        let destage = !self.dirty.is_empty()
            && (self.must_destage()
                || (self.queued.is_empty() && t >= self.dirty_since + self.spec.destage_delay));
        let n = self.spec.ncq_depth.max(1).min(self.queued.len());
        let pick = if n == 0 && !destage {
            return;
        } else if self.must_destage() && (self.spec.ncq_depth <= 1 || n == 0) {
            self.nearest_dirty(t)
        } else if (self.spec.ncq_depth <= 1 && n > 0) || self.starving(t) {
            Pick::Queued(0)
        } else {
            let mut best = (Nanos::MAX, Pick::Queued(0));
            for (i, w) in self.queued.iter().take(n).enumerate() {
                let waited = t.saturating_sub(w.arrived) as f64 * self.spec.aging;
                let c = (self.positioning(t, w.cmd.sector) as f64 - waited).max(0.0) as Nanos;
                if c < best.0 {
                    best = (c, Pick::Queued(i));
                }
            }
            if destage {
                if let Pick::Dirty(i) = self.nearest_dirty(t) {
                    if self.positioning(t, self.dirty[i].start) < best.0 {
                        best.1 = Pick::Dirty(i);
                    }
                }
            }
            best.1
        };
        match pick {
            Pick::Queued(i) => {
                if let Some(w) = self.queued.remove(i) {
                    self.serve(t, w);
                }
            }
            Pick::Dirty(i) => self.destage(t, i),
        }
    }

    fn nearest_dirty(&self, t: Nanos) -> Pick {
        let i = (0..self.dirty.len())
            .min_by_key(|&i| self.positioning(t, self.dirty[i].start))
            .unwrap_or(0);
        Pick::Dirty(i)
    }

    /// The mechanism serves `w` from `t`.
    fn serve(&mut self, t: Nanos, w: Waiting) {
        let (s, e) = (w.cmd.sector, w.cmd.end());
        let start = t + self.positioning(t, s);
        self.stop_stream(t);
        let ps = self.media_ns_per_sector(s);
        let media = start + ((e - s) as f64 * ps) as Nanos;
        self.mech_free = media;
        if w.cmd.op != Op::Read {
            self.head = e;
            self.decided.push(media, w.id);
            return;
        }
        // A new segment (the least recently used) for the read and what
        // the head reads on from it.
        let seg = (0..self.segments.len())
            .min_by_key(|&i| self.segments[i].used)
            .unwrap_or(0);
        self.uses += 1;
        self.segments[seg] = Segment {
            start: s,
            end: s,
            used: self.uses,
        };
        self.stream = Some(Stream {
            pos0: s,
            t0: start,
            ps,
            limit: e + self.readahead,
            seg,
        });
        self.decided
            .push(media + self.xfer(w.cmd.sectors.min(8)), w.id);
        // Queued reads the stream reaches join it.
        let n = self.spec.ncq_depth.max(1);
        let mut i = 0;
        while i < self.queued.len().min(n) {
            let q = self.queued[i];
            if q.cmd.op == Op::Read && self.join_stream(t, &q) {
                self.queued.remove(i);
            } else if self.spec.ncq_depth <= 1 {
                break;
            } else {
                i += 1;
            }
        }
    }

    /// The mechanism writes dirty extent `i` (at most 1 MiB of it) from `t`.
    fn destage(&mut self, t: Nanos, i: usize) {
        let Some(&x) = self.dirty.get(i) else { return };
        let end = x.end.min(x.start + 2048);
        let start = t + self.positioning(t, x.start);
        self.stop_stream(t);
        let media = start + ((end - x.start) as f64 * self.media_ns_per_sector(x.start)) as Nanos;
        self.mech_free = media;
        self.head = end;
        self.destaging = Some((x.start, end));
    }

    /// Runs the model's own events up to `now`.
    fn advance(&mut self, now: Nanos) {
        while let Some(t) = self.next_internal() {
            if t > now {
                break;
            }
            self.clock = self.clock.max(t);
            let t = self.clock;
            if self.destaging.is_some() && self.mech_free <= t {
                self.destaged(t);
            }
            while let Some(w) = self.ctrl.front().copied() {
                if w.ready > t {
                    break;
                }
                self.ctrl.pop_front();
                self.arrive(w.ready, w);
            }
            if self.mech_free <= t {
                self.decide(t);
            }
        }
        self.clock = self.clock.max(now);
    }
}

impl Device for Hdd {
    fn name(&self) -> String {
        match self.spec.ncq_depth {
            0 | 1 => format!("{}, no NCQ", self.spec.name),
            n => format!("{}, NCQ {n}", self.spec.name),
        }
    }
    fn depth(&self) -> usize {
        self.spec.ncq_depth.max(1)
    }
    fn rotational(&self) -> bool {
        true
    }
    fn capacity(&self) -> Sector {
        self.spec.capacity
    }
    fn submit(&mut self, now: Nanos, cmd: Command) -> Id {
        self.advance(now);
        let id = self.decided.take_id();
        let overhead = match cmd.op {
            Op::Write => self.spec.write_overhead,
            _ => self.spec.read_overhead,
        };
        let ready = (now + overhead).max(self.ctrl_free + self.spec.command_time);
        self.ctrl_free = ready;
        if cmd.op == Op::Write {
            self.writes += 1;
        }
        self.ctrl.push_back(Waiting {
            id,
            cmd,
            arrived: now,
            ready,
            seq: self.writes,
        });
        id
    }
    fn next_event(&self) -> Option<Nanos> {
        [self.decided.first(), self.next_internal()]
            .into_iter()
            .flatten()
            .min()
    }
    fn poll(&mut self, now: Nanos, done: &mut Vec<Completion>) {
        self.advance(now);
        self.decided.drain_until(now, done);
    }
}
