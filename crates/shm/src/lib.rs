//! Shared memory between a primary server and its backup on one host: the primary writes the
//! values of its large pieces into an arena (a `memfd` it maps), and tells the backup only
//! where each one lies; the backup maps the same memory and keeps each piece's bytes where they
//! are, so a value crosses no socket and the backup copies nothing.
//!
//! The backup opens the arena through `/proc/<pid>/fd/<fd>` of the primary (a peer that knows
//! the job's secret, on a Unix socket of this host), and takes it only if its size is sealed,
//! so no page can vanish under the mapping, and it starts with the random token the primary
//! sent (a process id may name another process, in another pid namespace of the same host,
//! which may hold an arena too). What it maps stays valid after the primary is gone (the
//! memory lives while any process maps it): the pieces it holds survive their primary as bytes
//! received over a socket would.
//!
//! A region the primary wrote stays the backup's until the backup lets go of it (it stored a
//! newer state of the piece, and no pull reply still holds the old one); the backup reports the
//! regions it let go in its answers to the primary's next Replicate frames, and the primary
//! reuses them. When the arena is full, a piece travels over the socket as before.
//!
//! The `unsafe` code of mxrs's servers is here (the parameter server's crate has none): the
//! mappings, and the slices of them a backup hands out, which rely on the primary writing no
//! region the backup holds. A primary that broke that rule could change the values the backup
//! keeps, as it could by sending other ones, but never make the backup read outside its
//! mapping: every region is checked against it.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use bytes::{BufMut, Bytes};
use parking_lot::Mutex;

/// Why a backup cannot use a primary's shared memory, or a region of it.
#[derive(Debug, thiserror::Error)]
pub enum ShmError {
    /// The arena cannot be opened or mapped here (the primary's pieces then come over the
    /// socket).
    #[error("shared memory {path}: {why}")]
    Open { path: String, why: String },
    /// A region that is not one: the peer broke the protocol.
    #[error("{0}")]
    Region(String),
}

/// Bytes of a primary's arena for one backup: address space reserved, memory taken only where
/// written (and reused from there on).
pub const ARENA_BYTES: usize = 1 << 30;
/// Regions start at multiples of this.
const ALIGN: usize = 64;
/// Bytes of an arena's token, in its first region.
pub const TOKEN: usize = 16;
const _: () = assert!(TOKEN <= ALIGN);

/// The primary's side: the arena it writes its pieces' values into, and which regions of it
/// its backup holds.
pub struct Arena {
    map: Mapping,
    /// Random bytes at the arena's start, which a backup checks to know it mapped this arena.
    token: [u8; TOKEN],
    fd: std::os::fd::OwnedFd,
    /// Free regions by start, coalesced.
    free: BTreeMap<usize, usize>,
    /// Regions handed out, by start: their lengths.
    used: HashMap<usize, usize>,
}

impl std::fmt::Debug for Arena {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Arena")
            .field("size", &self.map.len)
            .field("in_use", &self.in_use())
            .finish()
    }
}

impl Arena {
    /// A fresh arena of `size` bytes.
    #[cfg(target_os = "linux")]
    pub fn create(size: usize) -> std::io::Result<Arena> {
        use std::os::fd::{AsRawFd, FromRawFd};
        if size <= ALIGN {
            return Err(std::io::ErrorKind::InvalidInput.into());
        }
        let flags = libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING;
        // SAFETY: the name is a NUL-terminated string literal; the result is checked.
        let raw = unsafe { libc::memfd_create(c"mxrs-replicas".as_ptr(), flags) };
        if raw < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: `raw` is a descriptor just opened and owned by nothing else.
        let fd = unsafe { std::os::fd::OwnedFd::from_raw_fd(raw) };
        // SAFETY: `fd` is a valid memfd; the result is checked.
        if unsafe { libc::ftruncate(fd.as_raw_fd(), size as libc::off_t) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        // Its size is fixed for good: a backup's mapping can never lose pages under it.
        let seals = libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_SEAL;
        // SAFETY: `fd` is a valid memfd made with sealing allowed; the result is checked.
        if unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_ADD_SEALS, seals) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        let map = Mapping::new(fd.as_raw_fd(), size, true)?;
        let mut token = [0u8; TOKEN];
        // SAFETY: `token` is writable for its length; the result is checked.
        let got = unsafe { libc::getrandom(token.as_mut_ptr().cast(), TOKEN, 0) };
        if got != TOKEN as isize {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: the mapping is `size` bytes, more than `ALIGN` (checked above), which holds
        // `TOKEN` (checked at compile time), and nobody else holds it yet.
        unsafe { std::ptr::copy_nonoverlapping(token.as_ptr(), map.ptr, TOKEN) };
        Ok(Arena {
            map,
            token,
            fd,
            // The first region holds the token.
            free: BTreeMap::from([(ALIGN, size - ALIGN)]),
            used: HashMap::new(),
        })
    }

    /// No shared memory here: every piece travels over the socket.
    #[cfg(not(target_os = "linux"))]
    pub fn create(_size: usize) -> std::io::Result<Arena> {
        Err(std::io::Error::new(
            std::io::ErrorKind::Unsupported,
            "shared memory between servers needs Linux",
        ))
    }

    /// The random bytes at the arena's start, for the backup to check.
    pub fn token(&self) -> [u8; TOKEN] {
        self.token
    }

    /// The descriptor the backup opens the arena by, in this process.
    pub fn fd(&self) -> i32 {
        use std::os::fd::AsRawFd;
        self.fd.as_raw_fd()
    }

    /// The arena's size.
    pub fn size(&self) -> usize {
        self.map.len
    }

    /// Copies `bytes` into a free region and returns where: `None` when no region is large
    /// enough (the piece then travels over the socket).
    pub fn put(&mut self, bytes: &[u8]) -> Option<usize> {
        let want = bytes.len().div_ceil(ALIGN).max(1) * ALIGN;
        let (&start, &len) = self.free.iter().find(|&(_, &len)| len >= want)?;
        self.free.remove(&start);
        if len > want {
            self.free.insert(start + want, len - want);
        }
        self.used.insert(start, want);
        // SAFETY: `start..start + want` lies inside the mapping (a free region of it) and is
        // handed out to nobody else until released; `bytes.len() <= want`.
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.map.ptr.add(start), bytes.len())
        };
        Some(start)
    }

    /// The backup let go of the region at `start`; an unknown start is ignored (and false).
    pub fn release(&mut self, start: usize) -> bool {
        let Some(mut len) = self.used.remove(&start) else {
            return false;
        };
        let mut start = start;
        if let Some((&before, &blen)) = self.free.range(..start).next_back()
            && before + blen == start
        {
            self.free.remove(&before);
            start = before;
            len += blen;
        }
        if let Some(after) = self.free.remove(&(start + len)) {
            len += after;
        }
        self.free.insert(start, len);
        true
    }

    /// Bytes handed out and not released.
    pub fn in_use(&self) -> usize {
        self.used.values().sum()
    }
}

/// Where a piece's value lies in its primary's arena: the payload of a shared Replicate entry.
pub fn region(start: usize, len: usize) -> Bytes {
    encode([start as u64, len as u64])
}

/// The regions a backup let go, as its answer reports them (`u64` starts).
pub fn released(payload: &[u8]) -> impl Iterator<Item = usize> + '_ {
    decode(payload).map(|s| s as usize)
}

/// Little-endian `u64`s, the form of every number this crate puts in a payload.
fn encode(values: impl IntoIterator<Item = u64>) -> Bytes {
    let mut out = Vec::new();
    for v in values {
        out.put_u64_le(v);
    }
    out.into()
}

/// The `u64`s of `payload` (whole ones; a trailing part is ignored).
fn decode(payload: &[u8]) -> impl Iterator<Item = u64> + '_ {
    payload
        .chunks_exact(8)
        .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
}

/// The backup's side: the primary's arena, mapped read-only, and the regions let go since the
/// last answer.
pub struct ArenaView {
    map: Mapping,
    let_go: Mutex<Vec<u64>>,
}

impl std::fmt::Debug for ArenaView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArenaView")
            .field("size", &self.map.len)
            .finish()
    }
}

impl ArenaView {
    /// Maps `size` bytes of the arena that process `pid` holds as descriptor `fd`; only an
    /// arena whose size is sealed (as [`Arena::create`] makes it), so that no page can vanish
    /// under the mapping, and which starts with `token` (a process id names another process
    /// in another pid namespace of the same host).
    #[cfg(target_os = "linux")]
    pub fn open(pid: u64, fd: u64, size: u64, token: &[u8]) -> Result<Arc<ArenaView>, ShmError> {
        use std::os::fd::AsRawFd;
        let path = format!("/proc/{pid}/fd/{fd}");
        let refuse = |why: String| ShmError::Open {
            path: path.clone(),
            why,
        };
        let file = std::fs::File::open(&path).map_err(|e| refuse(e.to_string()))?;
        let have = file.metadata().map_err(|e| refuse(e.to_string()))?.len();
        if size < TOKEN as u64 || size > have || size > ARENA_BYTES as u64 {
            return Err(refuse(format!("{size} bytes asked of {have}")));
        }
        // SAFETY: `file` is open; F_GET_SEALS only reads its seals (-1 where it has none).
        let seals = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GET_SEALS) };
        if seals < 0 || seals & libc::F_SEAL_SHRINK == 0 {
            return Err(refuse("its size is not sealed".into()));
        }
        let map = Mapping::new(file.as_raw_fd(), size as usize, false)
            .map_err(|e| refuse(e.to_string()))?;
        // SAFETY: the mapping holds at least `TOKEN` bytes (checked above).
        let start = unsafe { std::slice::from_raw_parts(map.ptr, TOKEN) };
        if start != token {
            return Err(refuse("it is not the sender's shared memory".into()));
        }
        Ok(Arc::new(ArenaView {
            map,
            let_go: Mutex::default(),
        }))
    }

    /// No shared memory here.
    #[cfg(not(target_os = "linux"))]
    pub fn open(pid: u64, fd: u64, _size: u64, _token: &[u8]) -> Result<Arc<ArenaView>, ShmError> {
        Err(ShmError::Open {
            path: format!("process {pid}, descriptor {fd}"),
            why: "shared memory between servers needs Linux".into(),
        })
    }

    /// The bytes a shared entry's `payload` (a [`region`]) names, kept as they are: the region
    /// is let go when the last view of them is dropped.
    pub fn bytes(self: &Arc<Self>, payload: &[u8]) -> Result<Bytes, ShmError> {
        let bad = || ShmError::Region(format!("a shared region of {} bytes", payload.len()));
        if payload.len() != 16 {
            return Err(bad());
        }
        let mut numbers = decode(payload);
        let (start, len) = (numbers.next().unwrap_or(0), numbers.next().unwrap_or(0));
        let end = start.checked_add(len).ok_or_else(|| {
            ShmError::Region(format!("a shared region of {len} bytes at {start}"))
        })?;
        if end > self.map.len as u64 {
            return Err(ShmError::Region(format!(
                "a shared region {start}..{end} outside the arena's {} bytes",
                self.map.len
            )));
        }
        Ok(Bytes::from_owner(Region {
            view: self.clone(),
            start: start as usize,
            len: len as usize,
        }))
    }

    /// The starts of the regions let go since the last call, for the primary.
    pub fn take_let_go(&self) -> Bytes {
        encode(std::mem::take(&mut *self.let_go.lock()))
    }
}

/// A region of a backup's view of an arena, owned by the `Bytes` that show it.
struct Region {
    view: Arc<ArenaView>,
    start: usize,
    len: usize,
}

impl AsRef<[u8]> for Region {
    fn as_ref(&self) -> &[u8] {
        // SAFETY: `start..start + len` was checked to lie inside the mapping, which lives as
        // long as `view`; the primary writes no region while the backup holds it.
        unsafe { std::slice::from_raw_parts(self.view.map.ptr.add(self.start), self.len) }
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        self.view.let_go.lock().push(self.start as u64);
    }
}

/// A shared mapping of a file, unmapped on drop.
struct Mapping {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the mapping is plain memory; who writes where is arranged above (the primary writes
// only regions no backup holds, the backup only reads).
unsafe impl Send for Mapping {}
// SAFETY: as above.
unsafe impl Sync for Mapping {}

impl Mapping {
    #[cfg(target_os = "linux")]
    fn new(fd: i32, len: usize, write: bool) -> std::io::Result<Mapping> {
        let prot = if write {
            libc::PROT_READ | libc::PROT_WRITE
        } else {
            libc::PROT_READ
        };
        // SAFETY: a fresh shared mapping of `len` bytes of `fd` at an address the kernel
        // chooses; the result is checked.
        let ptr = unsafe { libc::mmap(std::ptr::null_mut(), len, prot, libc::MAP_SHARED, fd, 0) };
        if ptr == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Mapping {
            ptr: ptr.cast(),
            len,
        })
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        #[cfg(target_os = "linux")]
        // SAFETY: `ptr..ptr + len` is this mapping, and nothing views it any more.
        unsafe {
            libc::munmap(self.ptr.cast(), self.len);
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn regions_are_handed_out_released_and_joined_again() {
        let mut a = Arena::create(1 << 12).unwrap();
        let x = a.put(&[1; 1000]).unwrap();
        let y = a.put(&[2; 1000]).unwrap();
        let z = a.put(&[3; 1000]).unwrap();
        // The first 64 bytes hold the token.
        assert_eq!((x, y, z), (64, 1088, 2112));
        // 960 bytes left: a larger value does not fit, and goes over the socket.
        assert_eq!(a.put(&[4; 1500]), None);
        assert!(a.release(y));
        assert!(!a.release(y), "released twice");
        assert_eq!(
            a.put(&[5; 1500]),
            None,
            "1024 + 1024 apart is not 1500 in one"
        );
        assert!(a.release(x));
        // x and y are one free region again.
        assert_eq!(a.put(&[6; 1500]), Some(64));
        assert_eq!(a.in_use(), 1536 + 1024);
    }

    #[test]
    fn a_backup_sees_what_the_primary_wrote_and_lets_go_when_it_drops_it() {
        let mut a = Arena::create(1 << 16).unwrap();
        let data: Vec<u8> = (0..5000u32).map(|i| (i % 251) as u8).collect();
        let at = a.put(&data).unwrap();
        let view = ArenaView::open(
            std::process::id().into(),
            a.fd() as u64,
            a.size() as u64,
            &a.token(),
        )
        .unwrap();
        let got = view.bytes(&region(at, data.len())).unwrap();
        assert_eq!(&got[..], &data[..]);
        let part = got.slice(10..20);
        drop(got);
        assert!(
            view.take_let_go().is_empty(),
            "a view of the region is still held"
        );
        drop(part);
        let let_go = view.take_let_go();
        assert_eq!(released(&let_go).collect::<Vec<_>>(), [at]);
        assert!(a.release(at));
        // The view outlives the arena's own mapping and descriptor.
        let at2 = a.put(&[9; 64]).unwrap();
        let kept = view.bytes(&region(at2, 64)).unwrap();
        drop(a);
        assert_eq!(&kept[..], &[9; 64]);
    }

    #[test]
    fn regions_outside_the_arena_and_bad_descriptors_are_refused() {
        let a = Arena::create(1 << 12).unwrap();
        let pid = u64::from(std::process::id());
        let (fd, size, token) = (a.fd() as u64, a.size() as u64, a.token());
        let view = ArenaView::open(pid, fd, size, &token).unwrap();
        for bad in [region(4000, 200), region(usize::MAX, 2)] {
            let err = view.bytes(&bad).unwrap_err().to_string();
            assert!(err.contains("shared region"), "{err}");
        }
        assert!(view.bytes(&[0; 7]).is_err());
        // More than the file has, and a descriptor that is not there.
        assert!(ArenaView::open(pid, fd, 1 << 13, &token).is_err());
        let err = ArenaView::open(pid, 1 << 20, 64, &token)
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("/proc/"), "{err}");
        // Another process's arena (or another arena of this one) is not taken for it.
        let other = Arena::create(1 << 12).unwrap();
        let err = ArenaView::open(pid, other.fd() as u64, size, &token)
            .err()
            .unwrap();
        let err = err.to_string();
        assert!(err.contains("not the sender's shared memory"), "{err}");
        assert!(err.contains("/proc/"), "{err}");
    }
}
