// SPDX-License-Identifier: GPL-2.0

//! The models' mechanisms one at a time, and every calibration target.

use ironlift_devmodel::emmc::Emmc;
use ironlift_devmodel::hdd::{Hdd, HddSpec};
use ironlift_devmodel::jobs::{self, find, TARGETS};
use ironlift_devmodel::{by_name, complete_one, lcg_next, Command, Completion, Device, Nanos, Op};

/// Submits `cmd` at `now` and runs the model until it completes: when.
fn one(dev: &mut dyn Device, now: Nanos, cmd: Command) -> Nanos {
    complete_one(dev, now, cmd).unwrap_or_else(|| panic!("{cmd:?} never completed"))
}

fn read(sector: u64, sectors: u32) -> Command {
    Command::new(Op::Read, sector, sectors)
}

#[test]
fn seek_curve_is_monotonic_between_its_endpoints() {
    for spec in [HddSpec::hd103sj(), HddSpec::raptor()] {
        let d = Hdd::new(spec.clone());
        let n = d.tracks();
        assert_eq!(d.seek_tracks(0), 0);
        let one = d.seek_tracks(1);
        assert!(
            one >= spec.track_seek && one < spec.track_seek * 11 / 10,
            "{one}"
        );
        let full = d.seek_tracks(n);
        assert!(full.abs_diff(spec.full_seek) < 1000, "{full}");
        let mut last = 0;
        for i in 0..=1000 {
            let s = d.seek_tracks(1 + (n - 1) * i / 1000);
            assert!(s >= last, "seek falls at {i}/1000: {s} < {last}");
            last = s;
        }
        // Average over random sector pairs: near the data sheet's.
        let mut x = 7u64;
        let mut sum = 0;
        for _ in 0..20_000 {
            x = lcg_next(x);
            let a = (x >> 20) % spec.capacity;
            x = lcg_next(x);
            let b = (x >> 20) % spec.capacity;
            sum += d.seek_tracks(d.track(a).abs_diff(d.track(b)));
        }
        let avg = sum as f64 / 20_000.0 / 1e6;
        eprintln!("{}: average seek {avg:.2} ms", spec.name);
        assert!(
            avg > spec.knee.1 as f64 / 1e6 * 0.8 && avg < spec.knee.1 as f64 / 1e6,
            "{avg}"
        );
    }
}

#[test]
fn a_sector_just_missed_waits_about_a_revolution() {
    let d = Hdd::new(HddSpec::hd103sj());
    let rev = d.revolution();
    let s = 1000; // on track 0, where the head is
    let at = d.angle(s);
    let missed = d.positioning(10 * rev + at + 1_000, s);
    let caught = d.positioning(10 * rev + at - 1_000, s);
    assert!(missed > rev - 2_000 && missed < rev, "{missed}");
    assert_eq!(caught, 1_000);
    // Through the device: a read of the sector the head just passed, on
    // the same track, with no cache to help, waits most of a revolution.
    let mut dev = Hdd::new(HddSpec {
        segments: 1,
        ..HddSpec::hd103sj()
    });
    let t1 = one(&mut dev, 0, read(2000, 8));
    let t2 = one(&mut dev, t1 + 10 * rev, read(0, 8)) - (t1 + 10 * rev);
    eprintln!("read behind the head: {t2} ns, revolution {rev}");
    assert!(t2 > rev / 2, "{t2}");
}

#[test]
fn sequential_reads_at_depth_one_hit_the_read_ahead() {
    let mut dev = Hdd::new(HddSpec::hd103sj());
    let first = one(&mut dev, 0, read(1 << 20, 8));
    assert!(
        first > 1_000_000,
        "the first read goes to the media: {first}"
    );
    let mut now = first;
    let mut worst = 0;
    for i in 1..200 {
        let done = one(&mut dev, now, read((1 << 20) + 8 * i, 8));
        worst = worst.max(done - now);
        now = done;
    }
    assert!(worst < 300_000, "a read-ahead hit took {worst} ns");
}

#[test]
fn ncq_shortest_positioning_first_beats_fifo_on_random_reads() {
    let job = find("rand-read-4k-qd32").unwrap();
    let ncq = jobs::run(by_name("hdd-7200", None).unwrap().as_mut(), job, None);
    let fifo = jobs::run(by_name("hdd-7200", Some(1)).unwrap().as_mut(), job, None);
    let qd1 = jobs::run(
        by_name("hdd-7200", None).unwrap().as_mut(),
        find("rand-read-4k-qd1").unwrap(),
        None,
    );
    eprintln!(
        "random 4 KiB: qd1 {:.0} IOPS, qd32 fifo {:.0}, qd32 ncq {:.0}",
        qd1.iops, fifo.iops, ncq.iops
    );
    assert!(ncq.iops > 1.6 * fifo.iops, "{ncq:?} {fifo:?}");
    assert!(
        (fifo.iops - qd1.iops).abs() < 0.1 * qd1.iops,
        "{fifo:?} {qd1:?}"
    );
}

#[test]
fn writes_complete_in_the_cache_and_a_flush_waits_for_the_destage() {
    let mut dev = Hdd::new(HddSpec::hd103sj());
    // A flush with nothing dirty is quick.
    let f0 = one(&mut dev, 0, Command::new(Op::Flush, 0, 0));
    assert!(f0 < 1_000_000, "{f0}");
    let mut now = f0;
    let mut x = 3u64;
    for _ in 0..50 {
        x = lcg_next(x);
        let s = (x >> 20) % dev.capacity() / 8 * 8;
        let done = one(&mut dev, now, Command::new(Op::Write, s, 8));
        assert!(
            done - now < 1_000_000,
            "a cached write took {} ns",
            done - now
        );
        now = done;
    }
    let flushed = one(&mut dev, now, Command::new(Op::Flush, 0, 0)) - now;
    eprintln!(
        "flush of 50 random 4 KiB writes: {:.1} ms",
        flushed as f64 / 1e6
    );
    assert!(flushed > 100_000_000, "{flushed}");
    // Nothing dirty left: the next flush is quick again.
    let again = one(&mut dev, now + flushed, Command::new(Op::Flush, 0, 0)) - now - flushed;
    assert!(again < 1_000_000, "{again}");
    // Without the write cache a write waits for the media.
    let mut wt = Hdd::new(HddSpec {
        write_cache: false,
        ..HddSpec::hd103sj()
    });
    let w = one(&mut wt, 0, Command::new(Op::Write, 1 << 30, 8));
    assert!(w > 1_000_000, "{w}");
}

#[test]
fn emmc_small_writes_cost_a_read_modify_write() {
    let mut e = Emmc::galaxy_s();
    // Sequential 4 KiB writes append to the open unit.
    let mut now = one(&mut e, 0, Command::new(Op::Write, 0, 8));
    let mut worst = 0;
    for i in 1..32 {
        let done = one(&mut e, now, Command::new(Op::Write, 8 * i, 8));
        worst = worst.max(done - now);
        now = done;
    }
    assert!(worst < 2_000_000, "an appending write took {worst} ns");
    // A 4 KiB write elsewhere closes the unit and opens another: copies.
    let t = one(&mut e, now, Command::new(Op::Write, 100_000, 8)) - now;
    assert!(t > 15_000_000, "a small random write took {t} ns");
    // A whole erase unit written at once copies nothing of its own (it
    // closes the open unit): per byte far cheaper than the small write.
    let unit = u32::try_from(e.unit).unwrap();
    let now2 = now + t;
    let at = 4 * e.unit;
    let full = one(&mut e, now2, Command::new(Op::Write, at, unit)) - now2;
    let per_4k = full * 8 / e.unit;
    assert!(
        per_4k * 10 < t,
        "a full unit took {full} ns, a 4 KiB write {t}"
    );
}

#[test]
fn ssd_parallelism_scales_random_reads_up_to_its_channels() {
    let iops = |job: &str| {
        let mut d = by_name("sata-ssd", None).unwrap();
        jobs::run(d.as_mut(), find(job).unwrap(), None).iops
    };
    let (q1, q8, q32) = (
        iops("rand-read-4k-qd1"),
        iops("rand-read-4k-qd8"),
        iops("rand-read-4k-qd32"),
    );
    eprintln!("sata-ssd random 4 KiB: qd1 {q1:.0}, qd8 {q8:.0}, qd32 {q32:.0} IOPS");
    assert!(q8 > 6.0 * q1, "{q1} {q8}");
    assert!(q32 < 1.2 * q8, "{q8} {q32}");
    let mut d = by_name("sata-ssd", None).unwrap();
    let lat = one(d.as_mut(), 0, read(12345, 8));
    assert!((80_000..=100_000).contains(&lat), "{lat}");
}

#[test]
fn every_model_meets_its_calibration_targets() {
    let mut off = Vec::new();
    for t in TARGETS {
        let p = jobs::predict(t).expect("a known device and job");
        let got = p.get(t.metric);
        eprintln!(
            "{:10} {:22} target {:9.1} model {:9.1} ({:.2})",
            t.device,
            t.job,
            t.value,
            got,
            got / t.value
        );
        if !jobs::within(got, t.value) {
            off.push(format!(
                "{} {}: {got:.1} for {:.1}",
                t.device, t.job, t.value
            ));
        }
    }
    assert!(off.is_empty(), "outside ±15 %:\n  {}", off.join("\n  "));
}

#[test]
fn any_command_sequence_completes_every_command() {
    // Whatever the caller sends (past the end, empty, mixed, bursts), every
    // model completes every command, never before it arrived, in time order.
    for name in ironlift_devmodel::MODELS {
        let mut dev = by_name(name, None).unwrap();
        let cap = dev.capacity();
        let mut x = 11u64;
        let mut now = 0;
        let mut sent = std::collections::HashMap::new();
        let mut done: Vec<Completion> = Vec::new();
        for i in 0..3000u64 {
            x = lcg_next(x);
            let op = [Op::Read, Op::Write, Op::Flush, Op::Discard][(x >> 60) as usize % 4];
            let sector = match i % 5 {
                0 => cap + (x >> 40),
                1 => u64::MAX - 100,
                _ => (x >> 16) % cap,
            };
            let sectors = [0, 1, 8, 2048, 65535][(x >> 33) as usize % 5];
            now += (x >> 50) % 3_000_000;
            let id = dev.submit(now, Command::new(op, sector.min(u64::MAX / 4), sectors));
            sent.insert(id, now);
            if i % 7 == 0 {
                dev.poll(now, &mut done);
            }
        }
        while let Some(t) = dev.next_event() {
            dev.poll(t, &mut done);
        }
        assert_eq!(done.len(), sent.len(), "{name}");
        for w in done.windows(2) {
            assert!(w[0].at <= w[1].at, "{name}: completions out of order");
        }
        for c in &done {
            assert!(c.at >= sent[&c.id], "{name}: completed before it arrived");
        }
    }
}

#[test]
fn path_latency_comes_off_each_command_and_null_takes_no_time() {
    use ironlift_devmodel::{build, Setup};
    let cached_read = |path_latency| {
        let mut d = build(
            "hdd-7200",
            Setup {
                path_latency,
                ..Setup::default()
            },
        )
        .unwrap();
        let t = one(d.as_mut(), 0, read(0, 8));
        one(d.as_mut(), t, read(8, 8)) - t
    };
    assert_eq!(cached_read(0) - cached_read(100_000), 100_000);
    let mut n = build("null", Setup::default()).unwrap();
    assert_eq!(one(n.as_mut(), 1234, read(0, 2048)), 1234);
    assert_eq!(one(n.as_mut(), 2000, Command::new(Op::Flush, 0, 0)), 2000);
}
