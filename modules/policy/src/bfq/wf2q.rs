// SPDX-License-Identifier: GPL-2.0

//! B-WF2Q+ over the queues' entities, as C BFQ's `bfq-wf2q.c`: each busy
//! queue carries a virtual start and finish time; per class, a queue is
//! eligible when its start is not after the class's virtual time, and the
//! eligible queue with the smallest finish time is served next. Here too:
//! the per-class service trees (two heaps per class, eligible queues by
//! finish time and the others by start time, in the issuer slots' heap
//! rows), charging service to the virtual time, weights and priorities,
//! and making queues busy and idle (`bfq_add_bfqq_busy`,
//! `bfq_del_bfqq_busy`).

use super::{ioprio_to_weight, Ctx, IoPrio, PrioClass, Queue, NIL};

/// Virtual time is service scaled by `1 << WFQ_SERVICE_SHIFT` over weight.
const WFQ_SERVICE_SHIFT: u32 = 22;
/// Largest service charged in one go (keeps shifts far from overflow).
const MAX_CHARGE: u64 = 1 << 40;
/// A remembered finish time this far ahead of the virtual time is stale.
const MAX_VTIME_AHEAD: u64 = 1 << 62;

/// `Queue::heap_id` of a queue in no service tree.
pub(super) const NO_HEAP: u8 = u8::MAX;
/// Service-tree heaps: two per class.
pub(super) const HEAPS: usize = PrioClass::COUNT * 2;
/// The first idle-tree heap: one per class after the service trees, of
/// the queues that went idle before the virtual time reached their finish
/// (C's idle trees), keyed by that finish.
pub(super) const IDLE_HEAP0: usize = HEAPS;
/// Every heap: the service trees, then the idle trees.
pub(super) const ALL_HEAPS: usize = HEAPS + PrioClass::COUNT;

/// Wrapping "a is after b" for virtual times (`bfq_gt`).
#[inline]
pub(super) fn vt_gt(a: u64, b: u64) -> bool {
    (a.wrapping_sub(b) as i64) > 0
}

/// The key of `q` in heap `h` (see [`Ctx::heap_key`]).
#[inline]
pub(super) fn heap_key(q: &Queue, h: usize) -> u64 {
    if h >= IDLE_HEAP0 {
        q.idle_finish
    } else if h & 1 == 0 {
        q.finish
    } else {
        q.start
    }
}

/// Virtual time needed to serve `service` sectors at `weight`.
#[inline]
fn vt_delta(service: u64, weight: u32) -> u64 {
    (service.min(MAX_CHARGE) << WFQ_SERVICE_SHIFT) / u64::from(weight.max(1))
}

impl Ctx<'_> {
    // ----- service-tree heaps -------------------------------------------------

    /// Heap `h` = class * 2 + kind; kind 0 holds eligible queues keyed by
    /// finish time, kind 1 not-yet-eligible queues keyed by start time.
    /// The idle trees ([`IDLE_HEAP0`] + class) are keyed by the finish the
    /// queue had when it went idle.
    #[inline]
    fn heap_key(&self, h: usize, qi: u32) -> u64 {
        heap_key(self.q(qi), h)
    }

    #[inline]
    fn heap_less(&self, h: usize, a: u32, b: u32) -> bool {
        let (ka, kb) = (self.heap_key(h, a), self.heap_key(h, b));
        if ka == kb {
            a < b
        } else {
            vt_gt(kb, ka)
        }
    }

    #[inline]
    pub(super) fn heap_at(&self, h: usize, pos: u32) -> u32 {
        self.qs[pos as usize].heap[h]
    }

    #[inline]
    fn heap_set(&mut self, h: usize, pos: u32, qi: u32) {
        self.qs[pos as usize].heap[h] = qi;
        let q = self.qm(qi);
        q.heap_id = h as u8;
        q.heap_pos = pos;
    }

    #[inline]
    fn sift_up(&mut self, h: usize, mut pos: u32) {
        let x = self.heap_at(h, pos);
        while pos > 0 {
            let pp = (pos - 1) / 2;
            let p = self.heap_at(h, pp);
            if !self.heap_less(h, x, p) {
                break;
            }
            self.heap_set(h, pos, p);
            pos = pp;
        }
        self.heap_set(h, pos, x);
    }

    #[inline]
    fn sift_down(&mut self, h: usize, mut pos: u32) {
        let len = self.s.heap_len[h];
        let x = self.heap_at(h, pos);
        loop {
            let l = pos.saturating_mul(2).saturating_add(1);
            if l >= len {
                break;
            }
            let mut c = l;
            if l + 1 < len && self.heap_less(h, self.heap_at(h, l + 1), self.heap_at(h, l)) {
                c = l + 1;
            }
            let cq = self.heap_at(h, c);
            if !self.heap_less(h, cq, x) {
                break;
            }
            self.heap_set(h, pos, cq);
            pos = c;
        }
        self.heap_set(h, pos, x);
    }

    #[inline]
    fn heap_push(&mut self, h: usize, qi: u32) {
        let pos = self.s.heap_len[h];
        if pos as usize >= self.qs.len() {
            return; // cannot happen: a queue is in at most one heap
        }
        self.s.heap_len[h] += 1;
        self.heap_set(h, pos, qi);
        // Into an empty heap (with a few queues, the usual case) there is
        // nothing to sift past.
        if pos > 0 {
            self.sift_up(h, pos);
        }
    }

    #[inline(always)]
    fn heap_remove(&mut self, qi: u32) {
        let h = self.q(qi).heap_id;
        if h != NO_HEAP {
            self.heap_remove_from(qi, h as usize);
        }
    }

    /// [`Ctx::heap_remove`] for a queue in heap `h`.
    fn heap_remove_from(&mut self, qi: u32, h: usize) {
        let pos = self.q(qi).heap_pos;
        let len = self.s.heap_len[h];
        self.qm(qi).heap_id = NO_HEAP;
        if len == 0 || pos >= len || self.heap_at(h, pos) != qi {
            return;
        }
        let last = len - 1;
        self.s.heap_len[h] = last;
        // The last entry (with a few queues, usually the only one) leaves
        // no hole to fill.
        if pos != last {
            self.heap_refill(h, pos, last);
        }
        self.qs[last as usize].heap[h] = NIL;
    }

    /// Moves the last entry of heap `h` into the hole at `pos`.
    #[inline(never)]
    fn heap_refill(&mut self, h: usize, pos: u32, last: u32) {
        let y = self.heap_at(h, last);
        self.heap_set(h, pos, y);
        self.sift_down(h, pos);
        let p2 = self.q(y).heap_pos;
        self.sift_up(h, p2);
    }

    /// Puts a busy, not in-service queue into its class's service tree.
    #[inline]
    fn enqueue_entity(&mut self, qi: u32) {
        let c = self.q(qi).class.index();
        let eligible = !vt_gt(self.q(qi).start, self.s.vtime[c]);
        self.heap_push(c * 2 + usize::from(!eligible), qi);
    }

    /// B-WF2Q+ selection in class `c`: jump the virtual time if nothing is
    /// eligible, then take the eligible queue with the smallest finish.
    #[inline]
    fn pick_in_class(&mut self, c: usize) -> u32 {
        let (eh, ih) = (c * 2, c * 2 + 1);
        if self.s.heap_len[eh] == 0 && self.s.heap_len[ih] > 0 {
            let min_start = self.q(self.heap_at(ih, 0)).start;
            if vt_gt(min_start, self.s.vtime[c]) {
                self.s.vtime[c] = min_start;
                self.forget_idle(c);
            }
        }
        while self.s.heap_len[ih] > 0 {
            let top = self.heap_at(ih, 0);
            if vt_gt(self.q(top).start, self.s.vtime[c]) {
                break;
            }
            self.heap_remove(top);
            self.heap_push(eh, top);
        }
        if self.s.heap_len[eh] == 0 {
            return NIL;
        }
        let top = self.heap_at(eh, 0);
        self.heap_remove(top);
        top
    }

    /// `bfq_get_next_queue`: takes the next queue to serve off the service
    /// trees, the classes in strict order; `NIL` if none is waiting.
    #[inline]
    pub(super) fn next_queue(&mut self) -> u32 {
        for c in 0..PrioClass::COUNT {
            let qi = self.pick_in_class(c);
            if qi != NIL {
                return qi;
            }
        }
        NIL
    }

    // ----- charging, weights and activation -------------------------------------

    /// `bfq_bfqq_served`.
    #[inline]
    pub(super) fn served(&mut self, qi: u32, served: u64) {
        let served = served.min(MAX_CHARGE);
        let c = self.q(qi).class.index();
        let q = self.qm(qi);
        if q.wr_coeff > 1 {
            q.service_from_wr = q.service_from_wr.saturating_add(served);
        }
        q.service_from_backlogged = q.service_from_backlogged.saturating_add(served);
        q.service = q.service.saturating_add(served);
        let wsum = self.s.wsum[c].clamp(1, u64::from(u32::MAX)) as u32;
        self.s.vtime[c] = self.s.vtime[c].wrapping_add(vt_delta(served, wsum));
        self.forget_idle(c);
    }

    pub(super) fn set_weight(&mut self, qi: u32, w: u32) {
        let q = self.q(qi);
        if q.busy {
            let (c, old) = (q.class.index(), u64::from(q.weight));
            self.s.wsum[c] = self.s.wsum[c].saturating_sub(old) + u64::from(w);
        }
        self.qm(qi).set_weight_value(w);
        self.sync_weight_count(qi);
    }

    pub(super) fn apply_prio(&mut self, qi: u32, prio: IoPrio) {
        let w = ioprio_to_weight(prio.level);
        let q = self.qm(qi);
        if q.class != prio.class {
            q.finish_valid = false;
        }
        q.class = prio.class;
        q.level = prio.level.min(7);
        q.orig_weight = w;
        q.set_weight_value(w.saturating_mul(q.wr_coeff));
        q.prio_changed = false;
        self.sync_weight_count(qi);
    }

    /// A request of queue `qi` arrived with priority `prio`: a change
    /// applies at once to an idle queue, and at its next activation to a
    /// busy one (`bfq_check_ioprio_change`).
    #[inline]
    pub(super) fn update_prio_on_arrival(&mut self, qi: u32, prio: IoPrio) {
        let q = self.q(qi);
        if prio.class != q.class || prio.level.min(7) != q.level {
            if q.busy {
                self.qm(qi).new_prio = prio;
                self.qm(qi).prio_changed = true;
            } else {
                self.apply_prio(qi, prio);
            }
        } else {
            self.qm(qi).prio_changed = false;
        }
    }

    /// Makes an idle queue busy (`bfq_add_bfqq_busy` + activation).
    #[inline(always)]
    pub(super) fn activate(&mut self, qi: u32) {
        self.idle_tree_remove(qi);
        if self.q(qi).prio_changed {
            let p = self.q(qi).new_prio;
            self.apply_prio(qi, p);
        }
        let wr = self.q(qi).wr_coeff;
        let ow = self.q(qi).orig_weight;
        self.qm(qi).set_weight_value(ow.saturating_mul(wr));
        let c = self.q(qi).class.index();
        let v = self.s.vtime[c];
        let q = &mut self.qs[qi as usize].q;
        // A queue back in time with budget left keeps its place
        // (`non_blocking_wait_rq`): its timestamps are backshifted.
        let backshifted = q.non_blocking_wait_rq && q.finish_valid && vt_gt(v, q.finish);
        q.non_blocking_wait_rq = false;
        let start = if backshifted
            || (q.finish_valid && vt_gt(q.finish, v) && q.finish.wrapping_sub(v) < MAX_VTIME_AHEAD)
        {
            q.finish
        } else {
            v
        };
        q.start = start;
        q.finish = start.wrapping_add(vt_delta(q.budget, q.weight));
        if backshifted && vt_gt(v, q.finish) {
            let delta = v.wrapping_sub(q.finish) / u64::from(q.wr_coeff.max(1));
            q.start = q.start.wrapping_add(delta);
            q.finish = q.finish.wrapping_add(delta);
        }
        q.finish_valid = true;
        q.busy = true;
        let w = u64::from(q.weight);
        if q.wr_coeff > 1 {
            self.s.wr_busy_queues += 1;
        }
        self.s.wsum[c] = self.s.wsum[c].saturating_add(w);
        self.s.busy_queues += 1;
        self.s.busy_in_class[c] += 1;
        self.s.busy_classes |= 1 << c;
        self.sync_weight_count(qi);
        self.enqueue_entity(qi);
    }

    /// Makes a busy queue idle, remembering its finish time
    /// (`bfq_del_bfqq_busy`).
    #[inline(always)]
    pub(super) fn deactivate(&mut self, qi: u32) {
        if !self.q(qi).busy {
            return;
        }
        self.heap_remove(qi);
        let in_service = self.s.in_service == qi;
        let q = &mut self.qs[qi as usize].q;
        let (c, w) = (q.class.index(), u64::from(q.weight));
        if q.wr_coeff > 1 {
            self.s.wr_busy_queues = self.s.wr_busy_queues.saturating_sub(1);
        }
        if in_service {
            q.finish = q.start.wrapping_add(vt_delta(q.service, q.weight));
            self.s.in_service = NIL;
            self.s.wait_request = false;
        }
        self.s.wsum[c] = self.s.wsum[c].saturating_sub(w);
        self.s.busy_queues = self.s.busy_queues.saturating_sub(1);
        self.s.busy_in_class[c] = self.s.busy_in_class[c].saturating_sub(1);
        if self.s.busy_in_class[c] == 0 {
            self.s.busy_classes &= !(1 << c);
        }
        self.qm(qi).busy = false;
        self.sync_weight_count(qi);
        self.idle_tree_put(qi);
    }

    // ----- idle trees -----------------------------------------------------------

    /// A queue just made idle whose finish is still ahead of its class's
    /// virtual time goes on the class's idle tree, with its weight and
    /// whether it is weight-raised as they are now: it keeps counting in
    /// the weights [`tag_depth`](super::Bfq::tag_depth) divides the tags by until the
    /// virtual time passes that finish or it becomes busy again, as C's
    /// idle tree entities count in `st->wsum`. (The virtual time itself
    /// advances by the busy queues' weights only: see the module docs.)
    #[inline(always)]
    fn idle_tree_put(&mut self, qi: u32) {
        let q = self.q(qi);
        let c = q.class.index();
        if !q.used || !q.finish_valid || !vt_gt(q.finish, self.s.vtime[c]) {
            return;
        }
        let (w, raised) = (q.weight, q.wr_coeff > 1);
        let qm = self.qm(qi);
        qm.idle_finish = qm.finish;
        qm.idle_weight = w;
        qm.idle_raised = raised;
        self.s.idle_wsum[c] = self.s.idle_wsum[c].saturating_add(u64::from(w));
        self.s.raised_idle += u32::from(raised);
        self.heap_push(IDLE_HEAP0 + c, qi);
    }

    /// Takes `qi` off its idle tree, if it is on one, with the weight it
    /// counted there.
    #[inline]
    pub(super) fn idle_tree_remove(&mut self, qi: u32) {
        let h = self.q(qi).heap_id as usize;
        if self.q(qi).heap_id == NO_HEAP || h < IDLE_HEAP0 {
            return;
        }
        self.heap_remove_from(qi, h);
        let c = h - IDLE_HEAP0;
        let q = self.q(qi);
        let (w, raised) = (u64::from(q.idle_weight), q.idle_raised);
        self.s.idle_wsum[c] = self.s.idle_wsum[c].saturating_sub(w);
        self.s.raised_idle = self.s.raised_idle.saturating_sub(u32::from(raised));
    }

    /// Takes off class `c`'s idle tree the queues whose finish the virtual
    /// time reached (`bfq_forget_idle`, all of them rather than one per
    /// call).
    #[inline(always)]
    pub(super) fn forget_idle(&mut self, c: usize) {
        // Run at every charge of service, which seldom finds anything to
        // take off: that test stays in the caller.
        let h = IDLE_HEAP0 + c;
        if self.s.heap_len[h] > 0 && !vt_gt(self.q(self.heap_at(h, 0)).idle_finish, self.s.vtime[c])
        {
            self.forget_idle_from(c);
        }
    }

    /// [`Ctx::forget_idle`] when the top of the idle tree is to go.
    #[inline(never)]
    fn forget_idle_from(&mut self, c: usize) {
        let h = IDLE_HEAP0 + c;
        while self.s.heap_len[h] > 0 {
            let top = self.heap_at(h, 0);
            if vt_gt(self.q(top).idle_finish, self.s.vtime[c]) {
                break;
            }
            self.idle_tree_remove(top);
        }
    }

    /// Repositions a busy queue after its budget changed (`bfq_requeue_bfqq`
    /// for a queue not in service).
    pub(super) fn reposition(&mut self, qi: u32) {
        if !self.q(qi).busy || self.s.in_service == qi {
            return;
        }
        self.heap_remove(qi);
        let q = self.qm(qi);
        q.finish = q.start.wrapping_add(vt_delta(q.budget, q.weight));
        self.enqueue_entity(qi);
    }

    /// Queue `qi`, just expired with requests left and out of service,
    /// goes back into its service tree (`bfq_requeue_bfqq` after
    /// `__bfq_bfqq_expire`): its timestamps charge the service it
    /// received, so that its next slot starts where that service ended. A
    /// priority change waiting for it applies now, through a deactivation
    /// and a reactivation, which also resets its service: then it returns
    /// true.
    pub(super) fn requeue_expired(&mut self, qi: u32) -> bool {
        let q = *self.q(qi);
        let f = q.start.wrapping_add(vt_delta(q.service, q.weight));
        if q.prio_changed {
            self.qm(qi).finish = f;
            self.deactivate(qi);
            self.qm(qi).service = 0;
            self.apply_prio(qi, q.new_prio);
            self.activate(qi);
            return true;
        }
        let qm = self.qm(qi);
        qm.start = f;
        qm.finish = f.wrapping_add(vt_delta(q.budget, q.weight));
        self.enqueue_entity(qi);
        false
    }
}
