// SPDX-License-Identifier: GPL-2.0

//! The module core: what an elevator module does around a policy, written
//! once for the kernel glue (`modules/kernel/glue.rs`) and the host model
//! (`host-model/src/sim.rs`), so that the simulator runs the code that
//! ships.
//!
//! A module's per-queue state comes in two parts, as the elevator
//! abstraction splits it:
//!
//! - [`Shared`], used without the scheduler lock: the completion log the
//!   completion path writes ([`Completions`]), and the depth limits that
//!   `limit_depth` reads, by operation and sync flag, with whether the
//!   policy also limits each issuer by its share of the tags
//!   ([`SchedPolicy::tag_depth`]; only then does `limit_depth` take the
//!   lock, through [`Core::tag_depth`]).
//! - [`Core`], behind the lock: the policy, the end of the idle slice the
//!   rerun timer was armed for, what the depth limits were last computed
//!   from, and where drains sort completions.
//!
//! Every [`Core`] method that lets the policy decide first hands it the
//! completions recorded since the last one, and ends by telling the
//! completion log whether the policy now holds queued requests (see
//! [`TimedLog`](super::completions::TimedLog)) and by bringing the depth
//! limits up to date. The core reads no clock, allocates nothing and
//! neither runs the queue nor touches a timer: time is passed in, and what
//! the caller must do comes back as an [`Effect`].
//!
//! Policies that keep state per process map I/O contexts onto their
//! issuers with [`ContextIssuers`].

use super::completions::{Completions, DrainBatch, LogWords};
use super::types::{
    AsyncDepth, Dispatch, IssuerId, MergeProbe, Nanos, Op, Policy, RequestDesc, Sector, Tag,
    TunableError,
};
use core::ffi::CStr;
use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};

/// What a policy tells its module core beyond [`Policy`].
pub trait SchedPolicy: Policy {
    /// How completions reach the policy: a [`CompletionLog`] if they
    /// decide nothing by themselves (handed over at the next insertion or
    /// dispatch, with its time; the completion path never takes the lock),
    /// a [`TimedLog`] if one may call for a queue run while requests wait.
    ///
    /// [`CompletionLog`]: super::completions::CompletionLog
    /// [`TimedLog`]: super::completions::TimedLog
    type Log<W: LogWords>: Completions<W> + Send + Sync;

    /// The tunables' sysfs names, in the order of [`Policy::tunables`]
    /// (the same names, as C strings).
    const TUNABLES: &'static [&'static CStr];

    /// Whether the policy may hold the device idle
    /// ([`Dispatch::IdleUntil`], or a completion that starts an idle
    /// slice): the module then needs a rerun timer.
    const IDLES: bool = false;

    /// Whether the depth limits depend on the policy's state besides the
    /// depth ([`SchedPolicy::limits_state`]): the core then looks after
    /// every decision whether they changed.
    const LIMITS_FOLLOW_STATE: bool = false;

    /// The depth limits `limit_depth` answers from, in the order of
    /// [`SchedPolicy::depth_limit_index`]: the (operation, sync) pair each
    /// stands for. At most [`DEPTH_LIMITS`].
    const DEPTH_LIMITS: &'static [(Op, bool)];

    /// Which of [`SchedPolicy::DEPTH_LIMITS`] applies to a request; `None`
    /// if the policy never limits such requests.
    fn depth_limit_index(op: Op, sync: bool) -> Option<usize>;

    /// The depth limit of (`op`, `sync`) requests with `nr_requests`
    /// scheduler tags, for a policy over storage for `capacity` requests.
    fn depth_limit(&self, op: Op, sync: bool, nr_requests: u32, capacity: usize) -> Option<u32>;

    /// What the depth limits depend on besides the depth, if
    /// [`SchedPolicy::LIMITS_FOLLOW_STATE`].
    fn limits_state(&self) -> bool {
        false
    }

    /// Whether the policy may limit an issuer's next request by the tags
    /// its issuer holds ([`SchedPolicy::tag_depth`]).
    const SHARES_TAGS: bool = false;

    /// Whether [`SchedPolicy::tag_depth`] may limit anything now: while
    /// not, `limit_depth` neither looks up the issuer nor takes the lock.
    fn tags_shared(&self) -> bool {
        false
    }

    /// The depth a request of `issuer`, whose kind may use `limit` tags,
    /// may allocate from, if its issuer holds its share of them.
    fn tag_depth(&mut self, _issuer: IssuerId, _limit: u32) -> Option<u32> {
        None
    }

    /// The tunables' sysfs names where the queue keeps `async_depth`
    /// ([`AsyncDepth::Queue`]), in the order of [`Policy::tunables`]
    /// there: [`SchedPolicy::TUNABLES`] unless the policy had an
    /// `async_depth` of its own.
    const QUEUE_DEPTH_TUNABLES: &'static [&'static CStr] = Self::TUNABLES;

    /// Where the kernel keeps `async_depth`: told once, before the first
    /// [`SchedPolicy::depth_updated`].
    fn set_async_depth_home(&mut self, _home: AsyncDepth) {}

    /// The queue's `async_depth` the policy sets when it is attached
    /// where the queue keeps it, from `nr_requests`, and whether it sets
    /// it after its first [`SchedPolicy::depth_updated`] (so that one
    /// sees the value the queue had before); `None` leaves it.
    fn initial_queue_async_depth(_nr_requests: u32) -> Option<(u32, bool)> {
        None
    }

    /// `nr_requests` changed; where the queue keeps `async_depth`
    /// ([`AsyncDepth::Queue`]), `queue_async_depth` is its value (which
    /// may be what changed).
    fn depth_updated(&mut self, _nr_requests: u32, _queue_async_depth: Option<u32>) {}

    /// The end of the idle slice the policy waits in, if it idles.
    fn idling_until(&self) -> Option<Nanos> {
        None
    }

    /// What the completions just handed over call for, if the module runs
    /// the queue: [`Effect::Nothing`], [`Effect::ArmRerun`] or
    /// [`Effect::RunAsync`].
    fn completion_effect(&mut self) -> Effect {
        Effect::Nothing
    }

    /// An issuer went away (its process's I/O context exited).
    fn issuer_exit(&mut self, _issuer: IssuerId, _now: Nanos) {}

    /// Whether the policy keeps nothing for issuer id `issuer`, which
    /// [`ContextIssuers`] may then hand to a new I/O context. Only
    /// policies that keep per-issuer state and release it after
    /// [`SchedPolicy::issuer_exit`] say yes.
    fn issuer_is_free(&self, _issuer: IssuerId) -> bool {
        false
    }

    /// The policy's own consistency check (tests and the host model).
    fn check_invariants(&self) -> Result<(), &'static str> {
        Ok(())
    }
}

/// The most depth limits a policy may keep ([`SchedPolicy::DEPTH_LIMITS`]).
pub const DEPTH_LIMITS: usize = 8;

/// What the caller of a [`Core`] method must do.
#[must_use]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Effect {
    /// Nothing.
    Nothing,
    /// Arm the rerun timer for this time, the end of an idle slice (it
    /// then runs the queue), replacing any time it was armed for.
    ArmRerun(Nanos),
    /// Cancel the rerun timer if it has not fired: the request the device
    /// idled for arrived.
    CancelRerun,
    /// Run the queue as soon as possible, from a context that holds no
    /// lock: the rerun timer, armed for now (where the block layer holds
    /// locks that running the queue may take).
    RerunNow,
    /// Run the queue asynchronously, once the scheduler lock is dropped.
    RunAsync,
}

/// The lock-free part of a module's per-queue state.
pub struct Shared<P: SchedPolicy, W: LogWords> {
    log: P::Log<W>,
    /// Kept equal to the policy's limits, scaled to `nr_requests`, under
    /// the lock; 0 means no limit.
    depth_limits: [AtomicU32; DEPTH_LIMITS],
    /// The scheduler tags per hardware queue (`nr_requests`).
    nr_requests: AtomicU32,
    /// [`SchedPolicy::tags_shared`], kept up to date under the lock.
    tags_shared: AtomicBool,
}

impl<P: SchedPolicy, W: LogWords> Shared<P, W> {
    /// The words of storage the completion log needs for `capacity`
    /// requests: (bitmap, times).
    pub fn log_words(capacity: usize) -> (usize, usize) {
        P::Log::<W>::words(capacity)
    }

    /// The lock-free state over the completion log's storage (sized by
    /// [`Shared::log_words`], zero), with `nr_requests` scheduler tags.
    /// The depth limits are set by [`Core::new`].
    pub fn new(bitmap: W, times: W, nr_requests: u32) -> Self {
        Shared {
            log: P::Log::<W>::with_words(bitmap, times),
            depth_limits: Default::default(),
            nr_requests: AtomicU32::new(nr_requests),
            tags_shared: AtomicBool::new(false),
        }
    }

    /// The block layer's `completed_request`: request `tag` completed at
    /// `now` (kept only by a timed log). Any context.
    #[inline]
    pub fn completed(&self, tag: Tag, now: Nanos) {
        self.log.set_time(tag, now);
    }

    /// The block layer's `finish_request` up to the lock: records that
    /// `tag` is done (at the time [`Shared::completed`] gave, or else
    /// `clock()`). Any context, lock-free. Returns whether the caller must
    /// take the lock now and call [`Core::finished`]; otherwise the next
    /// hook that holds the lock hands the completion over.
    #[inline]
    pub fn finish(&self, tag: Tag, clock: impl FnOnce() -> Nanos) -> bool {
        self.log.complete(tag, clock)
    }

    /// `limit_depth`: the depth limit of a new (`op`, `sync`) request, if
    /// any. Lock-free.
    #[inline]
    pub fn depth_limit(&self, op: Op, sync: bool) -> Option<u32> {
        let i = P::depth_limit_index(op, sync)?;
        let limit = self.depth_limits.get(i)?.load(Ordering::Relaxed);
        (limit != 0).then_some(limit)
    }

    /// Whether `limit_depth` must ask the policy under the lock
    /// ([`Core::tag_depth`]) for the issuer's share of the tags.
    /// Lock-free.
    #[inline]
    pub fn tags_shared(&self) -> bool {
        P::SHARES_TAGS && self.tags_shared.load(Ordering::Relaxed)
    }
}

/// The part of a module's per-queue state behind the scheduler lock.
pub struct Core<P> {
    policy: P,
    /// The requests the policy's storage holds (what its depth limits are
    /// fractions of).
    capacity: usize,
    /// The end of the idle slice the rerun timer was armed for, by a
    /// dispatch ([`Core::rerun_at`]) or a completion; cleared, and the
    /// timer cancelled, when the request the device idled for arrives.
    idle_until: Option<Nanos>,
    /// What the depth limits were last computed from: `nr_requests` and
    /// [`SchedPolicy::limits_state`].
    limits_from: Option<(u32, bool)>,
    /// Where drains sort completions by time.
    batch: DrainBatch,
    /// Where the kernel keeps `async_depth`, which decides the tunables.
    depth_home: AsyncDepth,
}

impl<P: SchedPolicy> Core<P> {
    /// The locked state around `policy`, whose storage holds `capacity`
    /// requests; sets `shared`'s depth limits.
    pub fn new<W: LogWords>(policy: P, capacity: usize, shared: &Shared<P, W>) -> Self {
        Self::with_async_depth(policy, capacity, shared, AsyncDepth::Elevator)
    }

    /// [`Core::new`] for a kernel that keeps `async_depth` where `home`
    /// says.
    pub fn with_async_depth<W: LogWords>(
        mut policy: P,
        capacity: usize,
        shared: &Shared<P, W>,
        home: AsyncDepth,
    ) -> Self {
        policy.set_async_depth_home(home);
        let mut core = Core {
            policy,
            capacity,
            idle_until: None,
            limits_from: None,
            batch: DrainBatch::default(),
            depth_home: home,
        };
        core.rescale(shared);
        core
    }

    /// The policy.
    pub fn policy(&self) -> &P {
        &self.policy
    }

    /// The policy, for changes the module does not see (tests and the host
    /// model; the depth limits are brought up to date at the next hook
    /// only if [`SchedPolicy::LIMITS_FOLLOW_STATE`]).
    pub fn policy_mut(&mut self) -> &mut P {
        &mut self.policy
    }

    /// Hands the completions recorded since the last call to the policy,
    /// in the order they happened (those without a time of their own at
    /// `now()`).
    #[inline]
    fn drain<W: LogWords>(&mut self, shared: &Shared<P, W>, now: impl FnOnce() -> Nanos) {
        let Core { policy, batch, .. } = self;
        shared
            .log
            .drain(batch, now, |tag, at| policy.completed(tag, at));
    }

    /// Tells the completion log whether the policy now holds queued
    /// requests, at the end of every hook that may change it. If it just
    /// began to, completions that found it empty may not have been handed
    /// over: do it now. What they call for, the queue run that follows
    /// every insertion does.
    #[inline]
    fn publish<W: LogWords>(&mut self, shared: &Shared<P, W>, now: impl FnOnce() -> Nanos) {
        if shared.log.set_busy(self.policy.has_work()) {
            self.drain(shared, now);
            let _ = self.policy.completion_effect();
        }
    }

    /// Brings the depth limits up to date if they follow the policy's
    /// state and it changed (a load and a compare when not).
    #[inline]
    fn refresh<W: LogWords>(&mut self, shared: &Shared<P, W>) {
        if P::SHARES_TAGS {
            let on = self.policy.tags_shared();
            if shared.tags_shared.load(Ordering::Relaxed) != on {
                shared.tags_shared.store(on, Ordering::Relaxed);
            }
        }
        if !P::LIMITS_FOLLOW_STATE {
            return;
        }
        let key = (
            shared.nr_requests.load(Ordering::Relaxed),
            self.policy.limits_state(),
        );
        if self.limits_from == Some(key) {
            return;
        }
        self.limits_from = Some(key);
        self.store_limits(shared, key.0);
    }

    /// Recomputes the depth limits.
    fn rescale<W: LogWords>(&mut self, shared: &Shared<P, W>) {
        let depth = shared.nr_requests.load(Ordering::Relaxed);
        self.limits_from = Some((depth, self.policy.limits_state()));
        self.store_limits(shared, depth);
    }

    fn store_limits<W: LogWords>(&self, shared: &Shared<P, W>, depth: u32) {
        for (&(op, sync), slot) in P::DEPTH_LIMITS.iter().zip(&shared.depth_limits) {
            let limit = self.policy.depth_limit(op, sync, depth, self.capacity);
            slot.store(limit.unwrap_or(0), Ordering::Relaxed);
        }
    }

    /// `insert_requests` begins, at `now`: the policy hears of the
    /// completions recorded since the last hook (before any tag can be
    /// inserted again). Then [`Core::insert`] for each request, then
    /// [`Core::end_insert`].
    #[inline]
    pub fn begin_insert<W: LogWords>(&mut self, shared: &Shared<P, W>, now: Nanos) {
        self.drain(shared, || now);
    }

    /// One request enters the policy.
    #[inline]
    pub fn insert(&mut self, tag: Tag, desc: &RequestDesc, at_head: bool, now: Nanos) {
        self.policy.insert(tag, desc, at_head, now);
    }

    /// `insert_requests` ends. [`Effect::CancelRerun`] if the request the
    /// device idled for came (BFQ's `bfq_rq_enqueued()` cancels its
    /// `idle_slice_timer`), else [`Effect::Nothing`]. The block layer runs
    /// the queue after every insertion.
    #[inline]
    pub fn end_insert<W: LogWords>(&mut self, shared: &Shared<P, W>, now: Nanos) -> Effect {
        let mut effect = Effect::Nothing;
        if P::IDLES && self.idle_until.is_some() && self.policy.idling_until().is_none() {
            self.idle_until = None;
            effect = Effect::CancelRerun;
        }
        self.publish(shared, || now);
        self.refresh(shared);
        effect
    }

    /// `dispatch_request` at `now`: the next request, made into the
    /// caller's handle by `take` (a tag without a handle is skipped), or
    /// none. With none, [`Effect::ArmRerun`] if the policy idles (also
    /// [`Core::rerun_at`]), else [`Effect::Nothing`].
    #[inline]
    pub fn dispatch<W: LogWords, R>(
        &mut self,
        shared: &Shared<P, W>,
        now: Nanos,
        mut take: impl FnMut(Tag) -> Option<R>,
    ) -> (Option<R>, Effect) {
        self.drain(shared, || now);
        let out = loop {
            match self.policy.dispatch(now) {
                Dispatch::Request(tag) => {
                    if let Some(rq) = take(tag) {
                        break (Some(rq), Effect::Nothing);
                    }
                }
                Dispatch::IdleUntil(until) => {
                    // A request arriving earlier runs the queue anyway.
                    self.idle_until = Some(until);
                    break (None, Effect::ArmRerun(until));
                }
                Dispatch::Empty => {
                    self.idle_until = None;
                    break (None, Effect::Nothing);
                }
            }
        };
        self.publish(shared, || now);
        self.refresh(shared);
        out
    }

    /// When the last dispatch that gave no request wants the queue run
    /// again (the end of the idle slice), if it does.
    #[inline]
    pub fn rerun_at(&self) -> Option<Nanos> {
        self.idle_until
    }

    /// `finish_request` under the lock, after [`Shared::finish`] said to
    /// take it: hands the completions over and says what they call for.
    /// [`Effect::ArmRerun`]: the device waits for the queue in service's
    /// next request while others wait (as `bfq_completed_request()` after
    /// `bfq_arm_slice_timer()`); [`Effect::RunAsync`]: nothing is left on
    /// the device and the last dispatch held the queued requests back, so
    /// nothing else will run the queue. `clock` is read only for
    /// completions without a time of their own.
    #[inline]
    pub fn finished<W: LogWords>(
        &mut self,
        shared: &Shared<P, W>,
        clock: impl Fn() -> Nanos,
    ) -> Effect {
        self.drain(shared, &clock);
        let effect = self.policy.completion_effect();
        if let Effect::ArmRerun(until) = effect {
            self.idle_until = Some(until);
        }
        self.publish(shared, &clock);
        self.refresh(shared);
        effect
    }

    /// `requeue_request`: the driver gave `tag` back; it will be inserted
    /// again.
    #[inline]
    pub fn requeued<W: LogWords>(&mut self, shared: &Shared<P, W>, tag: Tag, now: Nanos) {
        self.drain(shared, || now);
        self.policy.requeued(tag, now);
        self.publish(shared, || now);
    }

    /// An issuer's process went away (`exit_icq`): `issuer`, if it had
    /// one of its own. If requests wait, [`Effect::RerunNow`] (as
    /// `bfq_exit_bfqq()`: the device may have idled for the process, which
    /// the policy stopped), else [`Effect::Nothing`].
    pub fn issuer_exit<W: LogWords>(
        &mut self,
        shared: &Shared<P, W>,
        issuer: Option<IssuerId>,
        now: Nanos,
    ) -> Effect {
        self.drain(shared, || now);
        if let Some(issuer) = issuer {
            self.policy.issuer_exit(issuer, now);
        }
        let mut effect = Effect::Nothing;
        if self.policy.has_work() {
            self.idle_until = None;
            effect = Effect::RerunNow;
        }
        self.publish(shared, || now);
        self.refresh(shared);
        effect
    }

    /// `limit_depth` for a request of `issuer` while
    /// [`Shared::tags_shared`]: depth 1 if its issuer holds its share of
    /// the tags its kind may use (all `nr_requests`, or its depth limit),
    /// else that depth limit, if any.
    pub fn tag_depth<W: LogWords>(
        &mut self,
        shared: &Shared<P, W>,
        issuer: IssuerId,
        op: Op,
        sync: bool,
    ) -> Option<u32> {
        let limit = shared.depth_limit(op, sync);
        let tags = limit.unwrap_or_else(|| shared.nr_requests.load(Ordering::Relaxed));
        let depth = self.policy.tag_depth(issuer, tags).or(limit);
        self.refresh(shared);
        depth
    }

    /// `request_merge`: the queued request a bio could be front-merged
    /// into, as the policy chooses it.
    #[inline]
    pub fn front_merge_candidate(&self, probe: &MergeProbe) -> Option<Tag> {
        self.policy.front_merge_candidate(probe)
    }

    /// `request_merged`, front merge: `tag` now starts at `sector` and is
    /// `sectors` long.
    #[inline]
    pub fn front_merged(&mut self, tag: Tag, sector: Sector, sectors: u32) {
        self.policy.front_merged(tag, sector, sectors);
    }

    /// `request_merged`, back merge: `tag` is now `sectors` long.
    #[inline]
    pub fn back_merged(&mut self, tag: Tag, sectors: u32) {
        self.policy.back_merged(tag, sectors);
    }

    /// `requests_merged`: `next` was merged into `into` and is gone.
    #[inline]
    pub fn requests_merged(&mut self, into: Tag, next: Tag) {
        self.policy.requests_merged(into, next);
    }

    /// `depth_updated`: `nr_requests` is now `nr_requests`, and where the
    /// queue keeps `async_depth`, that is `queue_async_depth`.
    pub fn depth_updated<W: LogWords>(
        &mut self,
        shared: &Shared<P, W>,
        nr_requests: u32,
        queue_async_depth: Option<u32>,
    ) {
        shared.nr_requests.store(nr_requests, Ordering::Relaxed);
        self.policy.depth_updated(nr_requests, queue_async_depth);
        self.rescale(shared);
    }

    /// The value of tunable `index` of [`sysfs_names`].
    pub fn tunable(&self, index: usize) -> Result<i64, TunableError> {
        self.policy
            .tunable(tunable_name::<P>(self.depth_home, index)?)
    }

    /// Writes tunable `index` of [`sysfs_names`] from its sysfs text; on
    /// error the value stays.
    pub fn set_tunable<W: LogWords>(
        &mut self,
        shared: &Shared<P, W>,
        index: usize,
        text: &str,
    ) -> Result<(), TunableError> {
        self.policy
            .set_tunable(tunable_name::<P>(self.depth_home, index)?, text)?;
        self.rescale(shared);
        Ok(())
    }
}

/// `P`'s tunables' sysfs names on a kernel that keeps `async_depth` where
/// `home` says.
pub const fn sysfs_names<P: SchedPolicy>(home: AsyncDepth) -> &'static [&'static CStr] {
    match home {
        AsyncDepth::Elevator => P::TUNABLES,
        AsyncDepth::Queue => P::QUEUE_DEPTH_TUNABLES,
    }
}

/// The name of tunable `index`, as the policy knows it.
fn tunable_name<P: SchedPolicy>(
    home: AsyncDepth,
    index: usize,
) -> Result<&'static str, TunableError> {
    let name = sysfs_names::<P>(home)
        .get(index)
        .ok_or(TunableError::UnknownName)?;
    name.to_str().map_err(|_| TunableError::UnknownName)
}

/// Whether `P`'s sysfs names are its tunables, in its order, where the
/// kernel keeps `async_depth` as the policy was told, and its depth limits
/// are laid out as it indexes them (for tests).
pub fn check_layout<P: SchedPolicy>(policy: &P, home: AsyncDepth) -> Result<(), &'static str> {
    let names = policy.tunables();
    let sysfs = sysfs_names::<P>(home);
    if names.len() != sysfs.len()
        || !names
            .iter()
            .zip(sysfs)
            .all(|(n, c)| c.to_bytes() == n.as_bytes())
    {
        return Err("the sysfs names are not the policy's tunables");
    }
    if P::DEPTH_LIMITS.len() > DEPTH_LIMITS {
        return Err("too many depth limits");
    }
    for op in [Op::Read, Op::Write, Op::Flush, Op::Discard] {
        for sync in [false, true] {
            match P::depth_limit_index(op, sync) {
                Some(i) => {
                    let Some(&(o, s)) = P::DEPTH_LIMITS.get(i) else {
                        return Err("a depth limit index out of range");
                    };
                    if policy.async_depth_limit(o, s) != policy.async_depth_limit(op, sync) {
                        return Err("a depth limit stands for requests limited otherwise");
                    }
                }
                None => {
                    // The block layer makes every read synchronous
                    // (`op_is_sync()`): async reads are never looked up.
                    let never = op == Op::Read && !sync;
                    if !never && policy.async_depth_limit(op, sync).is_some() {
                        return Err("requests the policy limits are not looked up");
                    }
                }
            }
        }
    }
    Ok(())
}

/// Issuers for process I/O contexts, over `count` issuer slots of which
/// the last is shared: each context keeps a word (in the kernel, its
/// `io_cq`'s), [`ContextIssuers::UNASSIGNED`] at first. A context's first
/// request takes a free slot of its own; requests without a context,
/// contexts that found no free slot and contexts that exited use the
/// shared one. A slot is free again once the policy released it after the
/// context's exit ([`SchedPolicy::issuer_exit`],
/// [`SchedPolicy::issuer_is_free`]).
pub struct ContextIssuers {
    count: usize,
    /// Where the search for a free slot starts.
    next: usize,
}

impl ContextIssuers {
    /// The word of a context that has no issuer yet.
    pub const UNASSIGNED: usize = 0;
    /// The word of a context that found no free slot.
    const SHARED: usize = usize::MAX - 1;
    /// The word of a context that exited.
    const EXITED: usize = usize::MAX;

    /// Issuers over `count` slots (at least 1).
    pub const fn new(count: usize) -> Self {
        ContextIssuers { count, next: 0 }
    }

    /// The shared issuer.
    #[inline]
    pub fn shared(&self) -> IssuerId {
        self.count.saturating_sub(1)
    }

    /// The context's own issuer, if its word names one.
    #[inline]
    pub fn own(&self, word: usize) -> Option<IssuerId> {
        match word {
            Self::UNASSIGNED | Self::SHARED | Self::EXITED => None,
            w if w - 1 < self.shared() => Some(w - 1),
            _ => None,
        }
    }

    /// The issuer of a request whose context has the word `word` (updated
    /// when the context takes a slot or finds none). Requests inserted at
    /// head go straight out and take no slot.
    #[inline]
    pub fn issuer<P: SchedPolicy>(
        &mut self,
        policy: &P,
        word: &mut usize,
        at_head: bool,
    ) -> IssuerId {
        if *word != Self::UNASSIGNED {
            return self.own(*word).unwrap_or(self.shared());
        }
        if at_head {
            return self.shared();
        }
        match self.free(policy) {
            Some(id) => {
                *word = id + 1;
                id
            }
            None => {
                *word = Self::SHARED;
                self.shared()
            }
        }
    }

    /// A free slot (not the shared one), if any.
    fn free<P: SchedPolicy>(&mut self, policy: &P) -> Option<IssuerId> {
        let n = self.shared();
        for k in 0..n {
            let i = (self.next + k) % n;
            if policy.issuer_is_free(i) {
                self.next = (i + 1) % n;
                return Some(i);
            }
        }
        None
    }

    /// The context with the word `word` exits: the issuer it had of its
    /// own, for [`SchedPolicy::issuer_exit`]. The word then sends the
    /// requests it still makes to the shared slot (its own may go to
    /// another context once released).
    pub fn exit(&self, word: &mut usize) -> Option<IssuerId> {
        let own = self.own(*word);
        *word = Self::EXITED;
        own
    }
}
