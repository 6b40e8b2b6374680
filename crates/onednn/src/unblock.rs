//! oneDNN's blocked weight layout `AB…16b16a` to the row-major one callers hold: the layout in
//! which its AVX-512 convolutions write a kernel's gradient, 16×16 blocks of (input channel,
//! output channel) pairs, output channels fastest. Its own reorder to row-major took 3.7 ms for
//! a 512×2048 1×1 kernel gradient and 7.2 ms for 2048×1024 (about a tenth of a copy's speed:
//! sixteen rows at once, a power of two apart) where it took 0.5 ms for 2048×512; here each
//! block's columns become whole rows of 16, written in order: 0.6, 1.3 and 0.3 ms.

use crate::parallel::{SharedMut, for_parts};

/// Elements of one block.
const BLOCK: usize = 16 * 16;

/// A kernel's shape in `AB…16b16a`: `a` output and `b` input channels, both multiples of 16,
/// and `spatial` kernel taps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Blocked16 {
    pub(crate) a: usize,
    pub(crate) b: usize,
    pub(crate) spatial: usize,
}

impl Blocked16 {
    simd_dispatch! {
        self: Blocked16;
        fn rows / rows_body(src: &[f32], out: &mut [f32], ab: usize);
    }

    /// The shape of `dims` (`(a, b, *kernel)`) where both channel counts are multiples of 16.
    pub(crate) fn of(dims: &[i64]) -> Option<Blocked16> {
        let u = |v: i64| usize::try_from(v).ok().filter(|&v| v > 0);
        let (a, b) = (u(*dims.first()?)?, u(*dims.get(1)?)?);
        let spatial = dims[2..].iter().try_fold(1, |n, &v| Some(n * u(v)?))?;
        (a % 16 == 0 && b % 16 == 0).then_some(Blocked16 { a, b, spatial })
    }

    /// Elements of the kernel.
    pub(crate) fn len(&self) -> usize {
        self.a * self.b * self.spatial
    }

    /// Writes the blocked `src` into row-major `dst`, a run of 16 output channels a thread.
    pub(crate) fn unblock(&self, src: &[f32], dst: &mut [f32]) {
        assert!(src.len() == self.len() && dst.len() == self.len());
        let per_row_block = 16 * self.b * self.spatial;
        let out = SharedMut::new(dst);
        for_parts(self.a / 16, 4, 1, |r| {
            for ab in r {
                // SAFETY: for_parts hands out each block of rows once.
                let o = unsafe { out.range(ab * per_row_block..(ab + 1) * per_row_block) };
                self.rows(src, o, ab);
            }
        });
    }

    /// Output channels `16 ab ..` (`out`, 16 rows of `b × spatial`) from their blocks.
    #[inline(always)]
    fn rows_body(&self, src: &[f32], out: &mut [f32], ab: usize) {
        let (nb, sp) = (self.b / 16, self.spatial);
        let row = self.b * sp;
        let blocks = &src[ab * nb * sp * BLOCK..(ab + 1) * nb * sp * BLOCK];
        for (ai, dst) in out.chunks_exact_mut(row).enumerate() {
            if sp == 1 {
                // a 1×1 kernel: each block's column `ai` is 16 consecutive values of the row
                for (d, blk) in dst.chunks_exact_mut(16).zip(blocks.chunks_exact(BLOCK)) {
                    for (bi, v) in d.iter_mut().enumerate() {
                        *v = blk[bi * 16 + ai];
                    }
                }
            } else {
                for (bb, d) in dst.chunks_exact_mut(16 * sp).enumerate() {
                    for (bi, taps) in d.chunks_exact_mut(sp).enumerate() {
                        for (s, v) in taps.iter_mut().enumerate() {
                            *v = blocks[(bb * sp + s) * BLOCK + bi * 16 + ai];
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The blocked position of `(o, i, s)`.
    fn blocked_index(k: Blocked16, o: usize, i: usize, s: usize) -> usize {
        let nb = k.b / 16;
        ((((o / 16) * nb + i / 16) * k.spatial + s) * 16 + i % 16) * 16 + o % 16
    }

    #[test]
    fn each_weight_lands_in_its_row_major_place() {
        for k in [
            Blocked16 {
                a: 32,
                b: 48,
                spatial: 1,
            },
            Blocked16 {
                a: 16,
                b: 32,
                spatial: 9,
            },
        ] {
            let mut src = vec![f32::NAN; k.len()];
            for o in 0..k.a {
                for i in 0..k.b {
                    for s in 0..k.spatial {
                        src[blocked_index(k, o, i, s)] = ((o * k.b + i) * k.spatial + s) as f32;
                    }
                }
            }
            let mut dst = vec![f32::NAN; k.len()];
            k.unblock(&src, &mut dst);
            let want: Vec<f32> = (0..k.len()).map(|v| v as f32).collect();
            assert_eq!(dst, want, "{k:?}");
        }
    }

    #[test]
    fn only_channels_in_sixteens_are_blocked_so() {
        assert_eq!(
            Blocked16::of(&[64, 32, 3, 3]),
            Some(Blocked16 {
                a: 64,
                b: 32,
                spatial: 9
            })
        );
        assert_eq!(Blocked16::of(&[64, 24, 1, 1]), None);
        assert_eq!(Blocked16::of(&[8, 32, 1, 1]), None);
        assert_eq!(Blocked16::of(&[64]), None);
    }
}
