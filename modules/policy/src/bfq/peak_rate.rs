// SPDX-License-Identifier: GPL-2.0

//! The device's peak rate, measured at dispatches as `bfq_update_peak_rate`
//! does; it sizes the maximum budget and the weight-raising duration.

use super::idle::{MIN_TT, SECT_THR_NONROT, SEEK_THR};
use super::{Ctx, Nanos, Sector, State, NSEC_PER_MSEC, NSEC_PER_SEC, NSEC_PER_USEC};

/// `BFQ_RATE_SHIFT`.
const RATE_SHIFT: u32 = 16;
/// `BFQ_RATE_MIN_SAMPLES`.
const RATE_MIN_SAMPLES: u32 = 32;
/// `BFQ_RATE_MIN_INTERVAL`.
const RATE_MIN_INTERVAL: Nanos = 300 * NSEC_PER_MSEC;
/// `BFQ_RATE_REF_INTERVAL`.
const RATE_REF_INTERVAL: Nanos = NSEC_PER_SEC;
/// `ref_rate[]`: reference peak rates (sectors/µs << 16), rotational and
/// non-rotational.
pub(super) const REF_RATE: [u64; 2] = [14000, 33000];
/// `ref_wr_duration[]` in milliseconds.
pub(super) const REF_WR_DURATION_MS: [u64; 2] = [7000, 2500];

impl State {
    /// `bfq_calc_max_budget`.
    pub(super) fn calc_max_budget(&self) -> u64 {
        (self
            .peak_rate
            .saturating_mul(1000)
            .saturating_mul(self.timeout_ms())
            >> RATE_SHIFT)
            .max(1)
    }
}

impl Ctx<'_> {
    fn reset_rate_computation(&mut self, rq: Option<(Sector, u32)>, now: Nanos) {
        if let Some((_, sectors)) = rq {
            self.s.last_dispatch = now;
            self.s.first_dispatch = now;
            self.s.peak_rate_samples = 1;
            self.s.sequential_samples = 0;
            self.s.tot_sectors_dispatched = u64::from(sectors);
            self.s.last_rq_max_size = u64::from(sectors);
        } else {
            self.s.peak_rate_samples = 0;
        }
    }

    /// `bfq_update_rate_reset`.
    fn update_rate_reset(&mut self, rq: Option<(Sector, u32)>, now: Nanos) {
        let s = &mut *self.s;
        if s.peak_rate_samples >= RATE_MIN_SAMPLES && s.delta_from_first >= RATE_MIN_INTERVAL {
            s.delta_from_first = s
                .delta_from_first
                .max(s.last_completion.saturating_sub(s.first_dispatch));
            let us = (s.delta_from_first / NSEC_PER_USEC).max(1);
            let mut rate = (s.tot_sectors_dispatched.min(1 << 40) << RATE_SHIFT) / us;
            let samples = u64::from(s.peak_rate_samples.max(1));
            let seq = u64::from(s.sequential_samples);
            let accept =
                !((seq < (3 * samples) >> 2 && rate <= s.peak_rate) || rate > 20 << RATE_SHIFT);
            if accept {
                let w = (9 * seq) / samples;
                let w = 8u64.min(w.saturating_mul(s.delta_from_first) / RATE_REF_INTERVAL);
                let divisor = 10 - w;
                s.peak_rate = s.peak_rate * (divisor - 1) / divisor;
                rate /= divisor;
                s.peak_rate = (s.peak_rate + rate).max(1);
                if s.user_max_budget == 0 {
                    s.max_budget = s.calc_max_budget();
                }
            }
        }
        self.reset_rate_computation(rq, now);
    }

    /// `bfq_update_peak_rate`, at each dispatch.
    #[inline]
    pub(super) fn update_peak_rate(&mut self, sector: Sector, sectors: u32, now: Nanos) {
        let rq = Some((sector, sectors));
        if self.s.peak_rate_samples == 0 {
            self.reset_rate_computation(rq, now);
        } else {
            let mut update = false;
            if now.saturating_sub(self.s.last_dispatch) > 100 * NSEC_PER_MSEC
                && self.s.in_driver == 0
            {
                update = true;
            } else {
                let s = &mut *self.s;
                s.peak_rate_samples = s.peak_rate_samples.saturating_add(1);
                let dist = sector.abs_diff(s.last_position);
                let seeky = dist > SEEK_THR && (!s.nonrot || sectors < SECT_THR_NONROT);
                if (s.in_driver > 0 || now.saturating_sub(s.last_completion) < MIN_TT) && !seeky {
                    s.sequential_samples = s.sequential_samples.saturating_add(1);
                }
                s.tot_sectors_dispatched =
                    s.tot_sectors_dispatched.saturating_add(u64::from(sectors));
                if s.peak_rate_samples & 31 != 0 {
                    s.last_rq_max_size = s.last_rq_max_size.max(u64::from(sectors));
                } else {
                    s.last_rq_max_size = u64::from(sectors);
                }
                s.delta_from_first = now.saturating_sub(s.first_dispatch);
                if s.delta_from_first >= RATE_REF_INTERVAL {
                    update = true;
                }
            }
            if update {
                self.update_rate_reset(rq, now);
            }
        }
        self.s.last_position = sector.saturating_add(u64::from(sectors));
        self.s.last_dispatch = now;
    }

    /// At a completion: one that follows the previous one after a pause
    /// too long for the largest request of the sample to explain ends the
    /// sample (part of `bfq_completed_request`).
    #[inline]
    pub(super) fn rate_at_completion(&mut self, now: Nanos) {
        let delta_us = now.saturating_sub(self.s.last_completion) / NSEC_PER_USEC;
        if delta_us > MIN_TT / NSEC_PER_USEC
            && (self.s.last_rq_max_size.min(1 << 40) << RATE_SHIFT) / delta_us
                < 1 << (RATE_SHIFT - 10)
        {
            self.update_rate_reset(None, now);
        }
        self.s.last_completion = now;
    }
}
