//! Loops over long buffers, split across OpenMP's threads: the runtime oneDNN's primitives run
//! on, so a loop here runs on as many threads as a primitive would (`OMP_NUM_THREADS`, capped
//! through [`Dnnl::set_threads`](crate::Dnnl::set_threads)) and wakes no second pool.

use std::ffi::{c_uint, c_void};
use std::marker::PhantomData;
use std::ops::Range;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};

use parking_lot::Mutex;

/// Elements below which a part is not worth a thread of its own (waking one costs a few
/// microseconds; a core streams about this many floats in that time).
pub const MIN_PER_THREAD: usize = 1 << 15;

/// Parts start at multiples of this many elements, so each thread's vector loop is aligned
/// like the whole buffer's.
const ALIGN: usize = 64;

type Panic = Box<dyn std::any::Any + Send>;

struct Job<'a, F> {
    f: &'a F,
    n: usize,
    align: usize,
    omp: &'a crate::ffi::Omp,
    panic: Mutex<Option<Panic>>,
}

/// One thread's share of a [`Job`]: the part of `0..n` its number picks in a team of the
/// size OpenMP gave (which may be smaller than asked for).
unsafe extern "C" fn run<F: Fn(Range<usize>) + Sync>(data: *mut c_void) {
    // SAFETY: `data` is the `Job` that `for_ranges` lends to GOMP_parallel, which returns only
    // after every thread of the team has returned from here.
    let job = unsafe { &*(data as *const Job<'_, F>) };
    // SAFETY: called inside the parallel region, as OpenMP requires.
    let (t, team) = unsafe { ((job.omp.thread_num)(), (job.omp.num_threads)()) };
    let (t, team) = (t.max(0) as usize, team.max(1) as usize);
    let part = job.n.div_ceil(team).next_multiple_of(job.align);
    let (start, end) = ((t * part).min(job.n), ((t + 1) * part).min(job.n));
    if start < end {
        // a panic must not unwind through OpenMP's C frames: keep it for the caller
        if let Err(p) = catch_unwind(AssertUnwindSafe(|| (job.f)(start..end))) {
            job.panic.lock().get_or_insert(p);
        }
    }
}

/// Calls `f` on disjoint ranges that together cover `0..n`: on OpenMP's threads where oneDNN
/// is loaded and `n` is long enough for more than one, on the calling thread otherwise.
/// A panic in `f` reaches the caller once every range has run.
pub fn for_ranges<F: Fn(Range<usize>) + Sync>(n: usize, f: F) {
    for_parts(n, MIN_PER_THREAD, ALIGN, f)
}

/// Like [`for_ranges`] for `n` items of any size: a thread takes at least `grain` of them, and
/// parts start at multiples of `align`.
pub fn for_parts<F: Fn(Range<usize>) + Sync>(n: usize, grain: usize, align: usize, f: F) {
    let team = crate::loaded().and_then(|d| {
        let omp = d.omp.as_ref()?;
        d.limit_threads();
        // SAFETY: reads the calling thread's OpenMP setting.
        let max = unsafe { (omp.max_threads)() }.max(1) as usize;
        let team = max.min(n / grain.max(1));
        (team > 1).then_some((omp, team))
    });
    let Some((omp, team)) = team else {
        f(0..n);
        return;
    };
    let job = Job {
        f: &f,
        n,
        align: align.max(1),
        omp,
        panic: Mutex::new(None),
    };
    let data: *const Job<'_, F> = &job;
    // SAFETY: `run::<F>` reads `job` only while GOMP_parallel runs, and `job` outlives the
    // call; `F: Sync` lets the team's threads share `f`.
    unsafe { (omp.parallel)(run::<F>, data as *mut c_void, team as c_uint, 0) };
    if let Some(p) = job.panic.into_inner() {
        resume_unwind(p);
    }
}

/// `out[..] = a[..] + b[..]` over the threads; the three have one length.
pub fn add(a: &[f32], b: &[f32], out: &mut [f32]) {
    assert!(
        a.len() == out.len() && b.len() == out.len(),
        "a sum of buffers of different lengths"
    );
    let dst = SharedMut::new(out);
    for_ranges(a.len(), |r| {
        // SAFETY: for_ranges hands out each range once.
        let o = unsafe { dst.range(r.clone()) };
        for ((o, x), y) in o.iter_mut().zip(&a[r.clone()]).zip(&b[r]) {
            *o = x + y;
        }
    });
}

/// `dst[..] = src[..]` over the threads; `src` and `dst` have one length.
pub fn copy(src: &[f32], dst: &mut [f32]) {
    assert_eq!(
        src.len(),
        dst.len(),
        "a copy between buffers of different lengths"
    );
    let out = SharedMut::new(dst);
    for_ranges(src.len(), |r| {
        // SAFETY: for_ranges hands out each range once.
        unsafe { out.range(r.clone()) }.copy_from_slice(&src[r]);
    });
}

/// A mutable buffer, borrowed for `'a`, that disjoint ranges are written through from several
/// threads.
#[derive(Debug, Clone, Copy)]
pub struct SharedMut<'a, T> {
    ptr: *mut T,
    len: usize,
    _borrow: PhantomData<&'a mut [T]>,
}

// SAFETY: a `SharedMut` only hands out the ranges its users ask for; `for_ranges` gives each
// thread a range no other thread is given.
unsafe impl<T: Send> Send for SharedMut<'_, T> {}
// SAFETY: as above.
unsafe impl<T: Send> Sync for SharedMut<'_, T> {}

impl<'a, T> SharedMut<'a, T> {
    /// Lends `data` for the ranges of one [`for_ranges`] call.
    pub fn new(data: &'a mut [T]) -> SharedMut<'a, T> {
        SharedMut {
            ptr: data.as_mut_ptr(),
            len: data.len(),
            _borrow: PhantomData,
        }
    }

    /// The elements of `r`.
    ///
    /// # Safety
    /// No other live reference may cover any element of `r`: call it once per range that
    /// [`for_ranges`] hands out.
    pub unsafe fn range(self, r: Range<usize>) -> &'a mut [T] {
        assert!(
            r.start <= r.end && r.end <= self.len,
            "range out of the buffer"
        );
        // SAFETY: in bounds (checked); exclusive by the caller's promise.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.add(r.start), r.len()) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn ranges_cover_everything_once_without_onednn() {
        let n = 5 * MIN_PER_THREAD + 17;
        let mut hits = vec![0u8; n];
        let out = SharedMut::new(&mut hits);
        let calls = AtomicUsize::new(0);
        for_ranges(n, |r| {
            calls.fetch_add(1, Ordering::Relaxed);
            // SAFETY: one call per range handed out.
            for h in unsafe { out.range(r) } {
                *h += 1;
            }
        });
        assert!(hits.iter().all(|&h| h == 1));
        assert!(calls.load(Ordering::Relaxed) >= 1);
    }

    #[test]
    fn copies_every_element() {
        let src: Vec<f32> = (0..3 * MIN_PER_THREAD + 5).map(|i| i as f32).collect();
        let mut dst = vec![0.0; src.len()];
        copy(&src, &mut dst);
        assert_eq!(src, dst);
    }

    #[test]
    fn adds_every_element() {
        let n = 3 * MIN_PER_THREAD + 5;
        let a: Vec<f32> = (0..n).map(|i| i as f32).collect();
        let b: Vec<f32> = (0..n).map(|i| 0.5 - (2 * i) as f32).collect();
        let mut out = vec![f32::NAN; n];
        add(&a, &b, &mut out);
        assert!((0..n).all(|i| out[i] == a[i] + b[i]));
    }

    #[test]
    #[should_panic(expected = "a sum of buffers of different lengths")]
    fn a_sum_of_other_lengths_is_refused() {
        add(&[1.0, 2.0], &[1.0], &mut [0.0, 0.0]);
    }

    #[test]
    fn empty_range_runs_once() {
        let calls = AtomicUsize::new(0);
        for_ranges(0, |r| {
            assert!(r.is_empty());
            calls.fetch_add(1, Ordering::Relaxed);
        });
        assert_eq!(calls.load(Ordering::Relaxed), 1);
    }
}
