// SPDX-License-Identifier: GPL-2.0

//! Weight raising (with `low_latency`): a queue that becomes busy after a
//! long idle time counts as interactive, one that keeps to a soft real-time
//! pace as soft real time, and either gets its weight raised for a while
//! (`bfq_update_bfqq_wr_on_rq_arrival`, `bfq_update_wr_data`,
//! `bfq_bfqq_softrt_next_start`).

use super::{Ctx, Nanos, Queue, State, DEFAULT_WEIGHT, NSEC_PER_MSEC, NSEC_PER_SEC};

/// `bfq_wr_coeff`.
pub(super) const WR_COEFF: u32 = 30;
/// `BFQ_SOFTRT_WEIGHT_FACTOR`.
const SOFTRT_WEIGHT_FACTOR: u32 = 100;
/// `bfq_wr_rt_max_time`.
const WR_RT_MAX_TIME: Nanos = 300 * NSEC_PER_MSEC;
/// `bfq_wr_min_idle_time`.
const WR_MIN_IDLE_TIME: Nanos = 2000 * NSEC_PER_MSEC;
/// `bfq_wr_max_softrt_rate`, sectors per second.
const WR_MAX_SOFTRT_RATE: u64 = 7000;
/// `max_service_from_wr`, sectors.
const MAX_SERVICE_FROM_WR: u64 = 120_000;

/// How a queue idle until a request arrived counts for weight raising (and
/// for its burst).
#[derive(Clone, Copy)]
pub(super) struct WrArrival {
    /// Nothing in flight, and its budget timeout more than
    /// `bfq_wr_min_idle_time` ago.
    pub(super) idle_long: bool,
    /// Idle long, of the default weight, and not in a large burst.
    pub(super) interactive: bool,
    /// Not always seeky, not in a large burst, of the default weight,
    /// nothing in flight, past its soft real-time next start, and not
    /// held to one scheduler tag since its last request (see below).
    pub(super) soft_rt: bool,
}

impl Queue {
    /// How this queue, idle until a request arrived at `now`, counts for
    /// weight raising.
    #[inline]
    pub(super) fn wr_arrival(&self, now: Nanos) -> WrArrival {
        let idle_long = self.dispatched == 0
            && !matches!(self.budget_timeout, Some(t) if now <= t.saturating_add(WR_MIN_IDLE_TIME));
        // A queue held to one tag ([`Bfq::tag_depth`]) went quiet because
        // its process waited for that tag, which says nothing of the pace
        // it issues at: raising it as soft real-time (weight x 3000) would
        // give the greedy readers the share rule holds back a hundred times
        // the weight of the application it protects.
        let soft_rt = self.seek_history != u32::MAX
            && !self.tag_limited
            && !self.in_large_burst
            && now > self.soft_rt_next_start
            && self.dispatched == 0
            && self.orig_weight == DEFAULT_WEIGHT;
        let interactive = !self.in_large_burst && idle_long && self.orig_weight == DEFAULT_WEIGHT;
        WrArrival {
            idle_long,
            interactive,
            soft_rt,
        }
    }
}

impl State {
    /// `bfq_wr_duration`.
    pub(super) fn wr_duration(&self) -> Nanos {
        let ms = self.rate_dur_prod / self.peak_rate.max(1);
        ms.clamp(3000, 25000) * NSEC_PER_MSEC
    }
}

impl Ctx<'_> {
    /// `bfq_update_bfqq_wr_on_rq_arrival`: starts raising queue `qi`, idle
    /// until a request arrived, if it is interactive or soft real time, or
    /// switches the kind of raising it has. `q` is the queue as it was
    /// before its budget was updated, `charge` what its next request costs.
    #[inline]
    pub(super) fn update_wr_on_arrival(
        &mut self,
        qi: u32,
        q: &Queue,
        a: WrArrival,
        charge: u64,
        now: Nanos,
    ) {
        let old_wr = q.wr_coeff;
        let deserves = old_wr > 1 || (q.sync && (a.interactive || a.soft_rt));
        if !(self.s.low_latency && deserves) {
            return;
        }
        // Both divide; most activations need neither.
        let dur = self.s.wr_duration();
        let min_budget = self.s.min_budget();
        let qm = self.qm(qi);
        if old_wr == 1 {
            if a.interactive {
                qm.service_from_wr = 0;
                qm.wr_coeff = WR_COEFF;
                qm.wr_cur_max_time = dur;
            } else {
                qm.wr_start_at_switch_to_srt = None;
                qm.wr_coeff = WR_COEFF * SOFTRT_WEIGHT_FACTOR;
                qm.wr_cur_max_time = WR_RT_MAX_TIME;
            }
            qm.last_wr_start_finish = now;
            qm.budget = qm.budget.min(2 * min_budget).max(charge);
        } else if old_wr > 1 {
            if a.interactive {
                qm.wr_coeff = WR_COEFF;
                qm.wr_cur_max_time = dur;
            } else if a.soft_rt {
                if qm.wr_cur_max_time != WR_RT_MAX_TIME {
                    qm.wr_start_at_switch_to_srt = Some(qm.last_wr_start_finish);
                    qm.wr_cur_max_time = WR_RT_MAX_TIME;
                    qm.wr_coeff = WR_COEFF * SOFTRT_WEIGHT_FACTOR;
                }
                qm.last_wr_start_finish = now;
            }
        }
    }

    pub(super) fn end_wr(&mut self, qi: u32, now: Nanos) {
        let ow = self.q(qi).orig_weight;
        if self.q(qi).busy && self.q(qi).wr_coeff > 1 {
            self.s.wr_busy_queues = self.s.wr_busy_queues.saturating_sub(1);
        }
        let q = self.qm(qi);
        q.wr_coeff = 1;
        q.wr_cur_max_time = 0;
        q.last_wr_start_finish = now;
        self.set_weight(qi, ow);
    }

    pub(super) fn is_srt(&self, qi: u32) -> bool {
        self.q(qi).wr_coeff > 1 && self.q(qi).wr_cur_max_time == WR_RT_MAX_TIME
    }

    /// `bfq_update_wr_data`, at each dispatch from the in-service queue.
    #[inline]
    pub(super) fn update_wr_data(&mut self, qi: u32, now: Nanos) {
        if self.q(qi).wr_coeff <= 1 {
            return;
        }
        let q = self.q(qi);
        let (last_wr, srt_switch, ow) = (
            q.last_wr_start_finish,
            q.wr_start_at_switch_to_srt,
            q.orig_weight,
        );
        if q.in_large_burst {
            // Raised before the burst it belongs to turned out large.
            self.end_wr(qi, now);
        } else if now > last_wr.saturating_add(q.wr_cur_max_time) {
            let srt_over = srt_switch
                .map(|t| now > t.saturating_add(self.s.wr_duration()))
                .unwrap_or(true);
            if !self.is_srt(qi) || srt_over {
                self.end_wr(qi, now);
            } else {
                // Back from soft real-time to interactive raising.
                let dur = self.s.wr_duration();
                let qm = self.qm(qi);
                qm.wr_coeff = WR_COEFF;
                qm.wr_cur_max_time = dur;
                qm.last_wr_start_finish = srt_switch.unwrap_or(0);
                self.set_weight(qi, ow * WR_COEFF);
            }
        }
        if self.q(qi).wr_coeff > 1
            && !self.is_srt(qi)
            && self.q(qi).service_from_wr > MAX_SERVICE_FROM_WR
        {
            // Greedy: large consumption while raised.
            self.end_wr(qi, now);
        }
    }

    /// `bfq_bfqq_softrt_next_start`.
    pub(super) fn softrt_next_start(&self, qi: u32, now: Nanos) -> Nanos {
        let q = self.q(qi);
        let by_rate = q.last_idle_bklogged.saturating_add(
            NSEC_PER_SEC.saturating_mul(q.service_from_backlogged) / WR_MAX_SOFTRT_RATE,
        );
        let by_idle = now
            .saturating_add(self.s.slice_idle)
            .saturating_add(4 * NSEC_PER_MSEC);
        q.soft_rt_next_start.max(by_rate).max(by_idle)
    }
}
