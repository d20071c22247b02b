// SPDX-License-Identifier: GPL-2.0

//! Large bursts (`bfq_handle_burst`): many queues created close together
//! usually serve one task (a `make -j`, a service starting its workers),
//! which should not be weight-raised as interactive; a few, as when an
//! application starts, should be.

use super::{Ctx, Nanos, Queue, NIL, NSEC_PER_MSEC, NSEC_PER_SEC};

/// `bfq_large_burst_thresh`: queues created this close together make a
/// large burst.
pub(super) const LARGE_BURST_THRESH: usize = 8;
/// `bfq_burst_interval`: the longest gap between two queue creations of one
/// burst.
pub(super) const BURST_INTERVAL: Nanos = 180 * NSEC_PER_MSEC;
/// How long after its budget timeout an idle queue leaves its burst.
const BURST_FORGET: Nanos = 10 * NSEC_PER_SEC;

impl Ctx<'_> {
    /// Takes `qi` off the burst list if it is on it; tells whether it was.
    pub(super) fn burst_list_del(&mut self, qi: u32) -> bool {
        if !self.q(qi).in_burst_list {
            return false;
        }
        self.qm(qi).in_burst_list = false;
        let len = self.s.burst_len as usize;
        if let Some(pos) = self.s.burst_list[..len].iter().position(|&x| x == qi) {
            self.s.burst_list[pos] = self.s.burst_list[len - 1];
            self.s.burst_list[len - 1] = NIL;
            self.s.burst_len -= 1;
        }
        true
    }

    /// Empties the burst list.
    fn burst_list_clear(&mut self) {
        for i in 0..self.s.burst_len as usize {
            let x = self.s.burst_list[i];
            self.qm(x).in_burst_list = false;
            self.s.burst_list[i] = NIL;
        }
        self.s.burst_len = 0;
    }

    /// Puts `qi` on the burst list (which is shorter than the threshold:
    /// it is emptied when the burst becomes large).
    fn burst_list_add(&mut self, qi: u32) {
        let len = self.s.burst_len as usize;
        if len < LARGE_BURST_THRESH {
            self.s.burst_list[len] = qi;
            self.s.burst_len += 1;
            self.qm(qi).in_burst_list = true;
        }
    }

    /// `bfq_reset_burst_list`: a new burst starts with `qi`, but only if no
    /// queue is busy (otherwise there is no burst to speak of).
    fn reset_burst_list(&mut self, qi: u32) {
        self.burst_list_clear();
        if self.s.busy_queues == 0 {
            self.burst_list_add(qi);
            self.s.burst_size = 1;
        } else {
            self.s.burst_size = 0;
        }
    }

    /// `bfq_add_to_burst`.
    fn add_to_burst(&mut self, qi: u32) {
        self.s.burst_size += 1;
        if self.s.burst_size as usize == LARGE_BURST_THRESH {
            // Enough queues created shortly after each other: all of
            // them, and every further one until the burst ends, are in a
            // large burst. The list is not needed any more.
            self.s.large_burst = true;
            for i in 0..self.s.burst_len as usize {
                let x = self.s.burst_list[i];
                self.qm(x).in_large_burst = true;
            }
            self.qm(qi).in_large_burst = true;
            self.burst_list_clear();
        } else {
            self.burst_list_add(qi);
        }
    }

    /// `bfq_handle_burst`, for a queue just created (its first request),
    /// when a burst is under way or no queue is busy: many queues created
    /// close together usually serve one task (a `make -j`, a service
    /// starting its workers), which should not be weight-raised as
    /// interactive; a few, as when an application starts, should be.
    pub(super) fn handle_burst(&mut self, qi: u32, now: Nanos) {
        let q = self.q(qi);
        if q.in_burst_list || q.in_large_burst {
            return;
        }
        let in_interval = matches!(self.s.last_ins_in_burst,
            Some(t) if now.saturating_sub(t) <= BURST_INTERVAL);
        if !in_interval {
            self.s.large_burst = false;
            self.reset_burst_list(qi);
        } else if self.s.large_burst {
            self.qm(qi).in_large_burst = true;
        } else {
            self.add_to_burst(qi);
        }
        self.s.last_ins_in_burst = Some(now);
    }

    /// Queue `qi` (`q` as it was before its request arrived), if idle for
    /// much longer than an interactive queue would be: its part of the
    /// burst's work is over, it no longer belongs to its burst.
    #[inline]
    pub(super) fn leave_burst_if_idle(&mut self, qi: u32, q: &Queue, idle_long: bool, now: Nanos) {
        if !q.just_created
            && idle_long
            && q.budget_timeout
                .map(|t| now > t.saturating_add(BURST_FORGET))
                .unwrap_or(true)
        {
            self.burst_list_del(qi);
            self.qm(qi).in_large_burst = false;
        }
    }
}
