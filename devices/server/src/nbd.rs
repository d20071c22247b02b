// SPDX-License-Identifier: GPL-2.0

//! The NBD protocol as the server speaks it: the fixed newstyle
//! handshake (NBD_OPT_EXPORT_NAME, NBD_OPT_GO, NBD_OPT_INFO,
//! NBD_OPT_LIST, NBD_OPT_ABORT; every other option answered
//! NBD_REP_ERR_UNSUP) and simple replies in transmission.
//!
//! Reference: the NBD protocol document (doc/proto.md of the nbd project).

use std::io::{self, Read, Write};

/// "NBDMAGIC".
pub const NBDMAGIC: u64 = 0x4e42_444d_4147_4943;
/// "IHAVEOPT": the newstyle magic, also before every option.
pub const IHAVEOPT: u64 = 0x4948_4156_454f_5054;
/// Before every option reply.
pub const REPLY_MAGIC: u64 = 0x0003_e889_0455_65a9;
/// Before every request.
pub const REQUEST_MAGIC: u32 = 0x2560_9513;
/// Before every simple reply.
pub const SIMPLE_REPLY_MAGIC: u32 = 0x6744_6698;

/// Handshake flags.
pub const FLAG_FIXED_NEWSTYLE: u16 = 1;
/// See [`FLAG_FIXED_NEWSTYLE`].
pub const FLAG_NO_ZEROES: u16 = 2;
/// Client flags.
pub const FLAG_C_FIXED_NEWSTYLE: u32 = 1;
/// See [`FLAG_C_FIXED_NEWSTYLE`].
pub const FLAG_C_NO_ZEROES: u32 = 2;

/// Transmission flags.
pub const FLAG_HAS_FLAGS: u16 = 1;
/// See [`FLAG_HAS_FLAGS`].
pub const FLAG_SEND_FLUSH: u16 = 1 << 2;
/// See [`FLAG_HAS_FLAGS`].
pub const FLAG_ROTATIONAL: u16 = 1 << 4;
/// See [`FLAG_HAS_FLAGS`].
pub const FLAG_SEND_TRIM: u16 = 1 << 5;

/// Options.
pub const OPT_EXPORT_NAME: u32 = 1;
/// See [`OPT_EXPORT_NAME`].
pub const OPT_ABORT: u32 = 2;
/// See [`OPT_EXPORT_NAME`].
pub const OPT_LIST: u32 = 3;
/// See [`OPT_EXPORT_NAME`].
pub const OPT_INFO: u32 = 6;
/// See [`OPT_EXPORT_NAME`].
pub const OPT_GO: u32 = 7;

/// Option replies.
pub const REP_ACK: u32 = 1;
/// See [`REP_ACK`].
pub const REP_SERVER: u32 = 2;
/// See [`REP_ACK`].
pub const REP_INFO: u32 = 3;
/// See [`REP_ACK`].
pub const REP_ERR_UNSUP: u32 = (1 << 31) + 1;
/// See [`REP_ACK`].
pub const REP_ERR_INVALID: u32 = (1 << 31) + 3;
/// See [`REP_ACK`].
pub const REP_ERR_UNKNOWN: u32 = (1 << 31) + 6;

/// Info types.
pub const INFO_EXPORT: u16 = 0;
/// See [`INFO_EXPORT`].
pub const INFO_BLOCK_SIZE: u16 = 3;

/// Commands.
pub const CMD_READ: u16 = 0;
/// See [`CMD_READ`].
pub const CMD_WRITE: u16 = 1;
/// See [`CMD_READ`].
pub const CMD_DISC: u16 = 2;
/// See [`CMD_READ`].
pub const CMD_FLUSH: u16 = 3;
/// See [`CMD_READ`].
pub const CMD_TRIM: u16 = 4;

/// Error values in replies (Linux errno numbers, as the protocol has them).
pub const EIO: u32 = 5;
/// See [`EIO`].
pub const EINVAL: u32 = 22;
/// See [`EIO`].
pub const ENOSPC: u32 = 28;

/// The largest option payload the server reads; a longer one closes the
/// connection.
pub const MAX_OPTION: u32 = 64 * 1024;
/// The largest READ or WRITE payload; a longer one gets EINVAL.
pub const MAX_PAYLOAD: u32 = 32 << 20;

/// A request header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    /// Command flags.
    pub flags: u16,
    /// Command type.
    pub kind: u16,
    /// The client's handle, echoed in the reply.
    pub handle: u64,
    /// Byte offset.
    pub offset: u64,
    /// Byte length.
    pub length: u32,
}

impl Request {
    /// Parses a request header; `None` if its magic is wrong.
    pub fn parse(b: &[u8; 28]) -> Option<Request> {
        let u32_at = |i: usize| u32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let u64_at = |i: usize| {
            let mut x = [0; 8];
            x.copy_from_slice(&b[i..i + 8]);
            u64::from_be_bytes(x)
        };
        if u32_at(0) != REQUEST_MAGIC {
            return None;
        }
        Some(Request {
            flags: u16::from_be_bytes([b[4], b[5]]),
            kind: u16::from_be_bytes([b[6], b[7]]),
            handle: u64_at(8),
            offset: u64_at(16),
            length: u32_at(24),
        })
    }

    /// The header's bytes.
    #[cfg(test)]
    pub fn to_bytes(self) -> [u8; 28] {
        let mut b = [0; 28];
        b[0..4].copy_from_slice(&REQUEST_MAGIC.to_be_bytes());
        b[4..6].copy_from_slice(&self.flags.to_be_bytes());
        b[6..8].copy_from_slice(&self.kind.to_be_bytes());
        b[8..16].copy_from_slice(&self.handle.to_be_bytes());
        b[16..24].copy_from_slice(&self.offset.to_be_bytes());
        b[24..28].copy_from_slice(&self.length.to_be_bytes());
        b
    }
}

/// A simple reply's header.
pub fn simple_reply(error: u32, handle: u64) -> [u8; 16] {
    let mut b = [0; 16];
    b[0..4].copy_from_slice(&SIMPLE_REPLY_MAGIC.to_be_bytes());
    b[4..8].copy_from_slice(&error.to_be_bytes());
    b[8..16].copy_from_slice(&handle.to_be_bytes());
    b
}

/// Writes an option reply.
pub fn option_reply(w: &mut impl Write, opt: u32, kind: u32, data: &[u8]) -> io::Result<()> {
    let len = u32::try_from(data.len()).map_err(|_| io::ErrorKind::InvalidInput)?;
    let mut b = Vec::with_capacity(20 + data.len());
    b.extend_from_slice(&REPLY_MAGIC.to_be_bytes());
    b.extend_from_slice(&opt.to_be_bytes());
    b.extend_from_slice(&kind.to_be_bytes());
    b.extend_from_slice(&len.to_be_bytes());
    b.extend_from_slice(data);
    w.write_all(&b)
}

/// Reads a big-endian u32.
pub fn read_u32(r: &mut impl Read) -> io::Result<u32> {
    let mut b = [0; 4];
    r.read_exact(&mut b)?;
    Ok(u32::from_be_bytes(b))
}

/// Reads a big-endian u64.
pub fn read_u64(r: &mut impl Read) -> io::Result<u64> {
    let mut b = [0; 8];
    r.read_exact(&mut b)?;
    Ok(u64::from_be_bytes(b))
}

/// What NBD_OPT_INFO or NBD_OPT_GO asks: the export's name and the info
/// types requested. `None` if the payload is malformed.
pub fn parse_go(data: &[u8]) -> Option<(String, Vec<u16>)> {
    let name_len = u32::from_be_bytes(data.get(0..4)?.try_into().ok()?) as usize;
    let name = data.get(4..4usize.checked_add(name_len)?)?;
    let rest = &data[4 + name_len..];
    let n = u16::from_be_bytes(rest.get(0..2)?.try_into().ok()?) as usize;
    let infos = rest.get(2..)?;
    if infos.len() != 2 * n {
        return None;
    }
    let infos = infos
        .chunks_exact(2)
        .map(|c| u16::from_be_bytes([c[0], c[1]]))
        .collect();
    Some((String::from_utf8(name.to_vec()).ok()?, infos))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_round_trip_and_bad_magic_is_refused() {
        let r = Request {
            flags: 1,
            kind: CMD_WRITE,
            handle: 0xdead_beef,
            offset: 4096,
            length: 512,
        };
        assert_eq!(Request::parse(&r.to_bytes()), Some(r));
        let mut b = r.to_bytes();
        b[0] ^= 1;
        assert_eq!(Request::parse(&b), None);
    }

    #[test]
    fn go_payloads_parse_or_are_refused() {
        let mut d = 3u32.to_be_bytes().to_vec();
        d.extend_from_slice(b"hdd");
        d.extend_from_slice(&1u16.to_be_bytes());
        d.extend_from_slice(&INFO_BLOCK_SIZE.to_be_bytes());
        assert_eq!(parse_go(&d), Some(("hdd".into(), vec![INFO_BLOCK_SIZE])));
        assert_eq!(parse_go(&d[..d.len() - 1]), None);
        assert_eq!(parse_go(&[0, 0, 0xff, 0xff, 1]), None);
        assert_eq!(parse_go(&[0xff; 4]), None);
        assert_eq!(parse_go(&[]), None);
    }
}
