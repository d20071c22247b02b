// SPDX-License-Identifier: GPL-2.0

//! Wakers (`bfq_check_waker`): a queue whose new I/O keeps arriving
//! right after another queue's request completed is taken to be woken by
//! that queue (a process that waits on a journal thread's commit, say),
//! and while it is in service and the drive waits for it, its waker's
//! requests are dispatched at once (`bfq_select_queue`'s second
//! injection alternative), as are, while the waker is in service and
//! waits, those of the queue it wakes (the third).
//!
//! Each queue has at most one waker, and each waker keeps the list of the
//! queues it wakes (C's `woken_list`), linked through the woken queues'
//! slots, so that a released queue resets the waker of every queue it
//! woke in time proportional to their number. A tentative waker is held
//! with its slot's generation, so that a slot released and handed to a
//! new queue meanwhile does not count as the same candidate.

use super::{Ctx, Nanos, NIL, NSEC_PER_MSEC};

/// How many times in a row a queue must get new I/O right after the same
/// other queue's completion for that queue to become its waker.
pub(super) const WAKER_DETECTIONS: u32 = 3;
/// How soon after the other queue's completion the new I/O must arrive.
pub(super) const WAKER_WINDOW: Nanos = 4 * NSEC_PER_MSEC;
/// Detection starts over when this many `slice_idle`s passed since its
/// first step.
pub(super) const WAKER_RESET_SLICES: u64 = 128;

impl Ctx<'_> {
    /// The shared overflow queue (the last slot), which, as BFQ's
    /// `oom_bfqq`, is neither a waker nor woken.
    #[inline]
    fn shared_queue(&self) -> u32 {
        (self.qs.len() - 1) as u32
    }

    /// `bfq_check_waker`: sync queue `qi`, with nothing of its own queued
    /// or in flight, gets a request at `now`. If the last completion,
    /// less than [`WAKER_WINDOW`] ago, was another queue's, and `qi`
    /// thinks long (so is likely blocked on something), that queue is a
    /// step closer to being `qi`'s waker: it becomes it on the
    /// [`WAKER_DETECTIONS`]th time in a row within
    /// [`WAKER_RESET_SLICES`] `slice_idle`s of the first.
    pub(super) fn check_waker(&mut self, qi: u32, now: Nanos) {
        let w = self.s.last_completed;
        let shared = self.shared_queue();
        if w == NIL
            || w == qi
            || self.q(qi).has_short_ttime
            || now.saturating_sub(self.s.last_completion) >= WAKER_WINDOW
            || w == shared
            || qi == shared
        {
            return;
        }
        let gen = self.qs[w as usize].gen;
        let window = self.s.slice_idle.saturating_mul(WAKER_RESET_SLICES);
        let q = self.qm(qi);
        if q.tentative_waker != w
            || q.tentative_gen != gen
            || now > q.waker_detection_started.saturating_add(window)
        {
            q.tentative_waker = w;
            q.tentative_gen = gen;
            q.waker_detections = 1;
            q.waker_detection_started = now;
        } else {
            q.waker_detections += 1;
        }
        if q.waker_detections == WAKER_DETECTIONS {
            q.tentative_waker = NIL;
            self.set_waker(qi, w);
        }
    }

    /// Makes `w` the waker of `qi`: off its former waker's list, at the
    /// head of `w`'s.
    fn set_waker(&mut self, qi: u32, w: u32) {
        self.unlink_woken(qi);
        let head = self.q(w).woken_first;
        {
            let q = self.qm(qi);
            q.waker = w;
            q.woken_prev = NIL;
            q.woken_next = head;
        }
        if head != NIL {
            self.qm(head).woken_prev = qi;
        }
        self.qm(w).woken_first = qi;
    }

    /// Takes `qi` off its waker's list, leaving it without a waker.
    fn unlink_woken(&mut self, qi: u32) {
        let q = *self.q(qi);
        if q.waker == NIL {
            return;
        }
        if q.woken_prev != NIL {
            self.qm(q.woken_prev).woken_next = q.woken_next;
        } else {
            self.qm(q.waker).woken_first = q.woken_next;
        }
        if q.woken_next != NIL {
            self.qm(q.woken_next).woken_prev = q.woken_prev;
        }
        let q = self.qm(qi);
        q.waker = NIL;
        q.woken_prev = NIL;
        q.woken_next = NIL;
    }

    /// Queue `qi` is being released (as `bfq_put_queue` frees a queue):
    /// it is no longer woken by its waker, the queues it woke have no
    /// waker, and it is no longer the last to have completed a request.
    /// Its slot's generation moves on, which retires it as anyone's
    /// tentative waker.
    pub(super) fn forget_wakers(&mut self, qi: u32) {
        self.unlink_woken(qi);
        let mut j = self.q(qi).woken_first;
        while j != NIL {
            let next = self.q(j).woken_next;
            let q = self.qm(j);
            q.waker = NIL;
            q.woken_prev = NIL;
            q.woken_next = NIL;
            j = next;
        }
        self.qm(qi).woken_first = NIL;
        if self.s.last_completed == qi {
            self.s.last_completed = NIL;
        }
        let slot = &mut self.qs[qi as usize];
        slot.gen = slot.gen.wrapping_add(1);
    }

    /// Whether queue `j` is busy with a next request that its budget left
    /// covers, so that it may be injected.
    #[inline]
    fn injectable(&self, j: u32) -> bool {
        self.q(j).busy && self.next_rq_fits_budget(j)
    }

    /// While the drive waits for queue `is`, in service: its waker, if it
    /// has a request that fits its budget, else the latest queue it was
    /// found to wake (the head of its woken list), on the same terms.
    /// Neither depends on the inject limit.
    pub(super) fn choose_waker_or_woken(&self, is: u32) -> Option<u32> {
        let q = self.q(is);
        if q.waker != NIL && self.injectable(q.waker) {
            return Some(q.waker);
        }
        let woken = q.woken_first;
        if woken != NIL && self.injectable(woken) {
            return Some(woken);
        }
        None
    }
}
