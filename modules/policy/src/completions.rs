// SPDX-License-Identifier: GPL-2.0

//! A lock-free log of completed request tags.
//!
//! mq-deadline counts a completion with one atomic increment and no lock
//! (`dd_finish_request()`); a policy that keeps its completion state behind
//! the scheduler lock would otherwise take that lock once more per request,
//! on the completion path, against the CPUs inserting and dispatching. With
//! this log the completion path only sets a bit ([`CompletionLog::record`],
//! any context, no lock), and whoever next holds the scheduler lock hands
//! the recorded tags to the policy ([`CompletionLog::drain`]) before it
//! makes a decision. Since the block layer frees a request's tag only after
//! its completion hook returned, a tag's completion is always drained
//! before the tag can be inserted again, as long as every insertion drains
//! first.
//!
//! A tag recorded twice before a drain is reported once: policies already
//! ignore the completion of a tag that is not in flight.
//!
//! The log is a bitmap of `64 × n` tags in `n` words, plus a summary word
//! whose bit `i` says "word `i`, `i + 64`, `i + 128`, ... may have bits",
//! so an empty log costs one load to drain.
//!
//! [`TimedLog`] adds each completion's time and a "busy" flag, for BFQ,
//! whose completions matter at once only while requests wait.

use core::sync::atomic::{fence, AtomicBool, AtomicU64, Ordering};

/// The completion log over caller-provided words (64 tags each).
pub struct CompletionLog<S> {
    words: S,
    summary: AtomicU64,
}

/// The words needed for `tags` tags.
pub const fn words_for(tags: usize) -> usize {
    tags.div_ceil(64)
}

impl<S: AsRef<[AtomicU64]>> CompletionLog<S> {
    /// A log over `words`, which should be zero (a non-zero bit is taken as
    /// a recorded tag).
    pub fn new(words: S) -> Self {
        let summary = AtomicU64::new(0);
        for (i, w) in words.as_ref().iter().enumerate() {
            if w.load(Ordering::Relaxed) != 0 {
                summary.fetch_or(1 << (i % 64), Ordering::Relaxed);
            }
        }
        CompletionLog { words, summary }
    }

    /// How many tags the log holds (`0..capacity()`).
    pub fn capacity(&self) -> usize {
        self.words.as_ref().len() * 64
    }

    /// Records that `tag` completed. Lock-free; callable from any context,
    /// concurrently with other `record`s and with one `drain`. Returns
    /// `false` (and records nothing) for a tag out of range.
    #[inline]
    pub fn record(&self, tag: usize) -> bool {
        let Some(word) = self.words.as_ref().get(tag / 64) else {
            return false;
        };
        // The word first, then the summary: a drain that empties the
        // summary before this sets it sees the bit on its next pass.
        word.fetch_or(1 << (tag % 64), Ordering::Release);
        self.summary
            .fetch_or(1 << ((tag / 64) % 64), Ordering::Release);
        true
    }

    /// Whether no tag may be recorded.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.summary.load(Ordering::Relaxed) == 0
    }

    /// Calls `f` with each recorded tag, in increasing order within each
    /// word, and forgets them. Must not run concurrently with another
    /// `drain` (call it with the scheduler lock held); `record`s may run
    /// concurrently, and are seen by this drain or the next one.
    #[inline]
    pub fn drain(&self, f: impl FnMut(usize)) {
        // Kept apart from the walk so that callers inline this check: an
        // empty log costs them one load and no call.
        if self.is_empty() {
            return;
        }
        self.drain_recorded(f);
    }

    /// [`CompletionLog::drain`] once the summary says a tag may be recorded.
    fn drain_recorded(&self, mut f: impl FnMut(usize)) {
        let words = self.words.as_ref();
        let mut summary = self.summary.swap(0, Ordering::Acquire);
        while summary != 0 {
            let first = summary.trailing_zeros() as usize;
            summary &= summary - 1;
            // Words `first`, `first + 64`, ... (only `first` for up to
            // 4096 tags, which is told without a second look).
            let mut w = first;
            while let Some(word) = words.get(w) {
                let mut bits = word.swap(0, Ordering::Acquire);
                while bits != 0 {
                    let b = bits.trailing_zeros() as usize;
                    bits &= bits - 1;
                    f(w * 64 + b);
                }
                if words.len() <= 64 {
                    break;
                }
                w += 64;
            }
        }
    }
}

/// How many completions [`TimedLog::drain`] sorts by time at once.
pub const DRAIN_BATCH: usize = 32;

/// A completion log for a policy whose completion handling depends on time
/// and on its own state (BFQ): each recorded tag carries the time it
/// completed, and a completion is handed to the policy at once, under the
/// scheduler lock, only while the policy holds queued requests.
///
/// A completion can only change what happens next while requests wait: it
/// may start an idle slice, end one, or free the device for a queue held
/// back, and the caller must then arm a timer or run the queue. With
/// nothing queued, the next request to arrive runs the queue anyway, and
/// the completion can be handed over then, with the time it happened: the
/// policy makes the same decisions as if it had been told at once. So the
/// completion path takes the lock only while the policy is *busy*
/// ([`TimedLog::complete`] says when), and whoever holds the lock drains
/// the log before the policy decides anything.
///
/// The busy flag and the log are ordered so that no completion is left
/// behind while requests wait: a completion records its tag, then (after a
/// full fence) reads the flag; the lock holder that makes the policy busy
/// sets the flag, then (after a full fence) looks at the log again
/// ([`TimedLog::set_busy`]). One of the two sees the other.
pub struct TimedLog<W, T> {
    log: CompletionLog<W>,
    times: T,
    busy: AtomicBool,
}

impl<W: AsRef<[AtomicU64]>, T: AsRef<[AtomicU64]>> TimedLog<W, T> {
    /// A log of `times.len()` tags over `words` (at least
    /// [`words_for`]`(times.len())`, zero) and `times` (zero). Not busy.
    pub fn new(words: W, times: T) -> Self {
        TimedLog {
            log: CompletionLog::new(words),
            times,
            busy: AtomicBool::new(false),
        }
    }

    /// Notes when `tag` completed (the block layer's `completed_request`),
    /// for [`TimedLog::complete`], which follows. Any context; a tag out of
    /// range is ignored.
    #[inline]
    pub fn set_time(&self, tag: usize, now: u64) {
        if let Some(t) = self.times.as_ref().get(tag) {
            // 0 means "no time yet".
            t.store(now.max(1), Ordering::Relaxed);
        }
    }

    /// Records that `tag` is done, at the time [`TimedLog::set_time`]
    /// noted, or else at `clock()`. Lock-free, any context. Returns whether
    /// the caller must take the scheduler lock now and drain (the policy is
    /// busy); otherwise the lock holder who next drains hands it over. A
    /// tag out of range is not recorded, and `false` returned.
    #[inline]
    pub fn complete(&self, tag: usize, clock: impl FnOnce() -> u64) -> bool {
        let Some(t) = self.times.as_ref().get(tag) else {
            return false;
        };
        if t.load(Ordering::Relaxed) == 0 {
            t.store(clock().max(1), Ordering::Relaxed);
        }
        // `record` publishes the time with its release.
        if !self.log.record(tag) {
            return false;
        }
        // Pairs with the fence in `set_busy`.
        fence(Ordering::SeqCst);
        self.busy.load(Ordering::Relaxed)
    }

    /// Says whether the policy now holds queued requests; call it with the
    /// scheduler lock held, after every change that may make it busy.
    /// Returns `true` when it just became busy and completions may have
    /// been recorded meanwhile that saw it idle: the caller must drain
    /// again.
    #[inline]
    pub fn set_busy(&self, busy: bool) -> bool {
        if busy == self.busy.load(Ordering::Relaxed) {
            return false;
        }
        self.busy.store(busy, Ordering::Relaxed);
        if !busy {
            // A completion that still sees "busy" only takes the lock.
            return false;
        }
        // Pairs with the fence in `complete`.
        fence(Ordering::SeqCst);
        !self.log.is_empty()
    }

    /// Whether the policy was last said to be busy.
    pub fn is_busy(&self) -> bool {
        self.busy.load(Ordering::Relaxed)
    }

    /// Whether no completion may be recorded.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.log.is_empty()
    }

    /// Calls `f(tag, time)` with each recorded completion and forgets them,
    /// in time order within batches of [`DRAIN_BATCH`] (more than that
    /// between two drains is rare: every insertion and dispatch drains).
    /// Call it with the scheduler lock held. It sorts in `batch`, which the
    /// caller keeps (under the same lock) so that a drain need not clear a
    /// new one: on a fast device nearly every hook drains a completion or
    /// two, and clearing the 512 bytes cost more than handing them over.
    #[inline]
    pub fn drain(&self, batch: &mut DrainBatch, f: impl FnMut(usize, u64)) {
        if self.log.is_empty() {
            return;
        }
        self.drain_recorded(batch, f);
    }

    fn drain_recorded(&self, batch: &mut DrainBatch, mut f: impl FnMut(usize, u64)) {
        let times = self.times.as_ref();
        let batch = &mut batch.0;
        let mut n = 0;
        let mut flush = |batch: &mut [(u64, usize); DRAIN_BATCH], n: &mut usize| {
            let b = &mut batch[..*n];
            // Insertion sort: a drain holds a few completions.
            for i in 1..b.len() {
                let mut j = i;
                while j > 0 && b[j - 1].0 > b[j].0 {
                    b.swap(j - 1, j);
                    j -= 1;
                }
            }
            for &(t, tag) in b.iter() {
                f(tag, t);
            }
            *n = 0;
        };
        self.log.drain(|tag| {
            // In range: the log holds only tags `complete` checked.
            let t = times.get(tag).map_or(0, |t| t.swap(0, Ordering::Relaxed));
            batch[n] = (t, tag);
            n += 1;
            if n == DRAIN_BATCH {
                flush(batch, &mut n);
            }
        });
        flush(batch, &mut n);
    }
}

/// Room for [`TimedLog::drain`] to sort completions by time in. What
/// it holds between drains means nothing.
pub struct DrainBatch([(u64, usize); DRAIN_BATCH]);

impl Default for DrainBatch {
    fn default() -> Self {
        DrainBatch([(0, 0); DRAIN_BATCH])
    }
}

/// Storage a completion log lives in: atomic words, shared between CPUs.
pub trait LogWords: AsRef<[AtomicU64]> + Send + Sync {}

impl<T: AsRef<[AtomicU64]> + Send + Sync> LogWords for T {}

/// A completion log as a module core ([`super::sched`]) uses it: written
/// lock-free by the completion path, drained under the scheduler lock.
/// The policy chooses which ([`super::sched::SchedPolicy::Log`]):
/// [`CompletionLog`] when completions decide nothing by themselves (they
/// are handed over at the next insertion or dispatch, with its time, and
/// the completion path never takes the lock), [`TimedLog`] when a
/// completion may call for a queue run while requests wait.
pub trait Completions<W>: Sized {
    /// Whether completions carry their own times, which the block layer's
    /// `completed_request` gives ([`Completions::set_time`]).
    const TIMED: bool;

    /// The words of storage the log needs for `tags` tags: (bitmap, times).
    fn words(tags: usize) -> (usize, usize);

    /// A log over `bitmap` and `times`, sized by [`Completions::words`],
    /// all zero.
    fn with_words(bitmap: W, times: W) -> Self;

    /// Notes when `tag` completed (see [`TimedLog::set_time`]).
    fn set_time(&self, tag: usize, now: u64);

    /// Records that `tag` is done; whether the caller must take the
    /// scheduler lock now and drain (see [`TimedLog::complete`]).
    fn complete(&self, tag: usize, clock: impl FnOnce() -> u64) -> bool;

    /// Says whether the policy holds queued requests; whether the caller
    /// must drain again (see [`TimedLog::set_busy`]).
    fn set_busy(&self, busy: bool) -> bool;

    /// Hands every recorded completion to `f(tag, time)` and forgets it;
    /// completions without a time of their own get `now()`. Under the
    /// scheduler lock.
    fn drain(&self, batch: &mut DrainBatch, now: impl FnOnce() -> u64, f: impl FnMut(usize, u64));
}

impl<W: AsRef<[AtomicU64]>> Completions<W> for CompletionLog<W> {
    const TIMED: bool = false;

    fn words(tags: usize) -> (usize, usize) {
        (words_for(tags), 0)
    }

    fn with_words(bitmap: W, _times: W) -> Self {
        CompletionLog::new(bitmap)
    }

    #[inline]
    fn set_time(&self, _tag: usize, _now: u64) {}

    #[inline]
    fn complete(&self, tag: usize, _clock: impl FnOnce() -> u64) -> bool {
        self.record(tag);
        false
    }

    #[inline]
    fn set_busy(&self, _busy: bool) -> bool {
        false
    }

    #[inline]
    fn drain(
        &self,
        _batch: &mut DrainBatch,
        now: impl FnOnce() -> u64,
        mut f: impl FnMut(usize, u64),
    ) {
        if self.is_empty() {
            return;
        }
        let now = now();
        CompletionLog::drain(self, |tag| f(tag, now));
    }
}

impl<W: AsRef<[AtomicU64]>> Completions<W> for TimedLog<W, W> {
    const TIMED: bool = true;

    fn words(tags: usize) -> (usize, usize) {
        (words_for(tags), tags)
    }

    fn with_words(bitmap: W, times: W) -> Self {
        TimedLog::new(bitmap, times)
    }

    #[inline]
    fn set_time(&self, tag: usize, now: u64) {
        TimedLog::set_time(self, tag, now);
    }

    #[inline]
    fn complete(&self, tag: usize, clock: impl FnOnce() -> u64) -> bool {
        TimedLog::complete(self, tag, clock)
    }

    #[inline]
    fn set_busy(&self, busy: bool) -> bool {
        TimedLog::set_busy(self, busy)
    }

    #[inline]
    fn drain(&self, batch: &mut DrainBatch, _now: impl FnOnce() -> u64, f: impl FnMut(usize, u64)) {
        TimedLog::drain(self, batch, f);
    }
}
