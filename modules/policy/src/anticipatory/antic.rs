// SPDX-License-Identifier: GPL-2.0

//! Anticipation: whether to wait for the process whose sync request went
//! out last (C's `as_can_anticipate()`, `as_can_break_anticipation()`,
//! `as_close_req()`), the wait's states and its end (C's
//! `as_antic_waitreq()`, `as_antic_waitnext()`, `as_antic_stop()`,
//! `as_antic_timeout()`), and completions (C's `as_completed_request()`).

use super::{
    time_after_eq, time_distance, AnticStatus, Anticipatory, ContextSlot, Dispatch, Nanos, Sector,
    Slot, NIL, NSEC_PER_MSEC, SYNC,
};

/// The close window at the start of a wait, in sectors ahead of the head
/// (half of it behind).
const CLOSE_WINDOW: Sector = 8192;
/// The longest wait, in ms, over which the close window keeps doubling
/// (C: `20 * HZ / 1000` jiffies).
const CLOSE_WINDOW_MAX_MS: u64 = 20;

/// `x` moved a 1/256 probability towards one (`up`) or zero, by 1/8 of the
/// way (C: `(7 * p + 256) / 8` and `(7 * p) / 8`).
#[inline]
fn decay(p: u32, up: bool) -> u32 {
    (7 * p.min(256) + if up { 256 } else { 0 }) / 8
}

/// What the caller must do after completions ([`Anticipatory::after_completion`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AfterCompletion {
    /// Nothing: no request waits, or a dispatch is on its way anyway.
    Nothing,
    /// Run the queue at this time, the end of the wait for the
    /// anticipated process (C's `antic_timer`), unless a request comes
    /// first.
    RunAt(Nanos),
    /// Run the queue now: a new batch may start (C's
    /// `kblockd_schedule_work()` in `as_completed_request()`).
    RunNow,
}

impl<R, C> Anticipatory<R, C>
where
    R: AsRef<[Slot]> + AsMut<[Slot]>,
    C: AsRef<[ContextSlot]> + AsMut<[ContextSlot]>,
{
    /// The end of the wait for the anticipated process, while it is timed
    /// ([`AnticStatus::WaitNext`]).
    pub fn idling_until(&self) -> Option<Nanos> {
        (self.status == AnticStatus::WaitNext).then_some(self.antic_deadline)
    }

    /// What the caller, who runs the queue, must do after
    /// [`Policy::completed`](super::Policy::completed): arm its timer for
    /// the end of a wait that a completion started or that goes on, or
    /// run the queue when a completion let a new batch start. Only while
    /// requests wait.
    pub fn after_completion(&mut self) -> AfterCompletion {
        let kick = core::mem::take(&mut self.kick);
        if self.queued == 0 {
            return AfterCompletion::Nothing;
        }
        if let Some(until) = self.idling_until() {
            return AfterCompletion::RunAt(until);
        }
        if kick {
            AfterCompletion::RunNow
        } else {
            AfterCompletion::Nothing
        }
    }

    /// The wait's timer fires if its time came (C's `as_antic_timeout()`,
    /// run by the first call at or after it): the wait is over, and if
    /// the process had no history yet, or had exited, that counts against
    /// waiting for such processes.
    pub(super) fn tick(&mut self, now: Nanos) {
        if self.status != AnticStatus::WaitNext || !time_after_eq(now, self.antic_deadline) {
            return;
        }
        self.status = AnticStatus::Finished;
        if self.io_context == NIL {
            return;
        }
        let c = *self.ctx(self.io_context);
        if c.ttime_samples == 0 {
            // The process anticipated on exited or timed out.
            self.exit_prob = decay(self.exit_prob, true);
        }
        if !c.running {
            // An exited process not "saved" by a cooperating request.
            self.exit_no_coop = decay(self.exit_no_coop, true);
        }
    }

    /// C's `as_antic_stop()`: a wait in progress is over (the caller
    /// runs the queue: the insertion that broke it, or the dispatch).
    pub(super) fn antic_stop(&mut self) {
        if matches!(
            self.status,
            AnticStatus::WaitRequest | AnticStatus::WaitNext
        ) {
            self.status = AnticStatus::Finished;
        }
    }

    /// C's `as_antic_waitnext()`: the timed wait starts, `antic_expire`
    /// from the completion of the process's request.
    fn antic_wait_next(&mut self) {
        self.antic_deadline = self.antic_start.wrapping_add(self.antic_expire);
        self.status = AnticStatus::WaitNext;
    }

    /// C's `as_antic_waitreq()`: the wait starts, timed if the process's
    /// request already completed. What dispatch answers meanwhile.
    pub(super) fn antic_wait_request(&mut self, now: Nanos) -> Dispatch {
        if self.status == AnticStatus::Off {
            if self.io_context == NIL || self.ioc_finished {
                self.antic_wait_next();
            } else if self.ctx(self.io_context).owned <= self.ctx(self.io_context).queued {
                // None of the process's requests is out: its last one went
                // back into the sort tree after a requeue and was merged
                // away, and no completion will come. The wait is timed
                // from now.
                self.antic_start = now;
                self.ioc_finished = true;
                self.antic_wait_next();
            } else {
                self.status = AnticStatus::WaitRequest;
            }
        }
        match self.status {
            AnticStatus::WaitNext if time_after_eq(now, self.antic_deadline) => {
                // Already over (the completion was that long ago): the
                // timer would fire at once. Wait no more.
                self.tick(now);
                self.dispatch_sorted(now)
            }
            AnticStatus::WaitNext => Dispatch::IdleUntil(self.antic_deadline),
            _ => Dispatch::Empty,
        }
    }

    /// C's `as_can_anticipate()`: whether to wait for the anticipated
    /// process rather than dispatch `rq` (the next request in elevator
    /// order, or `NIL`).
    pub(super) fn can_anticipate(&mut self, rq: u32, now: Nanos) -> bool {
        // No process (the last request went out was async, or had none),
        // or a wait just ended: go on.
        self.io_context != NIL
            && self.status != AnticStatus::Finished
            && !self.can_break_anticipation(rq, now)
    }

    /// C's `as_can_break_anticipation()`: whether `rq` (a sorted request,
    /// or `NIL`) ends the wait for the anticipated process, or the process
    /// is not worth waiting for. May update the statistics, as C does.
    pub(super) fn can_break_anticipation(&mut self, rq: u32, now: Nanos) -> bool {
        let ioc = self.io_context;
        if ioc == NIL {
            return true;
        }
        if rq != NIL && self.at(rq).context == ioc {
            // The process's own request.
            return true;
        }
        if self.ioc_finished && time_distance(now, self.antic_start) >= self.antic_expire {
            // Waited long enough; the timer has not run yet.
            return true;
        }
        let c = *self.ctx(ioc);
        if c.queued > 0 {
            // It has more requests queued (C also checks those on the
            // dispatch list, which blk-mq has none of).
            return true;
        }
        if rq != NIL && self.at(rq).dir() == SYNC && self.close_req(&c, rq, now) {
            // A close request of another process: it counts as the
            // anticipated process's, for its history too.
            if !c.running {
                if c.ttime_samples == 0 {
                    self.exit_prob = decay(self.exit_prob, true);
                }
                self.exit_no_coop = decay(self.exit_no_coop, false);
            }
            self.update_iohist(ioc, rq, now);
            return true;
        }
        if !c.running {
            // The process exited.
            if c.ttime_samples == 0 {
                self.exit_prob = decay(self.exit_prob, true);
            }
            if self.exit_no_coop > 128 {
                return true;
            }
        }
        if c.ttime_samples == 0 {
            // Nothing known of the process: judge it as new processes go.
            if self.new_ttime_mean > self.antic_expire {
                return true;
            }
            if self.exit_prob * self.exit_no_coop > 128 * 256 {
                return true;
            }
        } else if c.ttime_mean > self.antic_expire {
            // It thinks too long between requests.
            return true;
        }
        false
    }

    /// C's `as_close_req()`: whether `rq` is close to where the head is,
    /// for a process with the statistics `c`.
    fn close_req(&self, c: &ContextSlot, rq: u32, now: Nanos) -> bool {
        let last = self.last_sector[self.batch_dir];
        let next = self.at(rq).sector;
        let delay_ms = if self.status == AnticStatus::Off || !self.ioc_finished {
            0
        } else {
            now.wrapping_sub(self.antic_start) / NSEC_PER_MSEC
        };
        let delta = if delay_ms == 0 {
            CLOSE_WINDOW
        } else if delay_ms <= CLOSE_WINDOW_MAX_MS && delay_ms <= self.antic_expire / NSEC_PER_MSEC {
            CLOSE_WINDOW << delay_ms
        } else {
            // Waited that long: anything will do.
            return true;
        };
        if last <= next.saturating_add(delta >> 1) && next <= last.saturating_add(delta) {
            return true;
        }
        let distance = last.abs_diff(next);
        let mean = if c.seek_samples == 0 {
            // The process has just started: go by new processes.
            self.new_seek_mean
        } else {
            c.seek_mean
        };
        mean > distance
    }

    /// A request dispatched from the sort trees is no longer out (it
    /// completed, was merged away after a requeue, or went back into its
    /// tree): if it was the old batch's last one, the new batch starts.
    pub(super) fn dispatched_done(&mut self, now: Nanos) {
        if self.changed_batch && self.nr_dispatched == 1 {
            self.current_batch_expires = now.wrapping_add(self.batch_expire[self.batch_dir]);
            self.kick = true;
            self.changed_batch = false;
            if self.batch_dir == SYNC {
                self.new_batch = true;
            }
        }
        self.nr_dispatched = self.nr_dispatched.saturating_sub(1);
    }

    /// C's `as_completed_request()` for a request dispatched from the sort
    /// trees, `s` as it was.
    pub(super) fn completed_sorted(&mut self, s: &Slot, now: Nanos) {
        self.dispatched_done(now);
        // A sync batch's time starts at its first completion, which also
        // measures the async batch before it.
        if self.new_batch && self.batch_dir == s.dir() {
            self.update_write_batch(now);
            self.current_batch_expires = now.wrapping_add(self.batch_expire[SYNC]);
            self.new_batch = false;
        }
        if self.io_context != NIL && self.io_context == s.context {
            self.antic_start = now;
            self.ioc_finished = true;
            if self.status == AnticStatus::WaitRequest {
                // Waited on this request: now for the next one.
                self.antic_wait_next();
            }
        }
    }
}
