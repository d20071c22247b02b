// SPDX-License-Identifier: GPL-2.0

//! Which sorted request mq-deadline dispatches: `__dd_dispatch_request()`
//! for one priority level (batches in sector order, directions, FIFO
//! expiry) and `dd_dispatch_prio_aged_requests()`.

use super::{
    time_after, time_after_eq, Deadline, Nanos, PrioClass, Slot, DIRS, LEVELS, NIL, READ, WRITE,
};

impl<S> Deadline<S>
where
    S: AsRef<[Slot]> + AsMut<[Slot]>,
{
    /// C's `started_after()`.
    #[inline]
    fn started_after(&self, x: u32, latest_start: Nanos) -> bool {
        let s = self.at(x);
        let start = s.fifo_time.wrapping_sub(self.fifo_expire[s.op.dir()]);
        time_after(start, latest_start)
    }

    /// C's `__dd_dispatch_request()` for one level: the best request of
    /// that level that started no later than `latest_start`.
    pub(super) fn dispatch_level(
        &mut self,
        level: usize,
        latest_start: Nanos,
        now: Nanos,
    ) -> Option<u32> {
        // Callers pass a level below `LEVELS`, and `last_dir` is `READ` or
        // `WRITE`: the index does not wrap, and indexing checks it.
        let base = level.wrapping_mul(DIRS);
        // Batches are reads XOR writes: continue the current one.
        let rq = self.next_rq[base.wrapping_add(self.last_dir)];
        let rq = if rq != NIL && self.batching < self.fifo_batch {
            rq
        } else {
            // Not running a batch: choose a direction.
            let reads = self.fifos[base + READ].head != NIL;
            let writes = self.fifos[base + WRITE].head != NIL;
            let dir = if reads {
                let starved = self.starved;
                let starve = writes && {
                    self.starved = starved.wrapping_add(1);
                    starved >= self.writes_starved
                };
                if starve {
                    self.starved = 0;
                    WRITE
                } else {
                    READ
                }
            } else if writes {
                self.starved = 0;
                WRITE
            } else {
                return None;
            };
            let head = self.fifos[base + dir].head;
            let next = self.next_rq[base + dir];
            let expired = time_after_eq(now, self.at(head).fifo_time);
            let rq = if expired || next == NIL { head } else { next };
            self.last_dir = dir;
            self.batching = 0;
            rq
        };
        if self.started_after(rq, latest_start) {
            return None;
        }
        self.batching = self.batching.wrapping_add(1);
        Some(rq)
    }

    /// C's `dd_dispatch_prio_aged_requests()`.
    #[inline]
    pub(super) fn dispatch_aged(&mut self, now: Nanos) -> Option<u32> {
        // Aging needs two levels owning requests: none but the best-effort
        // one (nearly always) is told by one look at the other two.
        let be = PrioClass::BestEffort.index();
        if self
            .owned
            .iter()
            .enumerate()
            .all(|(level, &n)| level == be || n == 0)
        {
            return None;
        }
        let levels = self.owned.iter().filter(|&&n| n != 0).count();
        if levels < 2 {
            return None;
        }
        let latest_start = now.wrapping_sub(self.prio_aging_expire);
        (PrioClass::BestEffort.index()..LEVELS)
            .find_map(|level| self.dispatch_level(level, latest_start, now))
    }
}
