// SPDX-License-Identifier: GPL-2.0

//! What AS knows of each process (C's `as_io_context`): think time and
//! seek distance as decaying means (C's `as_update_iohist()`,
//! `as_update_thinktime()`, `as_update_seekdist()`), whether it exited,
//! and the slots that hold them.

use super::{
    AnticStatus, Anticipatory, ContextSlot, IssuerId, Nanos, Sector, Slot, MAX_THINKTIME, NIL,
};

/// The cap on a seek distance sample, beyond four times the mean, while
/// the process has few samples (C: "second & third seek"), in sectors.
const SEEK_CAP_EARLY: Sector = 2 * 1024 * 1024;
/// The same afterwards.
const SEEK_CAP: Sector = 2 * 1024 * 64;
/// The sample weight up to which the early cap applies.
const SEEK_EARLY_SAMPLES: u32 = 60;

/// A decaying sum in 1/256 fixed point, one more sample in (C:
/// `(7 * total + 256 * sample) / 8`).
#[inline]
fn decay_total(total: u64, sample: u64) -> u64 {
    total
        .saturating_mul(7)
        .saturating_add(sample.saturating_mul(256))
        / 8
}

impl<R, C> Anticipatory<R, C>
where
    R: AsRef<[Slot]> + AsMut<[Slot]>,
    C: AsRef<[ContextSlot]> + AsMut<[ContextSlot]>,
{
    /// The slot of a context link; links always name valid slots.
    #[inline]
    pub(super) fn ctx(&self, c: u32) -> &ContextSlot {
        &self.contexts.as_ref()[c as usize]
    }

    #[inline]
    pub(super) fn ctx_mut(&mut self, c: u32) -> &mut ContextSlot {
        &mut self.contexts.as_mut()[c as usize]
    }

    /// The context slot of issuer `issuer`, or `NIL` for the shared last
    /// issuer and ids beyond it (requests of no process).
    #[inline]
    pub(super) fn context_of(&self, issuer: IssuerId) -> u32 {
        if issuer < self.issuers() - 1 {
            issuer as u32
        } else {
            NIL
        }
    }

    /// A fresh request of `issuer` arrives: its context (set up at its
    /// first request, C's `alloc_as_io_context()`), which now owns one
    /// more request, or `NIL`.
    pub(super) fn take_context(&mut self, issuer: IssuerId) -> u32 {
        let c = self.context_of(issuer);
        if c != NIL {
            let s = self.ctx_mut(c);
            if !s.used {
                *s = ContextSlot {
                    used: true,
                    running: true,
                    ..ContextSlot::default()
                };
            }
            s.owned = s.owned.saturating_add(1);
        }
        c
    }

    /// A request of context `c` (or `NIL`) is gone: completed or merged
    /// away.
    pub(super) fn release_request(&mut self, c: u32) {
        if c == NIL {
            return;
        }
        let s = self.ctx_mut(c);
        s.owned = s.owned.saturating_sub(1);
        self.maybe_release(c);
    }

    /// Frees context `c` once its process exited and nothing refers to it:
    /// no request, and it is not the one anticipated on (C frees the
    /// `as_io_context` with the `io_context`'s last reference).
    fn maybe_release(&mut self, c: u32) {
        if c == NIL || c == self.io_context {
            return;
        }
        let s = self.ctx_mut(c);
        if s.used && !s.running && s.owned == 0 {
            *s = ContextSlot::default();
        }
    }

    /// The process to anticipate on becomes `c` (C's
    /// `copy_io_context()`); the old one may be freed.
    pub(super) fn set_io_context(&mut self, c: u32) {
        let old = core::mem::replace(&mut self.io_context, c);
        if old != c {
            self.maybe_release(old);
        }
    }

    /// C's `as_put_io_context()`: a sync request of context `c` is done
    /// (completed, or merged away) at `now`.
    pub(super) fn put_context(&mut self, c: u32, sync: bool, now: Nanos) {
        if c == NIL || !sync {
            return;
        }
        let s = self.ctx_mut(c);
        s.io_running = true;
        s.last_end_request = now;
    }

    /// Whether issuer `issuer` holds no process: never used, or freed
    /// after its process exited. The shared last issuer never is.
    pub fn issuer_is_free(&self, issuer: IssuerId) -> bool {
        let c = self.context_of(issuer);
        c != NIL && !self.ctx(c).used
    }

    /// Issuer `issuer`'s process exited (C's `exit_as_io_context()`): it
    /// will send no more requests. Its slot is freed once nothing refers
    /// to it ([`Anticipatory::issuer_is_free`]). A wait for it goes on
    /// until the next decision, as in C: a close request of another
    /// process may still be worth it.
    pub fn issuer_exit(&mut self, issuer: IssuerId, now: Nanos) {
        let c = self.context_of(issuer);
        if c == NIL || !self.ctx(c).used {
            return;
        }
        self.note_time(now);
        self.tick(now);
        self.ctx_mut(c).running = false;
        self.maybe_release(c);
    }

    /// C's `as_update_iohist()`: the sync request `rq` arrives for context
    /// `c` (its own, or that of the anticipated process for a close
    /// request of another): a think time (from the last completion, if
    /// none of its requests is queued) and a seek distance (from where
    /// its last request ended) are sampled, from its second request on.
    pub(super) fn update_iohist(&mut self, c: u32, rq: u32, now: Nanos) {
        if c == NIL {
            return;
        }
        let (sector, end) = {
            let s = self.at(rq);
            (s.sector, s.end())
        };
        let s = *self.ctx(c);
        if s.io_running || s.io_started {
            // C also counts requests on the dispatch list not yet started
            // by the driver: none under blk-mq.
            let in_flight = s.queued;
            let ttime = if s.io_running && in_flight == 0 {
                now.wrapping_sub(s.last_end_request).min(MAX_THINKTIME - 1)
            } else {
                0
            };
            self.update_thinktime(c, ttime);
            self.update_seekdist(c, s.last_request_pos.abs_diff(sector));
        }
        let s = self.ctx_mut(c);
        s.last_request_pos = end;
        s.io_started = true;
    }

    /// C's `as_update_thinktime()`.
    fn update_thinktime(&mut self, c: u32, ttime: Nanos) {
        if self.ctx(c).ttime_samples == 0 {
            self.new_ttime_total = decay_total(self.new_ttime_total, ttime);
            self.new_ttime_mean = self.new_ttime_total / 256;
            self.exit_prob = (7 * self.exit_prob.min(256)) / 8;
        }
        let s = self.ctx_mut(c);
        s.ttime_samples = (7 * s.ttime_samples.min(256) + 256) / 8;
        s.ttime_total = decay_total(s.ttime_total, ttime);
        s.ttime_mean = s.ttime_total.saturating_add(128) / u64::from(s.ttime_samples);
    }

    /// C's `as_update_seekdist()`: the sample is capped near four times
    /// the mean, so that an odd far seek does not make the mean.
    fn update_seekdist(&mut self, c: u32, sdist: Sector) {
        if self.ctx(c).seek_samples == 0 {
            self.new_seek_total = decay_total(self.new_seek_total, sdist);
            self.new_seek_mean = self.new_seek_total / 256;
        }
        let s = self.ctx_mut(c);
        let cap = if s.seek_samples <= SEEK_EARLY_SAMPLES {
            SEEK_CAP_EARLY
        } else {
            SEEK_CAP
        };
        let sdist = sdist.min(s.seek_mean.saturating_mul(4).saturating_add(cap));
        s.seek_samples = (7 * s.seek_samples.min(256) + 256) / 8;
        s.seek_total = decay_total(s.seek_total, sdist);
        let samples = u64::from(s.seek_samples);
        s.seek_mean = s.seek_total.saturating_add(samples / 2) / samples;
    }

    /// Whether the anticipated process is waited for.
    pub fn anticipating(&self) -> bool {
        matches!(
            self.status,
            AnticStatus::WaitRequest | AnticStatus::WaitNext
        )
    }
}
