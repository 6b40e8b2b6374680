//! Fetching scattered rows of a big array before they are used.
//!
//! The rows a row-sparse round touches are scattered over a piece far larger than the caches.
//! Updating or copying them one after the other waits on one row's cache misses at a time.
//! [`warm`] first reads one element of every cache line of a chunk of rows: those loads do not
//! depend on each other, so the processor has all of the chunk's misses in flight at once, and
//! the rows are in cache when the update or the copy reaches them.

use std::ops::Range;

use crate::dtype::Float;

/// Rows fetched together by one [`warm`] call.
pub(crate) const WARM_ROWS: usize = 16;

/// Elements of `f32` per 64-byte cache line (for `f64`, every other line is read twice, which
/// costs nothing more).
const LINE: usize = 16;

/// Reads one element of every cache line of `spans` (element ranges) in `array` and in each
/// of `others` (arrays of the same layout, such as optimizer states). Elements out of an
/// array's bounds are skipped: warming never fails.
pub(crate) fn warm<T: Float>(
    array: &[T],
    others: &[Vec<T>],
    spans: impl Iterator<Item = Range<usize>>,
) {
    let mut sum = T::zero();
    for span in spans {
        for at in span.step_by(LINE) {
            sum = sum + array.get(at).copied().unwrap_or_else(T::zero);
            for other in others {
                sum = sum + other.get(at).copied().unwrap_or_else(T::zero);
            }
        }
    }
    std::hint::black_box(sum);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warming_spans_past_the_end_or_short_buffers_does_nothing() {
        let array = vec![1.0f32; 64];
        let short = vec![vec![0.0f32; 3]];
        warm(&array, &short, [0..64, 60..200, 1000..1064].into_iter());
    }
}
