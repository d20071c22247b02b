// SPDX-License-Identifier: GPL-2.0

//! One test per rule of the BFQ-like policy's sysfs tunables: defaults
//! as BFQ's, bad values rejected with the old value kept, and what each
//! value changes.

use ironlift_policy::TunableError;

mod bfq_common;
use bfq_common::*;

#[test]
fn tunable_defaults_match_bfq() {
    let b = bfq(4, 1);
    let expect = [
        ("fifo_expire_sync", 125),
        ("fifo_expire_async", 250),
        ("back_seek_max", 16384),
        ("back_seek_penalty", 2),
        ("slice_idle", 8),
        ("slice_idle_us", 8000),
        ("max_budget", 0),
        ("timeout_sync", 125),
        ("strict_guarantees", 0),
        ("low_latency", 1),
    ];
    let names: Vec<_> = expect.iter().map(|e| e.0).collect();
    assert_eq!(b.tunables(), &names[..]);
    for (name, v) in expect {
        assert_eq!(b.tunable(name), Ok(v), "{name}");
    }
    assert_eq!(b.tunable("quantum"), Err(TunableError::UnknownName));
}

#[test]
fn bad_tunable_value_keeps_old_value() {
    let mut b = bfq(4, 1);
    let cases: &[(&str, &str, TunableError)] = &[
        ("fifo_expire_sync", "0", TunableError::OutOfRange),
        ("fifo_expire_sync", "2147483648", TunableError::OutOfRange),
        ("fifo_expire_async", "-5", TunableError::Invalid),
        ("back_seek_max", "2147483648", TunableError::OutOfRange),
        ("back_seek_max", "0x10", TunableError::Invalid),
        ("back_seek_penalty", "0", TunableError::OutOfRange),
        ("slice_idle", "abc", TunableError::Invalid),
        ("slice_idle", "", TunableError::Invalid),
        ("slice_idle", "8 ", TunableError::Invalid),
        ("slice_idle_us", "4294967296", TunableError::OutOfRange),
        ("max_budget", "-1", TunableError::Invalid),
        ("max_budget", "2147483648", TunableError::OutOfRange),
        ("timeout_sync", "0", TunableError::OutOfRange),
        ("strict_guarantees", "2", TunableError::OutOfRange),
        ("low_latency", "7", TunableError::OutOfRange),
        (
            "low_latency",
            "99999999999999999999999",
            TunableError::OutOfRange,
        ),
    ];
    for (name, text, err) in cases {
        let old = b.tunable(name).unwrap();
        assert_eq!(b.set_tunable(name, text), Err(*err), "{name}={text:?}");
        assert_eq!(b.tunable(name).unwrap(), old, "{name} changed");
    }
    assert_eq!(
        b.set_tunable("nonexistent", "1"),
        Err(TunableError::UnknownName)
    );
}

#[test]
fn good_tunable_values_are_stored() {
    let mut b = bfq(4, 1);
    for (name, text, v) in [
        ("fifo_expire_sync", "+50\n", 50),
        ("fifo_expire_async", "2147483647", 2147483647),
        ("back_seek_max", "0", 0),
        ("back_seek_penalty", "7", 7),
        ("max_budget", "4096", 4096),
        ("timeout_sync", "1", 1),
        ("strict_guarantees", "1", 1),
        ("low_latency", "0", 0),
        ("slice_idle_us", "4294967295", 4294967295),
    ] {
        b.set_tunable(name, text).unwrap();
        assert_eq!(b.tunable(name), Ok(v), "{name}");
    }
    assert_eq!(b.max_budget(), 4096);
}

#[test]
fn slice_idle_and_slice_idle_us_agree() {
    let mut b = bfq(4, 1);
    b.set_tunable("slice_idle_us", "2500").unwrap();
    assert_eq!(b.tunable("slice_idle"), Ok(2));
    assert_eq!(b.tunable("slice_idle_us"), Ok(2500));
    b.set_tunable("slice_idle", "5").unwrap();
    assert_eq!(b.tunable("slice_idle_us"), Ok(5000));
    b.set_tunable("slice_idle", "0").unwrap();
    assert_eq!(b.tunable("slice_idle_us"), Ok(0));
}

#[test]
fn strict_guarantees_raises_slice_idle() {
    let mut b = bfq(4, 1);
    b.set_tunable("slice_idle", "1").unwrap();
    b.set_tunable("strict_guarantees", "1").unwrap();
    assert_eq!(b.tunable("slice_idle"), Ok(8));
}

#[test]
fn strict_guarantees_dispatch_one_at_a_time() {
    let mut b = plain(8, 2);
    b.set_tunable("strict_guarantees", "1").unwrap();
    b.insert(0, &read(0, 0, 8), false, 0);
    b.insert(1, &read(0, 8, 8), false, 0);
    assert_eq!(b.dispatch(0), Dispatch::Request(0));
    assert_eq!(b.dispatch(0), Dispatch::Empty);
    b.completed(0, MS);
    assert_eq!(b.dispatch(MS), Dispatch::Request(1));
}

#[test]
fn low_latency_off_ends_raising() {
    let mut b = bfq(4, 2);
    b.insert(0, &read(0, 0, 8), false, 0);
    assert_eq!(b.issuer_info(0).wr_coeff, 30);
    b.set_tunable("low_latency", "0").unwrap();
    assert_eq!(b.issuer_info(0).wr_coeff, 1);
    assert_eq!(b.issuer_info(0).weight, 40);
}

#[test]
fn max_budget_zero_means_auto() {
    let mut b = bfq(4, 1);
    b.set_tunable("max_budget", "1000").unwrap();
    assert_eq!(b.max_budget(), 1000);
    b.set_tunable("max_budget", "0").unwrap();
    // Default peak rate 9333 (<<16 sectors/us) over 125 ms.
    assert_eq!(b.max_budget(), (9333 * 1000 * 125) >> 16);
    b.set_tunable("timeout_sync", "250").unwrap();
    assert_eq!(b.max_budget(), (9333 * 1000 * 250) >> 16);
}
