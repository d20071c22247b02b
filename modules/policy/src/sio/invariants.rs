// SPDX-License-Identifier: GPL-2.0

//! Consistency checks of SIO's structures, for tests, fuzzing and debug
//! builds: compiled only with `test`, `debug_assertions` or the
//! `invariants` feature (in a kernel module, `--cfg 'feature="invariants"'`).

use super::{ListLinks, Sio, Slot, State, AT_HEAD, FIFOS, NIL};

impl<S> Sio<S>
where
    S: AsRef<[Slot]> + AsMut<[Slot]>,
{
    /// Checks the internal structures (for tests and fuzzing; O(n)):
    /// every list is well linked and holds exactly its requests, requests
    /// on no list have no links, and the count matches.
    pub fn check_invariants(&self) -> Result<(), &'static str> {
        let slots = self.slots();
        let valid = |i: u32| i == NIL || (i as usize) < slots.len();
        let heads = self.fifos.iter().chain([&self.at_head]);
        if !heads.flat_map(|l| [l.head, l.tail]).all(valid)
            || !slots
                .iter()
                .all(|s| valid(s.list.prev) && valid(s.list.next))
        {
            return Err("link out of range");
        }
        let mut listed = 0;
        for (q, list) in self.fifos.iter().enumerate() {
            listed += list.check(slots, |s| {
                s.state == State::Queued && usize::from(s.fifo) == q
            })?;
        }
        listed += self
            .at_head
            .check(slots, |s| s.state == State::AtHead && s.fifo == AT_HEAD)?;
        let mut queued = 0;
        for s in slots {
            match s.state {
                State::Queued if usize::from(s.fifo) >= FIFOS => {
                    return Err("queued request on no FIFO")
                }
                State::Queued | State::AtHead => queued += 1,
                _ if s.list != ListLinks::NONE => return Err("unqueued request has list links"),
                _ => {}
            }
        }
        if listed != queued {
            return Err("lists do not hold the queued requests");
        }
        if queued != self.queued {
            return Err("queued count wrong");
        }
        Ok(())
    }
}
