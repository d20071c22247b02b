// SPDX-License-Identifier: GPL-2.0

//! What `rust-deadline` and `rust-bfq` share between the elevator
//! abstraction and a policy of the policy crate: the owned [`SchedRequest`]
//! handles by scheduler index (the policy names requests by that index),
//! and the merge hooks, which only translate between the two.

use super::types::{IoPrio, MergeProbe, Op, Policy};
use core::sync::atomic::AtomicU64;
use kernel::block::mq::elevator::{Bio, MergeKind, ReqOp, RequestRef, SchedRequest};
use kernel::prelude::*;
use kernel::str::CStr;

/// The policy's view of a block-layer operation.
pub(crate) fn policy_op(op: ReqOp) -> Op {
    match op {
        ReqOp::Read => Op::Read,
        ReqOp::Flush => Op::Flush,
        ReqOp::Discard => Op::Discard,
        // Writes, write-zeroes and the rest are writes (`rq_data_dir()`).
        _ => Op::Write,
    }
}

/// Whether the sysfs files `sysfs` are the policy's tunables `policy`, in
/// its order: the modules check it at load, since a file's index is the
/// tunable's.
pub(crate) fn tunables_match(policy: &[&str], sysfs: &[&CStr]) -> bool {
    policy.len() == sysfs.len()
        && policy
            .iter()
            .zip(sysfs)
            .all(|(n, t)| n.as_bytes() == t.as_bytes())
}

/// A vector of `n` values made by `f`, for element types that are not
/// `Clone` (atomics, request handles), so `extend_with()` cannot fill it.
pub(crate) fn kvvec_from_fn<T>(n: usize, f: impl Fn() -> T) -> Result<KVVec<T>> {
    let mut v = KVVec::with_capacity(n, GFP_KERNEL)?;
    for _ in 0..n {
        v.push(f(), GFP_KERNEL)?;
    }
    Ok(v)
}

/// Storage of atomic words (the completion logs' bitmaps and times).
pub(crate) struct Words(pub(crate) KVVec<AtomicU64>);

impl AsRef<[AtomicU64]> for Words {
    fn as_ref(&self) -> &[AtomicU64] {
        &self.0
    }
}

/// The handle of each request the scheduler holds, by scheduler index.
pub(crate) struct Handles(KVVec<Option<SchedRequest>>);

impl Handles {
    /// Room for `capacity` scheduler indexes, all empty.
    pub(crate) fn new(capacity: usize) -> Result<Self> {
        Ok(Handles(kvvec_from_fn(capacity, || None)?))
    }

    /// How many scheduler indexes there is room for.
    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    /// The handle slot of a request, if it has a scheduler index.
    pub(crate) fn slot(&mut self, rq: &RequestRef) -> Option<(usize, &mut Option<SchedRequest>)> {
        let index = rq.sched_index()?;
        self.0.get_mut(index).map(|slot| (index, slot))
    }

    /// Takes the handle the policy dispatched, if there is one.
    pub(crate) fn take(&mut self, tag: usize) -> Option<SchedRequest> {
        self.0.get_mut(tag).and_then(Option::take)
    }

    /// `request_merge`: the held request `bio` could be front-merged into,
    /// as the policy chooses it.
    pub(crate) fn front_merge_candidate(
        &self,
        policy: &impl Policy,
        bio: &Bio,
    ) -> Option<&RequestRef> {
        let probe = MergeProbe {
            bio_end: bio.end_sector(),
            op: policy_op(bio.opf().op()),
            prio: IoPrio::from_kernel(bio.ioprio()),
        };
        let tag = policy.front_merge_candidate(&probe)?;
        self.0.get(tag)?.as_deref()
    }

    /// `requests_merged`: `next` was merged into `into`; the policy forgets
    /// it, and its handle is given back. Only `next`'s own handle is (for
    /// the request being inserted, the slot is empty).
    pub(crate) fn merged_away(
        &mut self,
        policy: &mut impl Policy,
        into: &RequestRef,
        next: &RequestRef,
    ) -> Option<SchedRequest> {
        let into = into.sched_index()?;
        let (tag, slot) = self.slot(next)?;
        let handle = match slot {
            Some(held) if core::ptr::eq::<RequestRef>(&**held, next) => slot.take(),
            _ => None,
        };
        policy.requests_merged(into, tag);
        handle
    }
}

/// `request_merged`: a bio was merged into `rq`. A front merge moved its
/// start sector, which the policy sorts by; either merge changed its size,
/// which a policy may charge by.
pub(crate) fn request_merged(policy: &mut impl Policy, rq: &RequestRef, kind: MergeKind) {
    let Some(tag) = rq.sched_index() else {
        return;
    };
    match kind {
        MergeKind::Front => policy.front_merged(tag, rq.sector(), rq.sectors()),
        MergeKind::Back => policy.back_merged(tag, rq.sectors()),
        MergeKind::Discard => {}
    }
}
