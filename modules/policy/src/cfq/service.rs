// SPDX-License-Identifier: GPL-2.0

//! Service trees, workloads and slices: where a busy queue waits
//! (`cfq_service_tree_add`, `cfq_add_cfqq_rr`, `cfq_del_cfqq_rr`), which
//! class and workload type are served and for how long
//! (`choose_wl_class_and_type`, `cfq_choose_wl_type`, `cfq_choose_cfqg`),
//! and a queue's time slice (`cfq_prio_slice`, `cfq_scaled_cfqq_slice`,
//! `cfq_set_prio_slice`, `cfq_slice_used`).

use super::super::intrusive::{self, Tree, RIGHT};
use super::{
    time_key, Ctx, Nanos, PrioClass, QueueSlot, ASYNC_WL, HIST_DIVISOR, IDLE_DELAY, IDLE_TREE,
    JIFFY, MIN_TT, NIL, NO_TREE, NSEC_PER_SEC, SLICE_SCALE, SYNC_NOIDLE_WL, SYNC_WL,
};

/// Class indexes (`PrioClass::index()`).
pub(super) const RT: usize = 0;
pub(super) const BE: usize = 1;
pub(super) const IDLE: usize = 2;

/// The service tree of class index `class` and workload type `wl`.
#[inline]
pub(super) const fn st_of(class: usize, wl: usize) -> usize {
    if class == IDLE {
        IDLE_TREE
    } else {
        class * 3 + wl
    }
}

/// `a * b / c` without 128-bit arithmetic (which the kernel does not
/// link): exact while `a * b` fits 64 bits, as it does for any slice or
/// latency up to 2^32 - 1 ms times a count of queues, and saturating
/// beyond. A zero `c` counts as 1.
fn mul_div(a: u64, b: u64, c: u64) -> u64 {
    let c = c.max(1);
    match a.checked_mul(b) {
        Some(p) => p / c,
        None => (a / c)
            .saturating_mul(b)
            .saturating_add((a % c).saturating_mul(b) / c),
    }
}

impl Ctx<'_> {
    // ----- the trees ------------------------------------------------------------

    #[inline]
    fn st_tree(&mut self, st: usize) -> Tree<'_, QueueSlot> {
        Tree {
            nodes: &mut *self.qs,
            root: &mut self.s.st_root[st],
        }
    }

    /// The first queue of service tree `st` (`cfq_rb_first`), or `NIL`.
    #[inline]
    pub(super) fn st_first(&self, st: usize) -> u32 {
        intrusive::tree_first(self.qs, self.s.st_root[st])
    }

    /// The last queue of service tree `st` (`rb_rightmost`), or `NIL`.
    fn st_last(&self, st: usize) -> u32 {
        let mut x = self.s.st_root[st];
        if x == NIL {
            return NIL;
        }
        while self.q(x).links.child[RIGHT] != NIL {
            x = self.q(x).links.child[RIGHT];
        }
        x
    }

    /// Takes queue `qi` off its service tree (`cfq_rb_erase`).
    fn st_erase(&mut self, qi: u32) {
        let st = self.q(qi).st;
        if st == NO_TREE {
            return;
        }
        self.st_tree(st as usize).remove(qi);
        self.s.st_count[st as usize] = self.s.st_count[st as usize].saturating_sub(1);
        self.qm(qi).st = NO_TREE;
    }

    /// The class index a queue is served in.
    #[inline]
    pub(super) fn class_of(&self, qi: u32) -> usize {
        self.q(qi).class.index()
    }

    /// `cfq_group_busy_queues_wl`: busy queues of a class.
    #[inline]
    pub(super) fn busy_in_class(&self, class: usize) -> u32 {
        if class == IDLE {
            return self.s.st_count[IDLE_TREE];
        }
        let c = &self.s.st_count;
        c[st_of(class, ASYNC_WL)] + c[st_of(class, SYNC_NOIDLE_WL)] + c[st_of(class, SYNC_WL)]
    }

    /// `cfqg_busy_async_queues`.
    #[inline]
    fn busy_async(&self) -> u32 {
        self.s.st_count[st_of(RT, ASYNC_WL)] + self.s.st_count[st_of(BE, ASYNC_WL)]
    }

    /// `cfq_slice_offset`: how far behind now a queue joins its tree,
    /// approximately: more for lower priorities and async queues, by the
    /// number of busy queues.
    fn slice_offset(&self, qi: u32) -> i64 {
        let q = self.q(qi);
        let best = self.prio_slice(true, 0) as i64;
        let own = self.prio_slice(q.sync, q.level) as i64;
        (i64::from(self.s.nr_cfqq) - 1).saturating_mul(best - own)
    }

    /// `cfq_service_tree_add`: puts queue `qi` on the service tree of its
    /// class and type, keyed by service time: an idle-class queue
    /// `CFQ_IDLE_DELAY` after the tree's last; another at now plus its
    /// offset less the slice it has left; with `add_front`, a second
    /// before the tree's first.
    pub(super) fn service_tree_add(&mut self, qi: u32, add_front: bool, now: Nanos) {
        let st = st_of(self.class_of(qi), self.q(qi).wl_type());
        let now_key = time_key(now);
        let key = if self.q(qi).class == PrioClass::Idle {
            let last = self.st_last(st);
            let base = if last != NIL && last != qi {
                self.q(last).rb_key
            } else {
                now_key
            };
            base.saturating_add(IDLE_DELAY)
        } else if !add_front {
            let key = now_key
                .saturating_add(self.slice_offset(qi))
                .saturating_sub(self.q(qi).slice_resid);
            self.qm(qi).slice_resid = 0;
            key
        } else {
            let first = self.st_first(st);
            let base = if first != NIL {
                self.q(first).rb_key
            } else {
                now_key
            };
            base.saturating_sub(NSEC_PER_SEC as i64)
        };
        let new = self.q(qi).st == NO_TREE;
        if !new {
            if key == self.q(qi).rb_key && self.q(qi).st as usize == st {
                return;
            }
            self.st_erase(qi);
        }
        self.qm(qi).rb_key = key;
        self.qm(qi).st = st as u8;
        let prio = self.s.next_rand();
        self.st_tree(st).insert(qi, prio);
        self.s.st_count[st] += 1;
        if add_front || !new {
            return;
        }
        // cfq_group_notify_queue_add
        self.s.nr_cfqq += 1;
    }

    /// `cfq_resort_rr_list`: a busy queue takes its place again.
    pub(super) fn resort_rr_list(&mut self, qi: u32, now: Nanos) {
        if self.q(qi).on_rr {
            self.service_tree_add(qi, false, now);
        }
    }

    /// `cfq_add_cfqq_rr`: queue `qi` becomes busy.
    pub(super) fn add_cfqq_rr(&mut self, qi: u32, now: Nanos) {
        self.qm(qi).on_rr = true;
        self.s.busy_queues += 1;
        if self.q(qi).sync {
            self.s.busy_sync_queues += 1;
        }
        self.resort_rr_list(qi, now);
    }

    /// `cfq_del_cfqq_rr`: queue `qi`, empty, is no longer busy.
    pub(super) fn del_cfqq_rr(&mut self, qi: u32) {
        self.qm(qi).on_rr = false;
        if self.q(qi).st != NO_TREE {
            self.st_erase(qi);
            // cfq_group_notify_queue_del
            self.s.nr_cfqq = self.s.nr_cfqq.saturating_sub(1);
            if self.s.nr_cfqq == 0 {
                self.s.saved_wl_slice = 0;
            }
        }
        self.s.busy_queues = self.s.busy_queues.saturating_sub(1);
        if self.q(qi).sync {
            self.s.busy_sync_queues = self.s.busy_sync_queues.saturating_sub(1);
        }
    }

    // ----- slices -----------------------------------------------------------------

    /// `cfq_prio_slice`: the base slice of a sync or async queue, a fifth
    /// of it more per level above 4 and less per level below.
    pub(super) fn prio_slice(&self, sync: bool, level: u8) -> Nanos {
        let base = self.s.slice[usize::from(sync)];
        let step = base / SLICE_SCALE;
        let level = u64::from(level.min(7));
        if level <= 4 {
            base.saturating_add(step.saturating_mul(4 - level))
        } else {
            base.saturating_sub(step.saturating_mul(level - 4))
        }
    }

    /// `cfq_group_get_avg_queues`: the group's busy real-time (`rt`) or
    /// best-effort queues, averaged to follow increases fast and decreases
    /// slowly; updates the average.
    fn avg_queues(&mut self, rt: bool) -> u32 {
        let (class, i) = if rt { (RT, 0) } else { (BE, 1) };
        let busy = self.busy_in_class(class);
        let avg = self.s.busy_queues_avg[i];
        let (min_q, max_q) = (avg.min(busy), avg.max(busy));
        let mult = HIST_DIVISOR - 1;
        let round = HIST_DIVISOR / 2;
        self.s.busy_queues_avg[i] = (mult
            .saturating_mul(max_q)
            .saturating_add(min_q)
            .saturating_add(round))
            / HIST_DIVISOR;
        self.s.busy_queues_avg[i]
    }

    /// `cfq_scaled_cfqq_slice`: queue `qi`'s slice; with `low_latency`, cut
    /// so that the class's busy queues fit into `target_latency`, to no
    /// less than its share of `2 * slice_idle`.
    pub(super) fn scaled_slice(&mut self, qi: u32) -> Nanos {
        let (sync, level, rt) = {
            let q = self.q(qi);
            (q.sync, q.level, q.class == PrioClass::RealTime)
        };
        let mut slice = self.prio_slice(sync, level);
        if self.s.low_latency {
            let iq = u64::from(self.avg_queues(rt));
            let sync_slice = self.s.slice[1];
            let expect_latency = sync_slice.saturating_mul(iq);
            let group_slice = self.s.target_latency;
            if expect_latency > group_slice {
                let base_low_slice = self.s.slice_idle.saturating_mul(2);
                let low_slice = mul_div(base_low_slice, slice, sync_slice).min(slice);
                let scaled = mul_div(slice, group_slice, expect_latency);
                slice = scaled.max(low_slice);
            }
        }
        slice
    }

    /// `cfq_set_prio_slice`: the slice of queue `qi` starts now.
    pub(super) fn set_prio_slice(&mut self, qi: u32, now: Nanos) {
        let slice = self.scaled_slice(qi);
        let q = self.qm(qi);
        q.slice_start = now;
        q.slice_end = now.saturating_add(slice);
        q.allocated_slice = slice;
    }

    /// `cfq_slice_used`: whether queue `qi`'s slice, once started, ended.
    #[inline]
    pub(super) fn slice_used(&self, qi: u32, now: Nanos) -> bool {
        let q = self.q(qi);
        !q.slice_new && now >= q.slice_end
    }

    // ----- workloads ----------------------------------------------------------------

    /// `cfq_choose_wl_type`: of a class's workload types, the one whose
    /// first queue has the lowest key (sync-noidle if none has a queue).
    fn choose_wl_type(&self, class: usize) -> usize {
        let mut best = SYNC_NOIDLE_WL;
        let mut lowest: Option<i64> = None;
        for wl in [ASYNC_WL, SYNC_NOIDLE_WL, SYNC_WL] {
            let q = self.st_first(st_of(class, wl));
            if q == NIL {
                continue;
            }
            let key = self.q(q).rb_key;
            if let Some(k) = lowest {
                if key >= k {
                    continue;
                }
            }
            lowest = Some(key);
            best = wl;
        }
        best
    }

    /// `choose_wl_class_and_type`: the highest class with busy queues; in
    /// it, the workload type served goes on while its slice lasts and its
    /// tree has queues, else the next type starts with a slice that is its
    /// queues' share of `target_latency`.
    fn choose_wl_class_and_type(&mut self, now: Nanos) {
        let original = self.s.serving_class;
        let now_key = time_key(now);
        self.s.serving_class = if self.busy_in_class(RT) > 0 {
            RT
        } else if self.busy_in_class(BE) > 0 {
            BE
        } else {
            self.s.workload_expires = now_key.saturating_add(JIFFY as i64);
            IDLE
        };
        let class = self.s.serving_class;
        if class == IDLE {
            return;
        }
        if original == class {
            let count = self.s.st_count[st_of(class, self.s.serving_type)];
            if count > 0 && now_key <= self.s.workload_expires {
                return;
            }
        }
        let wl = self.choose_wl_type(class);
        self.s.serving_type = wl;
        let count = u64::from(self.s.st_count[st_of(class, wl)]);
        let avg = self.s.busy_queues_avg[if class == RT { 0 } else { 1 }];
        let busy = u64::from(avg.max(self.busy_in_class(class)).max(1));
        let group_slice = self.s.target_latency;
        let mut slice = mul_div(group_slice, count, busy);
        if wl == ASYNC_WL {
            // Async queues are device-wide: their share of all busy queues.
            let tmp = mul_div(
                self.s.target_latency,
                u64::from(self.busy_async()),
                u64::from(self.s.busy_queues),
            );
            slice = slice.min(tmp);
            slice = mul_div(slice, self.s.slice[0], self.s.slice[1]);
        } else {
            slice = slice.max(self.s.slice_idle.saturating_mul(2));
        }
        slice = slice.max(MIN_TT);
        self.s.workload_expires = now_key.saturating_add(slice.min(i64::MAX as u64) as i64);
    }

    /// `cfq_choose_cfqg` for the one group: the workload saved when its
    /// last queue expired goes on, else a new one is chosen.
    pub(super) fn choose_cfqg(&mut self, now: Nanos) {
        let now_key = time_key(now);
        if self.s.saved_wl_slice > 0 {
            self.s.workload_expires =
                now_key.saturating_add(self.s.saved_wl_slice.min(i64::MAX as u64) as i64);
            self.s.serving_type = self.s.saved_type;
            self.s.serving_class = self.s.saved_class;
        } else {
            self.s.workload_expires = now_key.saturating_sub(1);
        }
        self.choose_wl_class_and_type(now);
    }

    /// What `cfq_group_served` keeps of a queue's expiry with one group:
    /// the rest of the workload slice, its type and class.
    pub(super) fn save_workload(&mut self, now: Nanos) {
        let now_key = time_key(now);
        if self.s.workload_expires > now_key {
            self.s.saved_wl_slice = self.s.workload_expires.saturating_sub(now_key) as Nanos;
            self.s.saved_type = self.s.serving_type;
            self.s.saved_class = self.s.serving_class;
        } else {
            self.s.saved_wl_slice = 0;
        }
    }

    /// `cfq_get_next_queue`: the first queue of the tree served.
    pub(super) fn next_queue(&self) -> u32 {
        if self.s.rq_queued == 0 {
            return NIL;
        }
        self.st_first(st_of(self.s.serving_class, self.s.serving_type))
    }
}
