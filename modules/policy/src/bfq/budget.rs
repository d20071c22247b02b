// SPDX-License-Identifier: GPL-2.0

//! Service slots: putting a queue in service (`bfq_set_in_service_queue`),
//! what a request costs it (`bfq_serv_to_charge`), its budget and budget
//! timeout, how the next budget adapts to how the slot ended
//! (`__bfq_bfqq_recalc_budget`, `bfq_bfqq_charge_time`), and expiration
//! (`bfq_bfqq_expire`).

use super::idle::MIN_TT;
use super::{
    Ctx, Nanos, State, DEFAULT_MAX_BUDGET, DEFAULT_SLICE_IDLE, NIL, NSEC_PER_MSEC, NSEC_PER_USEC,
};

/// `bfq_stats_min_budgets`.
const STATS_MIN_BUDGETS: u32 = 194;
/// `bfq_async_charge_factor`.
const ASYNC_CHARGE_FACTOR: u64 = 3;

/// Why the in-service queue stops being served (`enum bfqq_expiration`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Expiration {
    TooIdle,
    BudgetTimeout,
    BudgetExhausted,
    NoMoreRequests,
    Preempted,
}

impl State {
    pub(super) fn timeout_ms(&self) -> u64 {
        (self.timeout / NSEC_PER_MSEC).max(1)
    }

    /// `bfq_max_budget`.
    pub(super) fn cur_max_budget(&self) -> u64 {
        if self.budgets_assigned < STATS_MIN_BUDGETS {
            DEFAULT_MAX_BUDGET
        } else {
            self.max_budget
        }
    }

    /// `bfq_min_budget`.
    pub(super) fn min_budget(&self) -> u64 {
        self.cur_max_budget() / 32
    }
}

impl Ctx<'_> {
    /// `bfq_serv_to_charge`.
    #[inline]
    pub(super) fn charge(&self, x: u32, qi: u32) -> u64 {
        let r = self.rq(x);
        let s = u64::from(r.sectors);
        if r.sync || self.q(qi).wr_coeff > 1 {
            s
        } else {
            s * ASYNC_CHARGE_FACTOR
        }
    }

    /// `bfq_updated_next_req`.
    #[inline]
    pub(super) fn updated_next_req(&mut self, qi: u32) {
        let next_rq = self.q(qi).next_rq;
        if next_rq == NIL || self.s.in_service == qi {
            return;
        }
        let c = self.charge(next_rq, qi);
        let q = self.q(qi);
        let nb = q.max_budget.max(c).max(q.service);
        if nb != q.budget {
            self.qm(qi).budget = nb;
            self.reposition(qi);
        }
    }

    /// `bfq_bfqq_update_budg_for_activation`: the budget of queue `qi`,
    /// idle until its request just arrived. A queue back in time with
    /// budget left gets the rest of it (and wants to preempt the queue in
    /// service), any other a new one. Returns whether it wants to preempt,
    /// and the charge of its next request.
    #[inline]
    pub(super) fn update_budget_for_activation(&mut self, qi: u32, now: Nanos) -> (bool, u64) {
        let q = *self.q(qi);
        let c = if q.next_rq != NIL {
            self.charge(q.next_rq, qi)
        } else {
            0
        };
        let arrived_in_time = now
            <= q.last_end_request
                .saturating_add(self.s.slice_idle.saturating_mul(3));
        let budget_left = q.budget.saturating_sub(q.service);
        let wants_to_preempt = q.non_blocking_wait_rq && arrived_in_time && budget_left > 0;
        let qm = self.qm(qi);
        if wants_to_preempt {
            qm.budget = budget_left.min(q.max_budget);
        } else {
            qm.budget = q.max_budget.max(c);
            qm.non_blocking_wait_rq = false;
        }
        qm.service = 0;
        (wants_to_preempt, c)
    }

    #[inline]
    pub(super) fn budget_left(&self, qi: u32) -> u64 {
        let q = self.q(qi);
        q.budget.saturating_sub(q.service)
    }

    /// Whether queue `qi` has a next request and its budget left covers
    /// what that request is charged (`bfq_serv_to_charge()` against
    /// `bfq_bfqq_budget_left()`).
    #[inline]
    pub(super) fn next_rq_fits_budget(&self, qi: u32) -> bool {
        let next = self.q(qi).next_rq;
        next != NIL && self.charge(next, qi) <= self.budget_left(qi)
    }

    #[inline]
    fn budget_timed_out(&self, qi: u32, now: Nanos) -> bool {
        !matches!(self.q(qi).budget_timeout, Some(t) if now < t)
    }

    /// `bfq_may_expire_for_budg_timeout`.
    #[inline]
    pub(super) fn may_expire_for_budget_timeout(&self, qi: u32, now: Nanos) -> bool {
        (!self.s.wait_request || self.budget_left(qi) >= self.q(qi).budget / 3)
            && self.budget_timed_out(qi, now)
    }

    /// `bfq_bfqq_is_slow`: whether the queue got little done in its slot,
    /// and the slot's length in ms.
    #[inline]
    fn is_slow(&self, qi: u32, compensate: bool, now: Nanos) -> (bool, u64) {
        if !self.q(qi).sync {
            return (false, 0);
        }
        let end = if compensate {
            self.s.last_idling_start
        } else {
            now
        };
        let delta_us = end.saturating_sub(self.s.last_budget_start) / NSEC_PER_USEC;
        let mut slow = self.seeky(qi);
        if delta_us < 1000 {
            let ms = if self.s.nonrot {
                MIN_TT / NSEC_PER_MSEC
            } else {
                DEFAULT_SLICE_IDLE / NSEC_PER_MSEC
            };
            return (slow, ms);
        }
        if delta_us > 20000 {
            slow = self.q(qi).service < self.s.max_budget / 2;
        }
        (slow, delta_us / 1000)
    }

    /// `bfq_bfqq_charge_time`.
    #[inline]
    fn charge_time(&mut self, qi: u32, time_ms: u64) {
        let timeout_ms = self.s.timeout_ms();
        let bounded = time_ms.min(timeout_ms);
        let for_time = self.s.max_budget.saturating_mul(bounded) / timeout_ms;
        let q = *self.q(qi);
        let tot = for_time.max(q.service);
        if tot > q.budget {
            self.qm(qi).budget = tot;
        }
        self.served(qi, tot - q.service);
    }

    /// `__bfq_bfqq_recalc_budget`.
    #[inline]
    fn recalc_budget(&mut self, qi: u32, reason: Expiration) {
        let min_budget = self.s.min_budget();
        let dev_max = self.s.max_budget;
        let q = *self.q(qi);
        let mut budget = if q.wr_coeff == 1 {
            q.max_budget
        } else {
            2 * min_budget
        };
        if q.sync && q.wr_coeff == 1 {
            budget = match reason {
                Expiration::TooIdle => {
                    if q.dispatched > 0 {
                        budget.saturating_mul(2).min(dev_max)
                    } else if budget > 5 * min_budget {
                        budget - 4 * min_budget
                    } else {
                        min_budget
                    }
                }
                Expiration::BudgetTimeout => budget.saturating_mul(2).min(dev_max),
                Expiration::BudgetExhausted => budget.saturating_mul(4).min(dev_max),
                Expiration::NoMoreRequests => q.service.max(min_budget),
                Expiration::Preempted => return,
            };
        } else if !q.sync {
            budget = dev_max;
        }
        let mut mb = budget.max(1);
        if self.s.budgets_assigned >= STATS_MIN_BUDGETS && self.s.user_max_budget == 0 {
            mb = mb.min(dev_max);
        }
        self.qm(qi).max_budget = mb;
        if q.next_rq != NIL {
            let c = self.charge(q.next_rq, qi);
            self.qm(qi).budget = mb.max(c);
        }
    }

    /// `bfq_bfqq_expire`: the in-service queue stops being served.
    #[inline]
    pub(super) fn expire(&mut self, qi: u32, reason: Expiration, compensate: bool, now: Nanos) {
        if self.s.in_service != qi {
            return;
        }
        // No service time to measure for it any more.
        self.s.rqs_injected = false;
        self.s.wait_dispatch = false;
        self.s.waited_rq = NIL;
        let (slow, delta_ms) = self.is_slow(qi, compensate, now);
        if self.q(qi).wr_coeff == 1
            && (slow
                || (reason == Expiration::BudgetTimeout
                    && self.budget_left(qi) >= self.q(qi).budget / 3))
        {
            self.charge_time(qi, delta_ms);
        }
        if self.s.low_latency && self.q(qi).wr_coeff == 1 {
            self.qm(qi).last_wr_start_finish = now;
        }
        if self.s.low_latency && self.q(qi).queued == 0 {
            if self.q(qi).dispatched == 0 {
                let t = self.softrt_next_start(qi, now);
                self.qm(qi).soft_rt_next_start = t;
            } else {
                self.qm(qi).softrt_update = true;
            }
        }
        self.recalc_budget(qi, reason);
        self.s.wait_request = false;
        // As __bfq_bfqq_expire: a queue preempted while idling is needed
        // for its guarantees stays busy, empty, with its place in the
        // schedule and its weight in the sums the tag share divides by. A
        // greedy reader preempted on each of its requests thus stays held
        // to its share of the tags. Put in service while still empty, it
        // is expired at once unless it has requests in flight to idle for.
        if self.q(qi).queued == 0
            && !(reason == Expiration::Preempted && self.idling_needed_for_service_guarantees(qi))
        {
            if self.q(qi).dispatched == 0 {
                self.qm(qi).budget_timeout = Some(now);
            }
            self.deactivate(qi);
        } else {
            // Requeue: charge the service received, then queue the next slot.
            self.s.in_service = NIL;
            if self.requeue_expired(qi) {
                self.maybe_release(qi);
                return;
            }
        }
        if !self.q(qi).busy
            && reason != Expiration::BudgetTimeout
            && reason != Expiration::BudgetExhausted
        {
            // It may come back in time and use the rest of its budget.
            self.qm(qi).non_blocking_wait_rq = true;
        } else {
            self.qm(qi).service = 0;
        }
        self.maybe_release(qi);
    }

    /// Starts serving the next queue (`bfq_set_in_service_queue`).
    #[inline]
    pub(super) fn set_in_service(&mut self, now: Nanos) -> u32 {
        let qi = self.next_queue();
        if qi == NIL {
            return NIL;
        }
        self.s.in_service = qi;
        self.s.wait_request = false;
        self.s.budgets_assigned = (self.s.budgets_assigned * 7 + 256) / 8;
        let q = *self.q(qi);
        let mut budget = q.budget;
        if q.next_rq != NIL {
            budget = budget.max(self.charge(q.next_rq, qi));
        }
        let coeff = if self.is_srt(qi) {
            1
        } else {
            u64::from((q.weight / q.orig_weight.max(1)).max(1))
        };
        let to = now.saturating_add(self.s.timeout.saturating_mul(coeff));
        let qm = self.qm(qi);
        qm.fifo_checked = false;
        qm.budget = budget;
        qm.service = 0;
        qm.budget_timeout = Some(to);
        self.s.last_budget_start = now;
        qi
    }
}
