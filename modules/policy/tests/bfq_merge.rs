// SPDX-License-Identifier: GPL-2.0

//! Early stable merging (`bfq_do_or_sched_stable_merge`): which issuers
//! share a queue, what they share, and what their exits do.

mod bfq_common;
use bfq_common::*;

#[test]
fn issuers_starting_together_share_the_first_ones_queue() {
    // Three readers of one priority within 180 ms of the first's creation,
    // on a non-rotational device not known not to queue: one queue.
    let mut b = nonrot(16, 5);
    b.insert(0, &read(0, 0, 8), false, 0);
    b.insert(1, &read(1, 1 << 30, 8), false, 90 * MS);
    b.insert(2, &read(2, 1 << 31, 8), false, 180 * MS);
    for i in 1..3 {
        let info = b.issuer_info(i);
        assert_eq!(info.merged_into, Some(0), "issuer {i}");
        assert!(!b.issuer_is_free(i));
    }
    let q = b.issuer_info(0);
    assert_eq!((q.merged_into, q.queued), (None, 3));
    assert_eq!(b.issuer_info(1).queued, 3);
    // One queue in sector order, with no idling or switching in between.
    let tags: Vec<usize> = (0..3).map(|_| tag_of(b.dispatch(180 * MS))).collect();
    assert_eq!(tags, [0, 1, 2]);
    assert_eq!(b.check_invariants(), Ok(()));
}

#[test]
fn what_keeps_issuers_apart() {
    // Later than 180 ms after the last creation.
    let mut b = nonrot(16, 4);
    b.insert(0, &read(0, 0, 8), false, 0);
    b.insert(1, &read(1, 1 << 30, 8), false, 181 * MS);
    assert_eq!(b.issuer_info(1).merged_into, None);

    // Another priority level: a queue of its own, and the last created
    // from then on, so a third issuer at its level joins it.
    let mut b = nonrot(16, 4);
    b.insert(0, &at_level(4, read(0, 0, 8)), false, 0);
    b.insert(1, &at_level(2, read(1, 1 << 30, 8)), false, MS);
    b.insert(2, &at_level(2, read(2, 1 << 31, 8)), false, 2 * MS);
    assert_eq!(b.issuer_info(1).merged_into, None);
    assert_eq!(b.issuer_info(2).merged_into, Some(1));

    // An async first request: no stable merge, and not a candidate.
    let mut b = nonrot(16, 4);
    b.insert(0, &write_async(0, 0, 8), true, 0);
    b.insert(1, &read(1, 1 << 30, 8), false, MS);
    b.insert(2, &read(2, 1 << 31, 8), false, 2 * MS);
    assert_eq!(b.issuer_info(1).merged_into, None);
    assert_eq!(b.issuer_info(2).merged_into, Some(1));

    // A rotational device (C schedules a delayed merge there instead,
    // which is not modelled).
    let mut b = plain(16, 4);
    b.insert(0, &read(0, 0, 8), false, 0);
    b.insert(1, &read(1, 1 << 30, 8), false, MS);
    assert_eq!(b.issuer_info(1).merged_into, None);

    // The shared last slot is never merged.
    let mut b = nonrot(16, 2);
    b.insert(0, &read(0, 0, 8), false, 0);
    b.insert(1, &read(1, 1 << 30, 8), false, MS);
    assert_eq!(b.issuer_info(1).merged_into, None);
}

#[test]
fn a_device_found_not_to_queue_merges_no_more() {
    // 33 completions with never more than one request in the driver: the
    // device does not queue, and the next creation is not merged.
    let mut b = nonrot(64, 4);
    for t in 0..40 {
        b.insert(t, &read(0, t as u64 * 8, 8), false, 0);
    }
    let mut now = 0;
    for _ in 0..33 {
        let t = tag_of(b.dispatch(now));
        now += 100_000;
        b.completed(t, now);
    }
    assert_eq!(b.hw_tag(), Some(false));
    b.insert(50, &read(1, 1 << 30, 8), false, now);
    assert_eq!(b.issuer_info(1).merged_into, None);
}

#[test]
fn the_last_creation_candidate_moves_after_600_ms() {
    // 700 ms after the first creation the second is the new candidate; a
    // third 100 ms later joins the second, not the first.
    let mut b = nonrot(16, 4);
    b.insert(0, &read(0, 0, 8), false, 0);
    b.insert(1, &read(1, 1 << 30, 8), false, 700 * MS);
    b.insert(2, &read(2, 1 << 31, 8), false, 800 * MS);
    assert_eq!(b.issuer_info(1).merged_into, None);
    assert_eq!(b.issuer_info(2).merged_into, Some(1));
}

#[test]
fn a_merged_queue_lives_while_any_of_its_issuers_does() {
    let mut b = nonrot(16, 4);
    b.insert(0, &read(0, 0, 8), false, 0);
    b.insert(1, &read(1, 1 << 30, 8), false, MS);
    assert_eq!(b.issuer_info(1).merged_into, Some(0));
    for t in [0, 1] {
        assert_eq!(tag_of(b.dispatch(MS)), t);
        b.completed(t, 2 * MS);
    }
    // The queue's own issuer exits: the queue stays (issuer 1 still
    // sends), its slot is not free, and it is still idled for.
    b.issuer_exit(0, 2 * MS);
    assert!(!b.issuer_is_free(0));
    b.insert(2, &read(1, (1 << 30) + 8, 8), false, 3 * MS);
    assert_eq!(tag_of(b.dispatch(3 * MS)), 2);
    b.completed(2, 4 * MS);
    assert!(b.idling_until().is_some());
    assert_eq!(b.check_invariants(), Ok(()));
    // An exit also ends the queue's candidacy: a new issuer gets its own.
    b.insert(3, &read(2, 1 << 31, 8), false, 4 * MS);
    assert_eq!(b.issuer_info(2).merged_into, None);
    assert_eq!(tag_of(b.dispatch(4 * MS)), 3);
    b.completed(3, 5 * MS);
    // The merged issuer exits: its slot is free at once, and with no
    // issuer left the queue is released.
    b.issuer_exit(1, 5 * MS);
    assert!(b.issuer_is_free(1));
    assert!(b.issuer_is_free(0));
    assert_eq!(b.check_invariants(), Ok(()));

    // The other order: the merged issuer exits first; its slot is free,
    // the queue serves its own issuer on.
    let mut b = nonrot(16, 4);
    b.insert(0, &read(0, 0, 8), false, 0);
    b.insert(1, &read(1, 1 << 30, 8), false, MS);
    b.issuer_exit(1, MS);
    assert!(b.issuer_is_free(1));
    assert!(!b.issuer_is_free(0));
    assert_eq!(b.issuer_info(0).queued, 2);
    for t in [0, 1] {
        assert_eq!(tag_of(b.dispatch(MS)), t);
        b.completed(t, 2 * MS);
    }
    assert_eq!(b.check_invariants(), Ok(()));
}

#[test]
fn merged_issuers_share_the_queues_merges_and_tag_share() {
    use ironlift_policy::MergeProbe;
    let mut b = nonrot(16, 4);
    b.insert(0, &read(0, 64, 8), false, 0);
    b.insert(1, &read(1, 1 << 30, 8), false, MS);
    // A bio of issuer 1 right in front of issuer 0's request finds it.
    let probe = MergeProbe {
        bio_end: 64,
        op: Op::Read,
        prio: IoPrio::DEFAULT,
    };
    assert_eq!(b.front_merge_candidate_for(1, &probe), Some(0));
    assert_eq!(b.tag_depth(1, 4), b.tag_depth(0, 4));
}
