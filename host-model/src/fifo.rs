// SPDX-License-Identifier: GPL-2.0

//! `none`: no scheduler. Requests go to the device in the order they
//! arrive (blk-mq without an elevator hands them straight to the driver;
//! in the simulation they pass through this first-in, first-out queue,
//! which adds no wait of its own). The baseline the others are compared to.

use ironlift_policy::completions::{CompletionLog, LogWords};
use ironlift_policy::sched::SchedPolicy;
use ironlift_policy::{
    Dispatch, MergeProbe, Nanos, Op, Policy, RequestDesc, Sector, Tag, TunableError,
};
use std::collections::VecDeque;
use std::ffi::CStr;

/// A first-in, first-out queue of tags.
#[derive(Debug, Default)]
pub struct Fifo {
    queue: VecDeque<Tag>,
}

impl Policy for Fifo {
    fn insert(&mut self, tag: Tag, _: &RequestDesc, at_head: bool, _: Nanos) {
        if at_head {
            self.queue.push_front(tag);
        } else {
            self.queue.push_back(tag);
        }
    }
    fn dispatch(&mut self, _: Nanos) -> Dispatch {
        match self.queue.pop_front() {
            Some(t) => Dispatch::Request(t),
            None => Dispatch::Empty,
        }
    }
    fn has_work(&self) -> bool {
        !self.queue.is_empty()
    }
    fn queued(&self) -> usize {
        self.queue.len()
    }
    fn completed(&mut self, _: Tag, _: Nanos) {}
    fn requeued(&mut self, _: Tag, _: Nanos) {}
    fn front_merge_candidate(&self, _: &MergeProbe) -> Option<Tag> {
        None
    }
    fn front_merged(&mut self, _: Tag, _: Sector, _: u32) {}
    fn back_merged(&mut self, _: Tag, _: u32) {}
    fn requests_merged(&mut self, _: Tag, next: Tag) {
        self.queue.retain(|&t| t != next);
    }
    fn tunables(&self) -> &'static [&'static str] {
        &[]
    }
    fn tunable(&self, _: &str) -> Result<i64, TunableError> {
        Err(TunableError::UnknownName)
    }
    fn set_tunable(&mut self, _: &str, _: &str) -> Result<(), TunableError> {
        Err(TunableError::UnknownName)
    }
}

/// No module around it: completions decide nothing, no idling, no depth
/// limits, no tunables.
impl SchedPolicy for Fifo {
    type Log<W: LogWords> = CompletionLog<W>;
    const TUNABLES: &'static [&'static CStr] = &[];
    const DEPTH_LIMITS: &'static [(Op, bool)] = &[];

    fn depth_limit_index(_: Op, _: bool) -> Option<usize> {
        None
    }
    fn depth_limit(&self, _: Op, _: bool, _: u32, _: usize) -> Option<u32> {
        None
    }
}
