//! Linux native AIO (`io_setup`, `io_submit`, `io_getevents`,
//! `io_destroy`) through raw system calls, as libaio issues them: the
//! kernel ABI of `linux/aio_abi.h`, without linking libaio.

use std::io;

/// `struct iocb` (little-endian layout).
#[repr(C)]
#[derive(Default)]
struct Iocb {
    aio_data: u64,
    aio_key: u32,
    aio_rw_flags: i32,
    aio_lio_opcode: u16,
    aio_reqprio: i16,
    aio_fildes: u32,
    aio_buf: u64,
    aio_nbytes: u64,
    aio_offset: i64,
    aio_reserved2: u64,
    aio_flags: u32,
    aio_resfd: u32,
}

/// `struct io_event`.
#[repr(C)]
#[derive(Default, Clone, Copy)]
struct IoEvent {
    data: u64,
    obj: u64,
    res: i64,
    res2: i64,
}

const IOCB_CMD_PREAD: u16 = 0;

/// An AIO context (`aio_context_t`), destroyed on drop (which waits for
/// the requests still in flight).
pub struct Context {
    ctx: libc::c_ulong,
    /// Submitted and not yet reaped, with the buffers they read into.
    pending: Vec<(Box<Iocb>, Buf)>,
}

/// A buffer aligned for O_DIRECT.
pub struct Buf {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the buffer is plain memory owned by this value.
unsafe impl Send for Buf {}
unsafe impl Send for Context {}

impl Buf {
    pub fn new(len: usize) -> io::Result<Buf> {
        let mut p: *mut libc::c_void = std::ptr::null_mut();
        // SAFETY: posix_memalign writes an allocation of `len` bytes to `p`.
        let rc = unsafe { libc::posix_memalign(&mut p, 4096, len.max(512)) };
        if rc != 0 {
            return Err(io::Error::from_raw_os_error(rc));
        }
        Ok(Buf { ptr: p.cast(), len })
    }

    pub fn ptr(&self) -> *mut u8 {
        self.ptr
    }
}

impl Drop for Buf {
    fn drop(&mut self) {
        // SAFETY: allocated by posix_memalign, freed once.
        unsafe { libc::free(self.ptr.cast()) }
    }
}

fn check(rc: libc::c_long) -> io::Result<libc::c_long> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

impl Context {
    /// `io_setup(nr_events)`.
    pub fn new(nr_events: u32) -> io::Result<Context> {
        let mut ctx: libc::c_ulong = 0;
        // SAFETY: io_setup writes the context id to `ctx`.
        check(unsafe { libc::syscall(libc::SYS_io_setup, nr_events, &mut ctx) })?;
        Ok(Context {
            ctx,
            pending: Vec::new(),
        })
    }

    /// Submits one read of `buf.len` bytes at `offset` of `fd`.
    pub fn submit_read(&mut self, fd: i32, buf: Buf, offset: u64) -> io::Result<()> {
        let mut cb = Box::new(Iocb {
            aio_lio_opcode: IOCB_CMD_PREAD,
            aio_fildes: fd as u32,
            aio_buf: buf.ptr as u64,
            aio_nbytes: buf.len as u64,
            aio_offset: offset as i64,
            ..Iocb::default()
        });
        let mut list = [&mut *cb as *mut Iocb];
        // SAFETY: one valid iocb whose buffer lives in `pending` until reaped.
        let n = check(unsafe {
            libc::syscall(
                libc::SYS_io_submit,
                self.ctx,
                1 as libc::c_long,
                list.as_mut_ptr(),
            )
        })?;
        if n != 1 {
            return Err(io::Error::other("io_submit took no request"));
        }
        self.pending.push((cb, buf));
        Ok(())
    }

    /// Waits for every submitted request (`io_getevents(n, n)`).
    pub fn drain(&mut self) -> io::Result<()> {
        let n = self.pending.len();
        let mut got = 0;
        let mut ev = vec![IoEvent::default(); n.max(1)];
        while got < n {
            // SAFETY: `ev` has room for n - got events.
            let r = unsafe {
                libc::syscall(
                    libc::SYS_io_getevents,
                    self.ctx,
                    (n - got) as libc::c_long,
                    (n - got) as libc::c_long,
                    ev.as_mut_ptr(),
                    std::ptr::null_mut::<libc::timespec>(),
                )
            };
            match check(r) {
                Ok(k) => got += k as usize,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
            if let Some(bad) = ev[..].iter().take(r.max(0) as usize).find(|e| e.res < 0) {
                return Err(io::Error::from_raw_os_error(-bad.res as i32));
            }
        }
        self.pending.clear();
        Ok(())
    }

    pub fn pending(&self) -> usize {
        self.pending.len()
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        // SAFETY: destroys our own context; the kernel waits for in-flight requests.
        unsafe { libc::syscall(libc::SYS_io_destroy, self.ctx) };
    }
}
