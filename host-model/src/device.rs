// SPDX-License-Identifier: GPL-2.0

//! Device models: how long a request takes, given what the device did
//! before. Deterministic; time is the simulation's.
//!
//! The models are coarse on purpose. They keep what decides which
//! scheduler wins: how many requests a device serves at once, a fixed cost
//! per request against a cost per byte, and on a disk the seek and the
//! rotation that make position matter.

use ironlift_policy::{Nanos, Op, Sector};

/// 512-byte sectors.
pub const SECTOR_BYTES: u64 = 512;

/// A block device, as the simulation sees it.
pub trait Device {
    /// Requests the device holds at once (the driver tags: `hw_queue_depth`
    /// on null_blk, the queue depth on NVMe, NCQ's 32 on SATA).
    fn depth(&self) -> usize;
    /// Whether the block layer would call it rotational (the policy's
    /// `set_nonrotational`).
    fn rotational(&self) -> bool;
    /// A request of `sectors` at `sector` starts at `now`: when it
    /// completes. Called in the order requests start.
    fn start(&mut self, now: Nanos, sector: Sector, sectors: u32, op: Op) -> Nanos;
    /// A name for reports.
    fn name(&self) -> String;
}

/// null_blk with `irqmode=2`: every request completes `service` after it
/// starts, whatever its size, plus up to `jitter` more; `depth` at once.
///
/// The jitter stands for the timer and interrupt latency a guest sees.
/// Without it, requests that start together complete together: on a
/// device of depth 2 both slots then free at once, the next two requests
/// go out at once, and no request ever waits for a slot while a bio could
/// merge into it. With 20 µs of it deadline merges into 45 KiB requests
/// on such a device, and BFQ sends 16.5 KiB (the guest: 56-61 and 17; see
/// `tests/scenarios.rs`).
#[derive(Clone, Debug)]
pub struct Fixed {
    /// Time from start to completion.
    pub service: Nanos,
    /// Requests at once.
    pub depth: usize,
    /// The most a completion comes late, drawn evenly in `0..jitter`.
    pub jitter: Nanos,
    rng: u64,
}

impl Fixed {
    /// A device that takes `service` per request, `depth` at once, on time.
    pub fn new(service: Nanos, depth: usize) -> Self {
        Self::jittered(service, depth, 0)
    }

    /// The same with completions up to `jitter` late (deterministic).
    pub fn jittered(service: Nanos, depth: usize, jitter: Nanos) -> Self {
        Fixed {
            service,
            depth,
            jitter,
            rng: 1,
        }
    }

    /// The guest's null_blk device `name` (configs/devices/guest.toml): its
    /// `completion_nsec` per request, `hw_queue_depth` at once, on time.
    /// Panics unless the file has it as a null_blk device with timer
    /// completions (`irqmode` 2), the mode in which a request takes
    /// `completion_nsec`.
    pub fn guest(name: &str) -> Self {
        let n = crate::guest::null_blk(name);
        assert_eq!(
            n.irqmode, 2,
            "{name}: only timer completions (irqmode 2) take a fixed time"
        );
        Fixed::new(n.completion_nsec, n.hw_queue_depth)
    }

    /// The same device with completions up to `jitter` late.
    pub fn with_jitter(self, jitter: Nanos) -> Self {
        Fixed::jittered(self.service, self.depth, jitter)
    }
}

impl Device for Fixed {
    fn depth(&self) -> usize {
        self.depth
    }
    fn rotational(&self) -> bool {
        false
    }
    fn start(&mut self, now: Nanos, _: Sector, _: u32, _: Op) -> Nanos {
        if self.jitter == 0 {
            return now + self.service;
        }
        self.rng = crate::lcg_next(self.rng);
        now + self.service + (self.rng >> 33) % self.jitter
    }
    fn name(&self) -> String {
        let late = match self.jitter {
            0 => String::new(),
            j => format!(" (+0-{} µs)", j / 1000),
        };
        format!(
            "null_blk {} µs{late}, depth {}",
            self.service / 1000,
            self.depth
        )
    }
}

/// Flash behind a controller (NVMe, SATA SSD, eMMC): each request costs
/// a latency of its own, which requests in flight overlap up to the
/// device's parallelism, plus its bytes over one shared transfer channel.
#[derive(Clone, Debug)]
pub struct Flash {
    name: &'static str,
    /// Requests at once.
    pub depth: usize,
    /// Requests whose latencies overlap (dies, channels); the rest wait.
    pub parallel: usize,
    /// Latency of a read and of a write, before the transfer.
    pub read_latency: Nanos,
    /// See `read_latency`.
    pub write_latency: Nanos,
    /// Transfer time per sector, read and write.
    pub read_sector: Nanos,
    /// See `read_sector`.
    pub write_sector: Nanos,
    /// When each of the `parallel` units is free again.
    units: Vec<Nanos>,
    /// When the transfer channel is free again.
    channel: Nanos,
}

impl Flash {
    fn new(
        name: &'static str,
        depth: usize,
        parallel: usize,
        latency: (Nanos, Nanos),
        mb_per_s: (u64, u64),
    ) -> Self {
        let per_sector = |mb: u64| SECTOR_BYTES * 1_000_000_000 / (mb * 1_000_000);
        Flash {
            name,
            depth,
            parallel,
            read_latency: latency.0,
            write_latency: latency.1,
            read_sector: per_sector(mb_per_s.0),
            write_sector: per_sector(mb_per_s.1),
            units: vec![0; parallel.max(1)],
            channel: 0,
        }
    }

    /// A datacenter NVMe drive: 80 µs reads, 20 µs (cached) writes, 32
    /// requests in parallel, 3 GB/s reads and 2 GB/s writes, 1023 tags.
    pub fn nvme() -> Self {
        Flash::new("nvme", 1023, 32, (80_000, 20_000), (3000, 2000))
    }

    /// A SATA SSD: NCQ's 32 tags, 8 in parallel, 100 µs reads, 50 µs
    /// writes, 530 and 480 MB/s.
    pub fn sata_ssd() -> Self {
        Flash::new("sata-ssd", 32, 8, (100_000, 50_000), (530, 480))
    }

    /// eMMC without command queueing: one request at a time, 250 µs
    /// reads, 1 ms writes, 250 and 90 MB/s.
    pub fn emmc() -> Self {
        Flash::new("emmc", 1, 1, (250_000, 1_000_000), (250, 90))
    }
}

impl Device for Flash {
    fn depth(&self) -> usize {
        self.depth
    }
    fn rotational(&self) -> bool {
        false
    }
    fn start(&mut self, now: Nanos, _: Sector, sectors: u32, op: Op) -> Nanos {
        let (latency, per) = match op {
            Op::Read => (self.read_latency, self.read_sector),
            _ => (self.write_latency, self.write_sector),
        };
        // The unit free first takes it.
        let (i, free) = self
            .units
            .iter()
            .copied()
            .enumerate()
            .min_by_key(|&(_, t)| t)
            .expect("at least one unit");
        let ready = now.max(free) + latency;
        let done = ready.max(self.channel) + per * u64::from(sectors);
        self.channel = done;
        self.units[i] = done;
        done
    }
    fn name(&self) -> String {
        self.name.into()
    }
}

/// A hard disk without command queueing (one request at a time): a seek
/// that grows with the square root of the distance, the rotation until the
/// first sector comes under the head, and the transfer at the media rate.
/// A request that starts where the previous one ended is read ahead by
/// the drive: no seek, no rotation.
#[derive(Clone, Debug)]
pub struct Hdd {
    /// Sectors on the disk.
    pub capacity: Sector,
    /// Sectors per track (the rotation's period in sectors).
    pub track: Sector,
    /// One revolution.
    pub revolution: Nanos,
    /// The shortest seek (to a neighbouring track) and the longest.
    pub track_seek: Nanos,
    /// See `track_seek`.
    pub full_seek: Nanos,
    /// Transfer time per sector.
    pub per_sector: Nanos,
    /// Where the head is (the sector after the last one transferred).
    head: Sector,
}

impl Hdd {
    /// A 7200 rpm 1 TB disk: 8.3 ms a revolution, 1 to 18 ms seeks
    /// (about 8.5 ms on average over random positions), 150 MB/s.
    pub fn disk_7200() -> Self {
        Hdd {
            capacity: 1 << 31,
            track: 2048,
            revolution: 8_333_333,
            track_seek: 1_000_000,
            full_seek: 18_000_000,
            per_sector: SECTOR_BYTES * 1_000_000_000 / 150_000_000,
            head: 0,
        }
    }

    /// The seek from the head to `to`.
    pub fn seek(&self, to: Sector) -> Nanos {
        let tracks = self.head.abs_diff(to) / self.track;
        if tracks == 0 {
            return 0;
        }
        let all = (self.capacity / self.track).max(1) as f64;
        let frac = (tracks as f64 / all).min(1.0).sqrt();
        self.track_seek + ((self.full_seek - self.track_seek) as f64 * frac) as Nanos
    }
}

impl Device for Hdd {
    fn depth(&self) -> usize {
        1
    }
    fn rotational(&self) -> bool {
        true
    }
    fn start(&mut self, now: Nanos, sector: Sector, sectors: u32, _: Op) -> Nanos {
        let transfer = self.per_sector * u64::from(sectors);
        let at = if sector == self.head {
            now
        } else {
            let after_seek = now + self.seek(sector);
            // The platter's angle, in sectors of a track, at a time.
            let angle = |t: Nanos| (t % self.revolution) * self.track / self.revolution;
            let want = sector % self.track;
            let wait = (want + self.track - angle(after_seek)) % self.track;
            after_seek + wait * self.revolution / self.track
        };
        self.head = sector + u64::from(sectors);
        at + transfer
    }
    fn name(&self) -> String {
        "hdd 7200 rpm".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Throughput of `n` back-to-back requests of `sectors`, one at a time.
    fn serial_mb_s(
        d: &mut dyn Device,
        sectors: u32,
        n: u64,
        mut pos: impl FnMut(u64) -> Sector,
    ) -> f64 {
        let mut now = 0;
        for i in 0..n {
            now = d.start(now, pos(i), sectors, Op::Read);
        }
        (n * u64::from(sectors) * SECTOR_BYTES) as f64 / (now as f64 / 1e9) / 1e6
    }

    #[test]
    fn fixed_takes_its_time_whatever_the_size() {
        let mut d = Fixed::new(2_000_000, 2);
        assert_eq!(d.start(5, 0, 8, Op::Read), 2_000_005);
        assert_eq!(d.start(5, 1 << 30, 255, Op::Write), 2_000_005);
        // Jittered: late by less than the jitter, not always by as much.
        let mut j = Fixed::jittered(2_000_000, 2, 20_000);
        let ends: Vec<_> = (0..100).map(|_| j.start(0, 0, 8, Op::Read)).collect();
        assert!(ends.iter().all(|&e| (2_000_000..2_020_000).contains(&e)));
        assert!(ends.iter().any(|&e| e != ends[0]), "{ends:?}");
    }

    #[test]
    fn guest_null_blk_devices_take_their_time_from_guest_toml() {
        for (name, n) in crate::guest::null_blk_devices() {
            if n.irqmode != 2 {
                continue;
            }
            let d = Fixed::guest(&name).with_jitter(7);
            assert_eq!(
                (d.service, d.depth, d.jitter),
                (n.completion_nsec, n.hw_queue_depth, 7)
            );
        }
    }

    #[test]
    fn hdd_sequential_is_far_faster_than_random() {
        let seq = serial_mb_s(&mut Hdd::disk_7200(), 128, 2000, |i| i * 128);
        let mut x = 12345u64;
        let rnd = serial_mb_s(&mut Hdd::disk_7200(), 128, 2000, |_| {
            x = crate::lcg_next(x);
            (x >> 33) % (1 << 31)
        });
        eprintln!("hdd 64 KiB: sequential {seq:.1} MB/s, random {rnd:.2} MB/s");
        assert!((140.0..=151.0).contains(&seq), "sequential {seq:.1} MB/s");
        // 64 KiB random reads: about 13 ms each (8.5 seek, 4.2 rotation).
        assert!((3.5..=6.5).contains(&rnd), "random {rnd:.2} MB/s");
    }

    #[test]
    fn hdd_seek_grows_with_distance() {
        let d = Hdd::disk_7200();
        let near = d.seek(d.track * 10);
        let far = d.seek(d.capacity - 1);
        assert_eq!(d.seek(5), 0, "same track");
        assert!(d.track_seek <= near && near < far && far <= d.full_seek);
    }

    #[test]
    fn flash_overlaps_latency_up_to_its_parallelism() {
        // One at a time: latency + transfer each.
        let mut d = Flash::nvme();
        let one = d.start(0, 0, 8, Op::Read);
        assert_eq!(one, 80_000 + 8 * d.read_sector);
        // 32 started together overlap their latencies; the 33rd waits for
        // a unit.
        let mut d = Flash::nvme();
        let ends: Vec<_> = (0..33).map(|i| d.start(0, i * 8, 8, Op::Read)).collect();
        assert!(ends[31] < 2 * 80_000, "{ends:?}");
        assert!(ends[32] > 2 * 80_000, "{ends:?}");
        // eMMC: one at a time, writes slower than reads.
        let mut e = Flash::emmc();
        let r = e.start(0, 0, 8, Op::Read);
        let w = e.start(r, 8, 8, Op::Write) - r;
        assert!(w > 3 * r, "read {r} write {w}");
    }

    #[test]
    fn flash_bandwidth_bounds_large_requests() {
        // Many 1 MiB reads at once on the SATA SSD: the channel's 530 MB/s.
        let mut d = Flash::sata_ssd();
        let end = (0..64)
            .map(|i| d.start(0, i * 2048, 2048, Op::Read))
            .max()
            .unwrap();
        let mb_s = (64 * 2048 * SECTOR_BYTES) as f64 / (end as f64 / 1e9) / 1e6;
        assert!((500.0..=530.0).contains(&mb_s), "{mb_s:.1} MB/s");
    }
}
