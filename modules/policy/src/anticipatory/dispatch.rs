// SPDX-License-Identifier: GPL-2.0

//! Which sorted request AS dispatches (C's `as_dispatch_request()`):
//! batches, their expiry and change of direction, FIFO expiry, and a
//! request's way out (C's `as_move_to_dispatch()`).

use super::{
    time_after, time_distance, AnticStatus, Anticipatory, ContextSlot, Dispatch, Nanos, Slot,
    State, Tag, ASYNC, NIL, SYNC,
};

/// What the choice of a request ends in.
enum Pick {
    /// This request, unless the FIFO head of the batch's direction expired.
    Request(u32),
    /// The FIFO head of the batch's direction, which expired.
    Expired,
}

impl<R, C> Anticipatory<R, C>
where
    R: AsRef<[Slot]> + AsMut<[Slot]>,
    C: AsRef<[ContextSlot]> + AsMut<[ContextSlot]>,
{
    /// A request inserted at head goes out, outside AS's accounting.
    pub(super) fn start_at_head(&mut self, x: u32) -> Dispatch {
        self.at_head.remove(self.storage.as_mut(), x);
        self.queued = self.queued.saturating_sub(1);
        self.at_mut(x).state = State::Dispatched;
        Dispatch::Request(x as Tag)
    }

    /// C's `as_dispatch_request()` without `force`.
    pub(super) fn dispatch_sorted(&mut self, now: Nanos) -> Dispatch {
        let reads = self.fifos[SYNC].head != NIL;
        let writes = self.fifos[ASYNC].head != NIL;
        // The async batch went idle: it cannot be timed.
        if self.batch_dir == ASYNC && !reads && (self.current_write_count == 0 || !writes) {
            self.write_batch_idled = true;
        }
        if !(reads || writes) {
            return Dispatch::Empty;
        }
        match self.status {
            AnticStatus::WaitRequest => return Dispatch::Empty,
            AnticStatus::WaitNext => return Dispatch::IdleUntil(self.antic_deadline),
            AnticStatus::Off | AnticStatus::Finished => {}
        }
        if self.changed_batch {
            return Dispatch::Empty;
        }
        let pick = match self.pick(reads, writes, now) {
            Ok(pick) => pick,
            Err(wait) => return wait,
        };
        let dir = self.batch_dir;
        let x = match pick {
            Pick::Expired => self.fifos[dir].head,
            Pick::Request(_) if self.fifo_expired(dir, now) => self.fifos[dir].head,
            Pick::Request(x) => x,
        };
        if self.changed_batch {
            // The new batch starts once the old one's requests completed,
            // with its oldest request (C: with whatever elevator order
            // gives then).
            if self.nr_dispatched != 0 {
                self.fifo_start = true;
                return Dispatch::Empty;
            }
            if dir == ASYNC {
                self.current_batch_expires = now.wrapping_add(self.batch_expire[ASYNC]);
            } else {
                self.new_batch = true;
            }
            self.changed_batch = false;
        }
        self.move_to_dispatch(x);
        Dispatch::Request(x as Tag)
    }

    /// The request to dispatch, as the body of `as_dispatch_request()`
    /// chooses it; `Err` if it anticipates instead.
    fn pick(&mut self, reads: bool, writes: bool, now: Nanos) -> Result<Pick, Dispatch> {
        let fifo_start = core::mem::take(&mut self.fifo_start);
        if !(reads && writes && self.batch_expired(now)) {
            // The batch goes on, or only one direction has requests. A new
            // batch that had to wait for the old one starts with its FIFO
            // head.
            let rq = if fifo_start {
                self.fifos[self.batch_dir].head
            } else {
                self.next_rq[self.batch_dir]
            };
            if self.batch_dir == SYNC && self.antic_expire != 0 {
                if self.fifo_expired(SYNC, now) {
                    return Ok(Pick::Expired);
                }
                if self.can_anticipate(rq, now) {
                    return Err(self.antic_wait_request(now));
                }
            }
            if rq != NIL {
                if reads && !writes {
                    self.current_batch_expires = now.wrapping_add(self.batch_expire[SYNC]);
                }
                return Ok(Pick::Request(rq));
            }
        }
        // Not running a batch: choose a direction.
        if reads && !(writes && self.batch_dir == SYNC) {
            if self.batch_dir == ASYNC {
                self.changed_batch = true;
            }
            self.batch_dir = SYNC;
            self.last_check_fifo[SYNC] = now;
            return Ok(Pick::Request(self.fifos[SYNC].head));
        }
        // Writes: there are some, else `reads` held.
        if self.batch_dir == SYNC {
            self.changed_batch = true;
            // A sync batch that ran out of requests before its first one
            // completed: the write batch starts now.
            self.new_batch = false;
        }
        self.batch_dir = ASYNC;
        self.current_write_count = self.write_batch_count;
        self.write_batch_idled = false;
        self.last_check_fifo[ASYNC] = now;
        Ok(Pick::Request(self.fifos[ASYNC].head))
    }

    /// C's `as_batch_expired()`: whether the current batch has run its
    /// time (an async one also its count). Not while a new batch waits to
    /// start.
    fn batch_expired(&self, now: Nanos) -> bool {
        if self.changed_batch || self.new_batch {
            return false;
        }
        let late = time_after(now, self.current_batch_expires);
        if self.batch_dir == SYNC {
            late
        } else {
            late || self.current_write_count == 0
        }
    }

    /// C's `as_fifo_expired()`: whether the head of direction `dir`'s
    /// FIFO passed its deadline, looked at no more than once per
    /// expire interval.
    pub(super) fn fifo_expired(&mut self, dir: usize, now: Nanos) -> bool {
        if time_distance(now, self.last_check_fifo[dir]) < self.fifo_expire[dir] {
            return false;
        }
        self.last_check_fifo[dir] = now;
        let head = self.fifos[dir].head;
        head != NIL && time_after(now, self.at(head).fifo_time)
    }

    /// C's `as_move_to_dispatch()`: the sorted request `x` leaves for the
    /// device. Anticipation ends, the head will be at `x`'s end, and the
    /// process of a sync request is the one to anticipate next.
    pub(super) fn move_to_dispatch(&mut self, x: u32) {
        let s = *self.at(x);
        let dir = s.dir();
        self.antic_stop();
        self.status = AnticStatus::Off;
        self.last_sector[dir] = s.end();
        if dir == SYNC {
            self.set_io_context(s.context);
        } else {
            self.set_io_context(NIL);
            self.current_write_count = self.current_write_count.saturating_sub(1);
        }
        self.ioc_finished = false;
        self.next_rq[dir] = self.find_next_rq(x);
        self.remove_queued(x);
        let s = self.at_mut(x);
        s.state = State::Dispatched;
        s.counted = true;
        self.nr_dispatched = self.nr_dispatched.saturating_add(1);
    }

    /// A counted request goes back into the sort tree: it is no longer
    /// out, and counts as never dispatched.
    pub(super) fn uncount(&mut self, x: u32, now: Nanos) {
        let s = self.at_mut(x);
        if s.counted {
            s.counted = false;
            self.dispatched_done(now);
        }
    }

    /// C's `update_write_batch()`, at the first completion of a sync
    /// batch: the async batch before it took `write_time`; if it overran
    /// its time (and did not run out of requests), fewer requests next
    /// time; if it was quick and used its count up, more.
    pub(super) fn update_write_batch(&mut self, now: Nanos) {
        let batch = self.batch_expire[ASYNC];
        let write_time = (now.wrapping_sub(self.current_batch_expires) as i64)
            .saturating_add(batch as i64)
            .max(0) as Nanos;
        let count = &mut self.write_batch_count;
        if write_time > batch && !self.write_batch_idled {
            if write_time > batch.saturating_mul(3) {
                *count /= 2;
            } else {
                *count = count.saturating_sub(1);
            }
        } else if write_time < batch && self.current_write_count == 0 {
            if batch > write_time.saturating_mul(3) {
                *count = count.saturating_mul(2);
            } else {
                *count = count.saturating_add(1);
            }
        }
        *count = (*count).max(1);
    }
}
