//! A thin VFS over the platform's own that writes each commit's WAL frames
//! to the file in one `pwrite`.
//!
//! SQLite writes a frame as two calls, its 24-byte header and then its page,
//! so a group commit of a few dozen requests, which dirties some twenty
//! pages across the ack path's B-trees, cost some forty system calls, each
//! touching one or two page-cache folios: a fifth of the writer thread's
//! time on the ack path, measured, more than any other part. Here the
//! contiguous writes to a WAL file are gathered in memory and written
//! together when the commit frame is complete, or before anything else
//! touches the file (a read, a sync, its size, a truncation, closing it).
//!
//! What reaches the disk, and in which order, is unchanged: the frames are
//! in the file before the commit's sync (`synchronous=FULL`), and before
//! SQLite publishes the commit in the WAL index whatever the setting, as a
//! commit frame's page ends the run. A commit frame's header that does not
//! continue a run (SQLite rewrites headers in place to mend checksums, the
//! commit's last, with no page after it) is written at once, and nothing is
//! gathered on a WAL that SQLite pads to sectors (a device without
//! power-safe overwrite), where it splits a frame around a sync. Every
//! other file (the database, its shared-memory index) is the platform VFS's
//! own object, untouched. The format facts used (a frame header is 24
//! bytes; bytes 4..8 of a commit frame's header hold the database size, 0
//! in any other frame) are from SQLite's documented file format.

use std::ffi::{CStr, c_char, c_int, c_void};
use std::ptr;
use std::sync::OnceLock;

use rusqlite::ffi;

/// The name connections open with.
const NAME: &CStr = c"pointhook-wal-gather";
/// The most gathered before writing anyway (a large transaction's frames):
/// the unix VFS takes under 128 KiB per write call.
const MAX_GATHER: usize = 120 << 10;
/// A WAL frame header's size, in the documented file format.
const FRAME_HEADER: usize = 24;

/// Registers the VFS once and answers its name, or why it cannot be used.
pub(super) fn name() -> Result<&'static CStr, String> {
    static REGISTERED: OnceLock<Result<(), String>> = OnceLock::new();
    REGISTERED.get_or_init(register).clone().map(|()| NAME)
}

/// The platform VFS every call is handed to; set before registration.
static INNER: OnceLock<Platform> = OnceLock::new();

struct Platform(*mut ffi::sqlite3_vfs);
// SAFETY: SQLite's VFS objects are immutable once registered and meant to be
// used from any thread.
unsafe impl Send for Platform {}
unsafe impl Sync for Platform {}

fn register() -> Result<(), String> {
    // SAFETY: plain calls into SQLite; the copy it registers is leaked, as
    // a registered VFS must outlive every connection.
    unsafe {
        if ffi::sqlite3_initialize() != ffi::SQLITE_OK {
            return Err("SQLite did not initialize".into());
        }
        let platform = ffi::sqlite3_vfs_find(ptr::null());
        if platform.as_ref().and_then(|v| v.xOpen).is_none() {
            return Err("SQLite has no default VFS".into());
        }
        let _ = INNER.set(Platform(platform));
        let mut vfs = *platform;
        vfs.pNext = ptr::null_mut();
        vfs.zName = NAME.as_ptr();
        vfs.szOsFile = (*platform).szOsFile + HEADER as c_int;
        vfs.xOpen = Some(x_open);
        let rc = ffi::sqlite3_vfs_register(Box::into_raw(Box::new(vfs)), 0);
        if rc != ffi::SQLITE_OK {
            return Err(format!("cannot register the WAL-gathering VFS (code {rc})"));
        }
    }
    Ok(())
}

/// A WAL file: this header, then the platform's file object.
#[repr(C)]
struct Gather {
    base: ffi::sqlite3_file,
    inner: *mut ffi::sqlite3_file,
    pending: Vec<u8>,
    /// Where `pending` goes in the file.
    start: i64,
    /// Where the page of the commit frame just written starts: it ends the
    /// run, so the commit is in the file before SQLite publishes it.
    commit_page_at: Option<i64>,
    /// Off when SQLite pads the WAL to sectors (no power-safe overwrite):
    /// it then splits a frame around a sync and publishes the rest.
    gather: bool,
}

/// Where the platform's file object starts (kept 8-aligned, as SQLite's).
const HEADER: usize = std::mem::size_of::<Gather>().next_multiple_of(8);

fn platform() -> *mut ffi::sqlite3_vfs {
    INNER.get().map_or(ptr::null_mut(), |p| p.0)
}

unsafe extern "C" fn x_open(
    _vfs: *mut ffi::sqlite3_vfs,
    name: *const c_char,
    file: *mut ffi::sqlite3_file,
    flags: c_int,
    out_flags: *mut c_int,
) -> c_int {
    let vfs = platform();
    // SAFETY: registration set `vfs` before this VFS could be found; `file`
    // is `szOsFile` bytes, room for the header and the platform's object.
    unsafe {
        let Some(open) = vfs.as_ref().and_then(|v| v.xOpen) else {
            return ffi::SQLITE_CANTOPEN;
        };
        if flags & ffi::SQLITE_OPEN_WAL == 0 {
            // Any other file is the platform's object itself.
            return open(vfs, name, file, flags, out_flags);
        }
        let inner = file.cast::<u8>().add(HEADER).cast::<ffi::sqlite3_file>();
        (*inner).pMethods = ptr::null();
        let rc = open(vfs, name, inner, flags, out_flags);
        if rc != ffi::SQLITE_OK {
            if let Some(close) = (*inner).pMethods.as_ref().and_then(|m| m.xClose) {
                close(inner);
            }
            (*file).pMethods = ptr::null();
            return rc;
        }
        // SQLite pads when the database file lacks power-safe overwrite:
        // the build's default, or the database URI's `psow`, which the WAL
        // file's name carries too.
        let default = (*(*inner).pMethods)
            .xDeviceCharacteristics
            .map_or(0, |f| f(inner))
            & ffi::SQLITE_IOCAP_POWERSAFE_OVERWRITE;
        let psow = ffi::sqlite3_uri_boolean(name, c"psow".as_ptr(), c_int::from(default != 0));
        ptr::write(
            file.cast::<Gather>(),
            Gather {
                base: ffi::sqlite3_file { pMethods: &METHODS },
                inner,
                pending: Vec::new(),
                start: 0,
                commit_page_at: None,
                gather: psow != 0,
            },
        );
        ffi::SQLITE_OK
    }
}

static METHODS: ffi::sqlite3_io_methods = ffi::sqlite3_io_methods {
    iVersion: 3,
    xClose: Some(x_close),
    xRead: Some(x_read),
    xWrite: Some(x_write),
    xTruncate: Some(x_truncate),
    xSync: Some(x_sync),
    xFileSize: Some(x_file_size),
    xLock: Some(x_lock),
    xUnlock: Some(x_unlock),
    xCheckReservedLock: Some(x_check_reserved_lock),
    xFileControl: Some(x_file_control),
    xSectorSize: Some(x_sector_size),
    xDeviceCharacteristics: Some(x_device_characteristics),
    xShmMap: Some(x_shm_map),
    xShmLock: Some(x_shm_lock),
    xShmBarrier: Some(x_shm_barrier),
    xShmUnmap: Some(x_shm_unmap),
    xFetch: Some(x_fetch),
    xUnfetch: Some(x_unfetch),
};

/// The gathering header and the platform's methods for `file`.
///
/// # Safety
/// `file` is a WAL file `x_open` set up, and no other call on it runs.
unsafe fn parts<'a>(
    file: *mut ffi::sqlite3_file,
) -> (
    &'a mut Gather,
    *mut ffi::sqlite3_file,
    &'a ffi::sqlite3_io_methods,
) {
    // SAFETY: per the contract; the platform's methods are static.
    unsafe {
        let g = &mut *file.cast::<Gather>();
        let inner = g.inner;
        (g, inner, &*(*inner).pMethods)
    }
}

/// Writes what is gathered; the platform's answer is the caller's.
///
/// # Safety
/// As for `parts`.
unsafe fn flush(file: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: per the contract.
    unsafe {
        let (g, inner, m) = parts(file);
        g.commit_page_at = None;
        if g.pending.is_empty() {
            return ffi::SQLITE_OK;
        }
        let Some(write) = m.xWrite else {
            return ffi::SQLITE_IOERR_WRITE;
        };
        // MAX_GATHER bounds the length, so it fits.
        let rc = write(
            inner,
            g.pending.as_ptr().cast(),
            g.pending.len() as c_int,
            g.start,
        );
        g.pending.clear();
        rc
    }
}

unsafe extern "C" fn x_write(
    file: *mut ffi::sqlite3_file,
    data: *const c_void,
    amount: c_int,
    offset: i64,
) -> c_int {
    // SAFETY: SQLite passes its open file and `amount` readable bytes.
    unsafe {
        let len = usize::try_from(amount).unwrap_or(0);
        if len == 0 {
            return ffi::SQLITE_OK;
        }
        let bytes = std::slice::from_raw_parts(data.cast::<u8>(), len);
        let (g, inner, m) = parts(file);
        let follows =
            !g.pending.is_empty() && g.start.checked_add(g.pending.len() as i64) == Some(offset);
        let commit_page = g.commit_page_at.take() == Some(offset);
        let commit_header = len == FRAME_HEADER && bytes[4..8] != [0; 4];
        if !g.pending.is_empty() && (!follows || g.pending.len() + len > MAX_GATHER) {
            let rc = flush(file);
            if rc != ffi::SQLITE_OK {
                return rc;
            }
        }
        // A commit header's page comes next, unless this is a rewrite.
        let page_at = if commit_header {
            offset.checked_add(FRAME_HEADER as i64)
        } else {
            None
        };
        let (g, ..) = parts(file);
        // Written at once, after the run: everything when gathering is off;
        // a commit frame's header that does not continue a run (SQLite
        // rewrites headers in place to mend checksums, the commit's last,
        // and no page follows it); what does not fit.
        let alone = !g.gather || (commit_header && !follows) || len > MAX_GATHER;
        if alone || g.pending.try_reserve(len).is_err() {
            let rc = flush(file);
            if rc != ffi::SQLITE_OK {
                return rc;
            }
            let rc = match m.xWrite {
                Some(write) => write(inner, data, amount, offset),
                None => ffi::SQLITE_IOERR_WRITE,
            };
            parts(file).0.commit_page_at = page_at;
            return rc;
        }
        if g.pending.is_empty() {
            g.start = offset;
        }
        g.pending.extend_from_slice(bytes);
        if commit_page {
            return flush(file);
        }
        g.commit_page_at = page_at;
        ffi::SQLITE_OK
    }
}

/// Generates a method that writes what is gathered, then hands the call on.
macro_rules! flushing {
    ($name:ident, $method:ident, ($($arg:ident: $ty:ty),*), $missing:expr) => {
        unsafe extern "C" fn $name(file: *mut ffi::sqlite3_file $(, $arg: $ty)*) -> c_int {
            // SAFETY: SQLite calls this on a WAL file `x_open` set up.
            unsafe {
                let rc = flush(file);
                if rc != ffi::SQLITE_OK {
                    return rc;
                }
                let (_, inner, m) = parts(file);
                match m.$method {
                    Some(f) => f(inner $(, $arg)*),
                    None => $missing,
                }
            }
        }
    };
}

flushing!(x_read, xRead, (data: *mut c_void, amount: c_int, offset: i64), ffi::SQLITE_IOERR_READ);
flushing!(x_truncate, xTruncate, (size: i64), ffi::SQLITE_IOERR_TRUNCATE);
flushing!(x_sync, xSync, (flags: c_int), ffi::SQLITE_IOERR_FSYNC);
flushing!(x_file_size, xFileSize, (size: *mut i64), ffi::SQLITE_IOERR_FSTAT);
flushing!(x_lock, xLock, (level: c_int), ffi::SQLITE_OK);
flushing!(x_unlock, xUnlock, (level: c_int), ffi::SQLITE_OK);
flushing!(x_check_reserved_lock, xCheckReservedLock, (out: *mut c_int), ffi::SQLITE_OK);
flushing!(x_file_control, xFileControl, (op: c_int, arg: *mut c_void), ffi::SQLITE_NOTFOUND);
flushing!(x_shm_map, xShmMap, (page: c_int, size: c_int, extend: c_int, out: *mut *mut c_void), ffi::SQLITE_IOERR_SHMMAP);
flushing!(x_shm_lock, xShmLock, (offset: c_int, n: c_int, flags: c_int), ffi::SQLITE_IOERR_SHMLOCK);
flushing!(x_shm_unmap, xShmUnmap, (delete: c_int), ffi::SQLITE_OK);
flushing!(x_unfetch, xUnfetch, (offset: i64, p: *mut c_void), ffi::SQLITE_OK);

unsafe extern "C" fn x_fetch(
    file: *mut ffi::sqlite3_file,
    offset: i64,
    amount: c_int,
    out: *mut *mut c_void,
) -> c_int {
    // SAFETY: SQLite calls this on a WAL file `x_open` set up.
    unsafe {
        let rc = flush(file);
        if rc != ffi::SQLITE_OK {
            return rc;
        }
        let (_, inner, m) = parts(file);
        match m.xFetch {
            Some(f) => f(inner, offset, amount, out),
            None => {
                // No memory map: SQLite reads instead.
                *out = ptr::null_mut();
                ffi::SQLITE_OK
            }
        }
    }
}

unsafe extern "C" fn x_shm_barrier(file: *mut ffi::sqlite3_file) {
    // SAFETY: SQLite calls this on a WAL file `x_open` set up.
    unsafe {
        let _ = flush(file);
        let (_, inner, m) = parts(file);
        if let Some(f) = m.xShmBarrier {
            f(inner);
        }
    }
}

unsafe extern "C" fn x_sector_size(file: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: SQLite calls this on a WAL file `x_open` set up.
    unsafe {
        let (_, inner, m) = parts(file);
        m.xSectorSize.map_or(4096, |f| f(inner))
    }
}

unsafe extern "C" fn x_device_characteristics(file: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: SQLite calls this on a WAL file `x_open` set up.
    unsafe {
        let (_, inner, m) = parts(file);
        m.xDeviceCharacteristics.map_or(0, |f| f(inner))
    }
}

unsafe extern "C" fn x_close(file: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: SQLite closes a file once; the header is dropped after it.
    unsafe {
        let flushed = flush(file);
        let (g, inner, m) = parts(file);
        let closed = m.xClose.map_or(ffi::SQLITE_OK, |f| f(inner));
        ptr::drop_in_place(&mut g.pending);
        g.base.pMethods = ptr::null();
        if flushed != ffi::SQLITE_OK {
            flushed
        } else {
            closed
        }
    }
}

#[cfg(test)]
mod tests;
