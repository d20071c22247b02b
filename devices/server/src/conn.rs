// SPDX-License-Identifier: GPL-2.0

//! One client connection: the handshake, then requests until the client
//! disconnects. Data moves at once (the backing file); replies wait for
//! the export's model. A request the protocol lets the server refuse gets
//! an error reply; a request it cannot parse (wrong magic) or an
//! oversized option closes the connection.

use crate::export::{Conn, Export};
use crate::nbd::{self, Request};
use ironlift_devmodel::Op;
use std::io::{self, Read, Write};
use std::os::unix::fs::FileExt;
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::time::Duration;

/// Serves a client on `stream` until it leaves.
pub fn serve(stream: UnixStream, exports: &[Arc<Export>]) -> io::Result<()> {
    let mut r = stream.try_clone()?;
    let mut w = stream.try_clone()?;
    let Some(export) = handshake(&mut r, &mut w, exports)? else {
        return Ok(());
    };
    export.connected();
    let conn = Arc::new(Conn::new(stream));
    let end = transmission(&mut r, &export, &conn);
    // Replies still modelled go out before the connection closes.
    conn.drain(Duration::from_secs(30));
    let _ = w.shutdown(std::net::Shutdown::Both);
    end
}

fn transmission_flags(e: &Export) -> u16 {
    let mut f = nbd::FLAG_HAS_FLAGS | nbd::FLAG_SEND_FLUSH | nbd::FLAG_SEND_TRIM;
    if e.rotational {
        f |= nbd::FLAG_ROTATIONAL;
    }
    f
}

/// The fixed newstyle handshake: the export chosen, or `None` if the
/// client aborted or asked for an export by NBD_OPT_EXPORT_NAME that does
/// not exist.
fn handshake(
    r: &mut impl Read,
    w: &mut impl Write,
    exports: &[Arc<Export>],
) -> io::Result<Option<Arc<Export>>> {
    let mut hello = Vec::new();
    hello.extend_from_slice(&nbd::NBDMAGIC.to_be_bytes());
    hello.extend_from_slice(&nbd::IHAVEOPT.to_be_bytes());
    hello.extend_from_slice(&(nbd::FLAG_FIXED_NEWSTYLE | nbd::FLAG_NO_ZEROES).to_be_bytes());
    w.write_all(&hello)?;
    let client = nbd::read_u32(r)?;
    if client & !(nbd::FLAG_C_FIXED_NEWSTYLE | nbd::FLAG_C_NO_ZEROES) != 0 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "unknown client flags",
        ));
    }
    let no_zeroes = client & nbd::FLAG_C_NO_ZEROES != 0;
    loop {
        if nbd::read_u64(r)? != nbd::IHAVEOPT {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "bad option magic",
            ));
        }
        let opt = nbd::read_u32(r)?;
        let len = nbd::read_u32(r)?;
        if len > nbd::MAX_OPTION {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "option too long",
            ));
        }
        let mut data = vec![0; len as usize];
        r.read_exact(&mut data)?;
        let find = |name: &str| exports.iter().find(|e| e.name == name).cloned();
        match opt {
            nbd::OPT_EXPORT_NAME => {
                let Some(e) = String::from_utf8(data).ok().and_then(|n| find(&n)) else {
                    return Ok(None);
                };
                let mut b = e.size.to_be_bytes().to_vec();
                b.extend_from_slice(&transmission_flags(&e).to_be_bytes());
                if !no_zeroes {
                    b.extend_from_slice(&[0; 124]);
                }
                w.write_all(&b)?;
                return Ok(Some(e));
            }
            nbd::OPT_ABORT => {
                nbd::option_reply(w, opt, nbd::REP_ACK, &[])?;
                return Ok(None);
            }
            nbd::OPT_LIST if len != 0 => nbd::option_reply(w, opt, nbd::REP_ERR_INVALID, &[])?,
            nbd::OPT_LIST => {
                for e in exports {
                    let mut d = (e.name.len() as u32).to_be_bytes().to_vec();
                    d.extend_from_slice(e.name.as_bytes());
                    nbd::option_reply(w, opt, nbd::REP_SERVER, &d)?;
                }
                nbd::option_reply(w, opt, nbd::REP_ACK, &[])?;
            }
            nbd::OPT_INFO | nbd::OPT_GO => {
                let chosen = info(w, opt, &data, exports)?;
                if opt == nbd::OPT_GO && chosen.is_some() {
                    return Ok(chosen);
                }
            }
            _ => nbd::option_reply(w, opt, nbd::REP_ERR_UNSUP, &[])?,
        }
    }
}

/// Answers NBD_OPT_INFO or NBD_OPT_GO: the export, if it exists.
fn info(
    w: &mut impl Write,
    opt: u32,
    data: &[u8],
    exports: &[Arc<Export>],
) -> io::Result<Option<Arc<Export>>> {
    let Some((name, infos)) = nbd::parse_go(data) else {
        nbd::option_reply(w, opt, nbd::REP_ERR_INVALID, &[])?;
        return Ok(None);
    };
    let Some(e) = exports.iter().find(|e| e.name == name) else {
        nbd::option_reply(w, opt, nbd::REP_ERR_UNKNOWN, &[])?;
        return Ok(None);
    };
    let mut d = nbd::INFO_EXPORT.to_be_bytes().to_vec();
    d.extend_from_slice(&e.size.to_be_bytes());
    d.extend_from_slice(&transmission_flags(e).to_be_bytes());
    nbd::option_reply(w, opt, nbd::REP_INFO, &d)?;
    if infos.contains(&nbd::INFO_BLOCK_SIZE) {
        let mut d = nbd::INFO_BLOCK_SIZE.to_be_bytes().to_vec();
        for v in [512u32, 4096, nbd::MAX_PAYLOAD] {
            d.extend_from_slice(&v.to_be_bytes());
        }
        nbd::option_reply(w, opt, nbd::REP_INFO, &d)?;
    }
    nbd::option_reply(w, opt, nbd::REP_ACK, &[])?;
    Ok(Some(e.clone()))
}

/// Reads and throws away `n` bytes of payload.
fn discard(r: &mut impl Read, n: u64) -> io::Result<()> {
    let copied = io::copy(&mut r.take(n), &mut io::sink())?;
    if copied < n {
        return Err(io::ErrorKind::UnexpectedEof.into());
    }
    Ok(())
}

/// Requests until NBD_CMD_DISC or the end of the stream.
fn transmission(r: &mut impl Read, e: &Arc<Export>, conn: &Arc<Conn>) -> io::Result<()> {
    let mut hdr = [0; 28];
    loop {
        match r.read_exact(&mut hdr) {
            Ok(()) => {}
            Err(err) if err.kind() == io::ErrorKind::UnexpectedEof => return Ok(()),
            Err(err) => return Err(err),
        }
        let Some(q) = Request::parse(&hdr) else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "bad request magic",
            ));
        };
        let in_range = q
            .offset
            .checked_add(u64::from(q.length))
            .is_some_and(|end| end <= e.size);
        let refuse = |error| {
            e.refused();
            conn.reply(error, q.handle, &[])
        };
        match q.kind {
            nbd::CMD_READ if !in_range || q.length > nbd::MAX_PAYLOAD => refuse(nbd::EINVAL)?,
            nbd::CMD_READ => {
                let mut data = vec![0; q.length as usize];
                match e.file.read_exact_at(&mut data, q.offset) {
                    Ok(()) => e.submit(conn, q.handle, Op::Read, q.offset, q.length, data),
                    Err(_) => refuse(nbd::EIO)?,
                }
            }
            nbd::CMD_WRITE if q.length > nbd::MAX_PAYLOAD => {
                discard(r, u64::from(q.length))?;
                refuse(nbd::EINVAL)?;
            }
            nbd::CMD_WRITE => {
                let mut data = vec![0; q.length as usize];
                r.read_exact(&mut data)?;
                if !in_range {
                    refuse(nbd::ENOSPC)?;
                } else if e.file.write_all_at(&data, q.offset).is_err() {
                    refuse(nbd::EIO)?;
                } else {
                    e.submit(conn, q.handle, Op::Write, q.offset, q.length, Vec::new());
                }
            }
            nbd::CMD_DISC => return Ok(()),
            nbd::CMD_FLUSH if q.offset != 0 || q.length != 0 => refuse(nbd::EINVAL)?,
            nbd::CMD_FLUSH => e.submit(conn, q.handle, Op::Flush, 0, 0, Vec::new()),
            nbd::CMD_TRIM if !in_range => refuse(nbd::EINVAL)?,
            nbd::CMD_TRIM => e.submit(conn, q.handle, Op::Discard, q.offset, q.length, Vec::new()),
            _ => refuse(nbd::EINVAL)?,
        }
    }
}
