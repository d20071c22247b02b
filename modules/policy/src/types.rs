// SPDX-License-Identifier: GPL-2.0

//! Types shared by every policy and by both of the policy crate's homes
//! (the kernel modules and the host simulator).
//!
//! Nothing here reads a clock or allocates: time is passed in as
//! nanoseconds and storage is handed in by the caller.

use core::ffi::CStr;

/// Monotonic time in nanoseconds, as the caller measures it.
pub type Nanos = u64;

/// A position on the device, in 512-byte sectors.
pub type Sector = u64;

/// The small index that names a request inside a policy.
///
/// The kernel side uses the request's scheduler tag (made unique across
/// hardware queues); the host side uses a slot number. It must be below
/// the request capacity the policy was created with.
pub type Tag = usize;

/// The small index that names an issuer (a process, or an I/O context).
///
/// Callers map their own notion of "who issued this" onto `0..issuers`.
pub type IssuerId = usize;

/// One millisecond in [`Nanos`].
pub const NSEC_PER_MSEC: Nanos = 1_000_000;
/// One microsecond in [`Nanos`].
pub const NSEC_PER_USEC: Nanos = 1_000;

/// What a request does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    /// A read.
    Read,
    /// A write.
    Write,
    /// A cache flush (no data).
    Flush,
    /// A discard (trim).
    Discard,
}

impl Op {
    /// The direction index used by per-direction structures: reads are 0,
    /// everything else counts as a write, as `op_is_write()` says for
    /// writes and discards. (C's `rq_data_dir()` calls a flush a read, but
    /// flushes never reach an elevator: blk-mq's flush machinery takes them.)
    pub const fn dir(self) -> usize {
        match self {
            Op::Read => 0,
            _ => 1,
        }
    }

    /// Whether this is a read.
    pub const fn is_read(self) -> bool {
        matches!(self, Op::Read)
    }
}

/// I/O priority class, in the order they are served.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PrioClass {
    /// Real time: served before everything else.
    RealTime = 0,
    /// Best effort: the default (`IOPRIO_CLASS_NONE` maps here).
    BestEffort = 1,
    /// Idle: served only when nothing else waits.
    Idle = 2,
}

impl PrioClass {
    /// Number of classes.
    pub const COUNT: usize = 3;

    /// The index of this class, `0..COUNT`, highest priority first.
    pub const fn index(self) -> usize {
        self as usize
    }

    /// Maps the kernel's `IOPRIO_CLASS_*` value (0 none, 1 RT, 2 BE, 3 IDLE)
    /// onto a class; unknown values count as best effort.
    pub const fn from_kernel(class: u16) -> Self {
        match class {
            1 => PrioClass::RealTime,
            3 => PrioClass::Idle,
            _ => PrioClass::BestEffort,
        }
    }
}

/// An I/O priority: class and level (0 highest .. 7 lowest).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct IoPrio {
    /// The class.
    pub class: PrioClass,
    /// The level within the class, 0..=7 (0 is the highest priority).
    pub level: u8,
}

impl IoPrio {
    /// Number of levels per class.
    pub const LEVELS: u8 = 8;

    /// The default priority: best effort, level 4.
    pub const DEFAULT: IoPrio = IoPrio {
        class: PrioClass::BestEffort,
        level: 4,
    };

    /// Decodes the kernel's `ioprio` value (class in bits 13..15, level
    /// in bits 0..2). Class 0 ("none") is best effort at level 4.
    pub const fn from_kernel(ioprio: u16) -> Self {
        let class = ioprio >> 13;
        if class == 0 {
            return IoPrio::DEFAULT;
        }
        IoPrio {
            class: PrioClass::from_kernel(class),
            level: (ioprio & 0x7) as u8,
        }
    }
}

impl Default for IoPrio {
    fn default() -> Self {
        IoPrio::DEFAULT
    }
}

/// What the scheduler is told about a request when it is inserted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequestDesc {
    /// First sector.
    pub sector: Sector,
    /// Length in sectors (0 for a flush).
    pub sectors: u32,
    /// Operation.
    pub op: Op,
    /// Whether the issuer waits for it (`REQ_SYNC`, and every read).
    pub sync: bool,
    /// I/O priority.
    pub prio: IoPrio,
    /// Who issued it.
    pub issuer: IssuerId,
    /// When it was inserted into the scheduler.
    pub arrival: Nanos,
}

impl RequestDesc {
    /// The sector just past the request's end.
    pub const fn end(&self) -> Sector {
        self.sector.saturating_add(self.sectors as Sector)
    }
}

impl Default for RequestDesc {
    fn default() -> Self {
        RequestDesc {
            sector: 0,
            sectors: 0,
            op: Op::Read,
            sync: true,
            prio: IoPrio::DEFAULT,
            issuer: 0,
            arrival: 0,
        }
    }
}

/// What `dispatch` hands back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dispatch {
    /// Send this request to the device now.
    Request(Tag),
    /// Requests wait, but the policy chooses to wait for the in-service
    /// issuer until this time; the caller must run the queue again then
    /// (or earlier, when a request arrives).
    IdleUntil(Nanos),
    /// Nothing to send.
    Empty,
}

/// Why a tunable could not be read or written. Whatever the error, the
/// tunable keeps its old value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TunableError {
    /// No tunable of that name.
    UnknownName,
    /// The text is not a number (kernel: `-EINVAL`).
    Invalid,
    /// A number, but outside the tunable's range (kernel: `-EINVAL`).
    OutOfRange,
    /// The tunable can only be read (kernel: `-EINVAL`).
    ReadOnly,
}

/// Where the kernel keeps the depth that limits requests other than
/// synchronous reads, from which mq-deadline and BFQ derive their depth
/// limits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AsyncDepth {
    /// In each elevator (Linux 6.12): mq-deadline's `async_depth`
    /// tunable, reset to `nr_requests` on every depth change; BFQ's
    /// fractions of its scheduler tags.
    #[default]
    Elevator,
    /// In the request queue (Linux 7.3): `queue/async_depth`, which the
    /// block layer scales when `nr_requests` changes and an elevator sets
    /// when it is attached; mq-deadline's tunable is gone.
    Queue,
}

/// Why a policy could not be set up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SetupError {
    /// The storage handed in does not match the requested capacity.
    StorageSize,
    /// A capacity of zero or beyond what the policy supports.
    Capacity,
}

/// Parses a sysfs write the way the kernel's `kstrtoint(buf, 0, ..)` does:
/// optional sign, then decimal, `0x`/`0X` hexadecimal or `0` octal, then at
/// most one trailing newline. Anything else is [`TunableError::Invalid`].
pub fn parse_sysfs_int(text: &str) -> Result<i64, TunableError> {
    let text = text.strip_suffix('\n').unwrap_or(text);
    let (negative, digits) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    let (radix, digits) = if let Some(hex) = digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
    {
        (16, hex)
    } else if digits.len() > 1 && digits.starts_with('0') {
        (8, &digits[1..])
    } else {
        (10, digits)
    };
    if digits.is_empty() || !digits.bytes().all(|b| (b as char).is_digit(radix)) {
        return Err(TunableError::Invalid);
    }
    let magnitude = i64::from_str_radix(digits, radix).map_err(|_| TunableError::OutOfRange)?;
    Ok(if negative { -magnitude } else { magnitude })
}

/// The tunables' names as `&str`, from the one list a policy declares as
/// C strings (the sysfs attribute names the kernel module registers). A
/// name that is not UTF-8 fails the build.
pub(crate) const fn tunable_names<const N: usize>(names: [&'static CStr; N]) -> [&'static str; N] {
    let mut out = [""; N];
    let mut i = 0;
    while i < N {
        out[i] = match core::str::from_utf8(names[i].to_bytes()) {
            Ok(name) => name,
            Err(_) => panic!("a tunable name is not UTF-8"),
        };
        i += 1;
    }
    out
}

/// Parses a sysfs write and checks it against an inclusive range.
pub fn parse_sysfs_in_range(text: &str, min: i64, max: i64) -> Result<i64, TunableError> {
    let value = parse_sysfs_int(text)?;
    if value < min || value > max {
        return Err(TunableError::OutOfRange);
    }
    Ok(value)
}

/// Where a bio would join an existing request, as the block layer asks
/// (`ELEVATOR_FRONT_MERGE`: the bio ends where the request starts).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MergeProbe {
    /// The sector just past the bio's end.
    pub bio_end: Sector,
    /// The bio's operation.
    pub op: Op,
    /// The bio's priority.
    pub prio: IoPrio,
}

/// The operations of an elevator, as a policy sees them.
///
/// Every method is O(log n) or better and never allocates. A caller that
/// breaks the protocol (a tag out of range, a tag inserted twice,
/// completing a tag that was never dispatched) gets unspecified but safe
/// behaviour: no panic, no memory unsafety, possibly a lost request.
pub trait Policy {
    /// A request enters the scheduler. `at_head` is the block layer's
    /// `BLK_MQ_INSERT_AT_HEAD` (requeues, flush sequences, passthrough):
    /// such requests go out before anything else. Among themselves they go
    /// in the order the policy's C original uses (mq-deadline's
    /// `list_add()`: the latest first).
    fn insert(&mut self, tag: Tag, desc: &RequestDesc, at_head: bool, now: Nanos);

    /// Picks the next request to send to the device, removing it from the
    /// scheduler, or says why there is none.
    fn dispatch(&mut self, now: Nanos) -> Dispatch;

    /// Whether any request waits in the scheduler.
    fn has_work(&self) -> bool;

    /// Number of requests waiting in the scheduler (not dispatched).
    fn queued(&self) -> usize;

    /// A dispatched request finished on the device.
    fn completed(&mut self, tag: Tag, now: Nanos);

    /// A dispatched request was handed back by the driver and will be
    /// inserted again (at head) by the caller; it is no longer in flight.
    fn requeued(&mut self, tag: Tag, now: Nanos);

    /// A queued request that a bio could be front-merged into, if any.
    fn front_merge_candidate(&self, probe: &MergeProbe) -> Option<Tag>;

    /// The queued request `tag` grew at its front (a front merge): it now
    /// starts at `new_sector` and is `new_sectors` long.
    fn front_merged(&mut self, tag: Tag, new_sector: Sector, new_sectors: u32);

    /// The queued request `tag` grew at its end (a bio was back-merged
    /// into it): it now is `new_sectors` long, from the same start. A
    /// policy that charges by size must see this, as C's `blk_rq_sectors()`
    /// would at dispatch.
    fn back_merged(&mut self, tag: Tag, new_sectors: u32);

    /// The queued request `next` was merged into the queued request `into`
    /// and is gone; `into` now covers both.
    fn requests_merged(&mut self, into: Tag, next: Tag);

    /// Whether an async request or a write should be limited in depth, and
    /// to what (`async_depth`). `None` means no limit.
    fn async_depth_limit(&self, _op: Op, _sync: bool) -> Option<u32> {
        None
    }

    /// The tunables' names, in the order sysfs lists them.
    fn tunables(&self) -> &'static [&'static str];

    /// Reads a tunable in its sysfs unit.
    fn tunable(&self, name: &str) -> Result<i64, TunableError>;

    /// Writes a tunable from its sysfs text; on error the value stays.
    fn set_tunable(&mut self, name: &str, text: &str) -> Result<(), TunableError>;
}
