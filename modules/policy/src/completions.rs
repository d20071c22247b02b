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

use core::sync::atomic::{AtomicU64, Ordering};

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
            for (w, word) in words.iter().enumerate().skip(first).step_by(64) {
                let mut bits = word.swap(0, Ordering::Acquire);
                while bits != 0 {
                    let b = bits.trailing_zeros() as usize;
                    bits &= bits - 1;
                    f(w * 64 + b);
                }
            }
        }
    }
}
