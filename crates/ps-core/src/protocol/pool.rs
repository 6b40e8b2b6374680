//! Recycled buffers for large frames and reassembled arrays.
//!
//! A fresh multi-megabyte allocation is mapped anew by the kernel and costs a page fault per
//! 4 KiB on first touch, about as much time as moving the bytes over loopback TCP. Large
//! buffers are therefore handed out from a small process-wide pool and come back to it when the
//! last `Bytes` that views them is dropped.

use bytes::Bytes;
use parking_lot::Mutex;

/// Buffers smaller than this are ordinary allocations.
pub const POOLED_MIN: usize = 1 << 20;
/// Most bytes the pool keeps in idle buffers.
const POOL_BYTES: usize = 1 << 30;
/// Most idle buffers the pool keeps.
const POOL_BUFFERS: usize = 256;

static POOL: Mutex<Vec<Vec<u8>>> = Mutex::new(Vec::new());

/// An empty buffer with room for at least `capacity` bytes, recycled when possible.
pub fn take(capacity: usize) -> Vec<u8> {
    if capacity >= POOLED_MIN {
        let mut pool = POOL.lock();
        // Best fit: the smallest idle buffer that is large enough.
        let best = pool
            .iter()
            .enumerate()
            .filter(|(_, b)| b.capacity() >= capacity)
            .min_by_key(|(_, b)| b.capacity())
            .map(|(i, _)| i);
        if let Some(i) = best {
            let mut buf = pool.swap_remove(i);
            buf.clear();
            return buf;
        }
    }
    Vec::with_capacity(capacity)
}

/// Freezes `buf` into `Bytes`; its memory returns to the pool when the last view is dropped.
pub fn freeze(buf: Vec<u8>) -> Bytes {
    if buf.capacity() >= POOLED_MIN {
        Bytes::from_owner(Recycled(buf))
    } else {
        Bytes::from(buf)
    }
}

/// Gives `buf` back to the pool (or frees it when the pool is full).
fn give_back(buf: Vec<u8>) {
    if buf.capacity() < POOLED_MIN {
        return;
    }
    let mut pool = POOL.lock();
    let held: usize = pool.iter().map(Vec::capacity).sum();
    if pool.len() < POOL_BUFFERS && held + buf.capacity() <= POOL_BYTES {
        pool.push(buf);
    }
}

struct Recycled(Vec<u8>);

impl AsRef<[u8]> for Recycled {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl Drop for Recycled {
    fn drop(&mut self) {
        give_back(std::mem::take(&mut self.0));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_buffers_come_back() {
        let mut buf = take(3 * POOLED_MIN);
        buf.extend_from_slice(&[7u8; 3 * POOLED_MIN]);
        let ptr = buf.as_ptr();
        let bytes = freeze(buf);
        let view = bytes.slice(10..20);
        drop(bytes);
        assert_eq!(&view[..], &[7u8; 10]);
        drop(view);
        // The same memory is handed out again, empty.
        let again = take(3 * POOLED_MIN);
        assert!(again.is_empty());
        assert_eq!(again.as_ptr(), ptr);
        let small = take(16);
        assert!(small.capacity() >= 16);
    }
}
