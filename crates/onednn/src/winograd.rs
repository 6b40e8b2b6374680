//! Winograd's minimal filtering F(4×4, 3×3) for 2-D 3×3 convolutions of stride 1 and dilation
//! 1 on channels-last data, the transforms of Lavin and Gray's "Fast Algorithms for
//! Convolutional Neural Networks" (2016).
//!
//! Each 6×6 tile of the input and each 3×3 kernel go to 36 points, where the convolution is 36
//! independent matrix products over the channels (one batched oneDNN matmul), and each tile's
//! 36 products come back as a 4×4 tile of the output: 36 multiplications per tile and channel
//! pair where the direct convolution does 144. The transforms are passes over memory, so the
//! tiles go through in chunks whose transformed points stay in the cache from the input
//! transform through the product to the output transform. A convolution's data gradient is the
//! same computation on the output gradient, with the kernels turned by 180° and the channels
//! swapped ([`Tiling::transform_weights`] with `flipped`). Its weight gradient goes through the
//! points too ([`Winograd::weight_grad`]): per point, the input's points times the output
//! gradient's (the adjoint of the output transform), summed over the tiles, back through the
//! adjoint of the kernel transform.
//!
//! The transforms run on 16 channels at a time (one AVX-512 register where the CPU has them;
//! the compiler's vectors otherwise) over OpenMP's threads ([`crate::parallel`]).

use std::ops::Range;

use parking_lot::Mutex;

use crate::matmul::Matmul;
use crate::parallel::{SharedMut, for_parts};
use crate::prim::MemDesc;
use crate::{Dnnl, DnnlError};

/// A tile's side in the input, in the output, and its points.
const ALPHA: usize = 6;
const OUT: usize = 4;
const POINTS: usize = ALPHA * ALPHA;
/// Channels a transform handles at once.
const LANES: usize = 16;
/// `f32`s in a cache line.
const LINE: usize = 16;
type Lanes = [f32; LANES];
const ZERO: Lanes = [0.0; LANES];

/// Bytes of transformed points (a chunk's input and output points together) one product works
/// on: small enough to stay in the cache between the transforms and the product. Each chunk's
/// product reads all the transformed kernels, so a chunk holds at least as many bytes of points
/// as they have (256 channels in and out: 9.4 MB of kernels, and a chunk of 21 tiles read them
/// 6 times a call, 14% slower than one chunk).
const CHUNK_BYTES: usize = 3 << 19;
/// Tiles below which a thread of its own does not pay for waking it.
const TILES_PER_THREAD: usize = 8;
/// Kernels below which a thread of its own does not pay for waking it.
const KERNELS_PER_THREAD: usize = 1 << 12;

/// Rows of `row` kernels each a thread of the kernel transforms takes at least.
fn kernel_rows_grain(row: usize) -> usize {
    (KERNELS_PER_THREAD / row).max(1)
}

/// `lanes` values of `src` from `at`, the rest zero.
#[inline(always)]
fn load(src: &[f32], at: usize, lanes: usize) -> Lanes {
    if lanes == LANES {
        let whole: &Lanes = src[at..at + LANES].try_into().expect("16 values");
        *whole
    } else {
        load_part(src, at, lanes)
    }
}

/// The first `lanes` values of `v` into `dst`.
#[inline(always)]
fn store(dst: &mut [f32], v: &Lanes, lanes: usize) {
    if lanes == LANES {
        let whole: &mut Lanes = dst.try_into().expect("16 values");
        *whole = *v;
    } else {
        store_part(dst, v, lanes);
    }
}

// The partial loads and stores stay out of line: inlined, the compiler merged both branches of
// `load` and `store` into one call of libc's memmove for `lanes * 4` bytes, which cost the
// kernel transforms half their time.
#[cold]
#[inline(never)]
fn load_part(src: &[f32], at: usize, lanes: usize) -> Lanes {
    let mut v = ZERO;
    v[..lanes].copy_from_slice(&src[at..at + lanes]);
    v
}

#[cold]
#[inline(never)]
fn store_part(dst: &mut [f32], v: &Lanes, lanes: usize) {
    dst.copy_from_slice(&v[..lanes]);
}

/// `B^T d` for a column `d` of an input tile.
#[inline(always)]
fn input_1d([d0, d1, d2, d3, d4, d5]: [f32; ALPHA]) -> [f32; ALPHA] {
    [
        4.0 * d0 - 5.0 * d2 + d4,
        d3 + d4 - 4.0 * (d1 + d2),
        4.0 * (d1 - d2) + d4 - d3,
        2.0 * (d3 - d1) + d4 - d2,
        2.0 * (d1 - d3) + d4 - d2,
        4.0 * d1 - 5.0 * d3 + d5,
    ]
}

/// `A^T m` for a column `m` of a tile's products.
#[inline(always)]
fn output_1d([m0, m1, m2, m3, m4, m5]: [f32; ALPHA]) -> [f32; OUT] {
    let (a, b) = (m1 + m2, m1 - m2);
    let (c, e) = (m3 + m4, m3 - m4);
    [m0 + a + c, b + 2.0 * e, a + 4.0 * c, b + 8.0 * e + m5]
}

/// `G g` for a column `g` of a kernel.
#[inline(always)]
fn weights_1d([g0, g1, g2]: [f32; 3]) -> [f32; ALPHA] {
    let even = g0 + g2;
    let (a, b) = (g0 * (1.0 / 24.0) + g2 * (1.0 / 6.0), g1 * (1.0 / 12.0));
    [
        g0 * 0.25,
        -(even + g1) * (1.0 / 6.0),
        -(even - g1) * (1.0 / 6.0),
        a + b,
        a - b,
        g2,
    ]
}

/// `A o` for a column `o` of an output tile's gradient: the gradient of its products (the
/// adjoint of [`output_1d`]).
#[inline(always)]
fn output_grad_1d([o0, o1, o2, o3]: [f32; OUT]) -> [f32; ALPHA] {
    let (even, odd) = (o0 + o2, o1 + o3);
    let (even4, odd8) = (o0 + 4.0 * o2, 2.0 * o1 + 8.0 * o3);
    [o0, even + odd, even - odd, even4 + odd8, even4 - odd8, o3]
}

/// `G^T u` for a column `u` of a transformed kernel's gradient: the kernel's gradient (the
/// adjoint of [`weights_1d`]).
#[inline(always)]
fn weights_grad_1d([u0, u1, u2, u3, u4, u5]: [f32; ALPHA]) -> [f32; 3] {
    let (s12, d12) = (u1 + u2, u2 - u1);
    let (s34, d34) = (u3 + u4, u3 - u4);
    [
        u0 * 0.25 - s12 * (1.0 / 6.0) + s34 * (1.0 / 24.0),
        d12 * (1.0 / 6.0) + d34 * (1.0 / 12.0),
        (s34 - s12) * (1.0 / 6.0) + u5,
    ]
}

/// Applies the 1-D transform `f` (`N` values to `M`) to every column of `a[row][column]` and
/// then to every row of the result: `F a F^T` for `f(v) = F v`, lane by lane.
#[inline(always)]
fn both_ways<const N: usize, const M: usize>(
    a: &[[Lanes; N]; N],
    f: impl Fn([f32; N]) -> [f32; M],
    out: &mut [[Lanes; M]; M],
) {
    let mut t = [[ZERO; N]; M];
    for j in 0..N {
        for l in 0..LANES {
            let mut col = [0.0; N];
            for i in 0..N {
                col[i] = a[i][j][l];
            }
            let col = f(col);
            for i in 0..M {
                t[i][j][l] = col[i];
            }
        }
    }
    for i in 0..M {
        for l in 0..LANES {
            let mut row = [0.0; N];
            for j in 0..N {
                row[j] = t[i][j][l];
            }
            let row = f(row);
            for j in 0..M {
                out[i][j][l] = row[j];
            }
        }
    }
}

/// The geometry of one convolution's tiles and the transforms between it and the points.
#[derive(Debug, Clone)]
pub(crate) struct Tiling {
    n: usize,
    cin: usize,
    cout: usize,
    /// Input and output height and width.
    h: usize,
    w: usize,
    oh: usize,
    ow: usize,
    /// Padding on each side of the height and of the width.
    ph: usize,
    pw: usize,
    /// Tiles along the output's height and width.
    th: usize,
    tw: usize,
}

impl Tiling {
    /// The tiles of a 3×3 convolution of stride 1 from `(n, cin, h, w)` with padding `(ph, pw)`
    /// on each side to `cout` channels; None where the output would be empty.
    pub(crate) fn new(
        n: usize,
        cin: usize,
        cout: usize,
        (h, w): (usize, usize),
        (ph, pw): (usize, usize),
    ) -> Option<Tiling> {
        let (oh, ow) = ((h + 2 * ph).checked_sub(2)?, (w + 2 * pw).checked_sub(2)?);
        (n > 0 && cin > 0 && cout > 0 && oh > 0 && ow > 0).then(|| Tiling {
            n,
            cin,
            cout,
            h,
            w,
            oh,
            ow,
            ph,
            pw,
            th: oh.div_ceil(OUT),
            tw: ow.div_ceil(OUT),
        })
    }

    /// The output's height and width.
    pub(crate) fn out_size(&self) -> (usize, usize) {
        (self.oh, self.ow)
    }

    /// Tiles in all.
    pub(crate) fn tiles(&self) -> usize {
        self.n * self.th * self.tw
    }

    /// Elements of the input, of the output, and of the transformed kernels.
    pub(crate) fn lens(&self) -> (usize, usize, usize) {
        (
            self.n * self.h * self.w * self.cin,
            self.n * self.oh * self.ow * self.cout,
            POINTS * self.u_stride(),
        )
    }

    /// Elements from one point's transformed kernels `(cin, cout)` to the next's: an odd
    /// number of cache lines ([`point_stride`]; the 36 rows a kernel transform writes at once
    /// were 256 KB apart for 256 channels, all in one cache set).
    pub(crate) fn u_stride(&self) -> usize {
        point_stride(self.cin * self.cout)
    }

    /// How far apart a point's transformed kernels lie from one input channel to the next and
    /// from one output channel to the next. The points keep the channel order of the weights
    /// they come from, so that the transforms read the weights and write the points (and the
    /// weight gradient's the other way round) in order: MXNet's `(cout, cin)` for the forward
    /// pass and the weight gradient, and for `flipped` kernels (a data gradient's) the forward
    /// convolution's `(f, c)`, which is `(cin, cout)` here.
    pub(crate) fn u_strides(&self, flipped: bool) -> (usize, usize) {
        if flipped {
            (self.cout, 1)
        } else {
            (1, self.cin)
        }
    }

    /// The image, first input row and first input column of tile `g`.
    fn origin(&self, g: usize) -> (usize, isize, isize) {
        let per_image = self.th * self.tw;
        let (b, r) = (g / per_image, g % per_image);
        let (ti, tj) = (r / self.tw, r % self.tw);
        (
            b,
            (ti * OUT) as isize - self.ph as isize,
            (tj * OUT) as isize - self.pw as isize,
        )
    }

    /// The weights' rows and the kernels in each: `(cout, cin)`, or flipped `(cin, cout)`.
    fn weight_rows(&self, flipped: bool) -> (usize, usize) {
        if flipped {
            (self.cin, self.cout)
        } else {
            (self.cout, self.cin)
        }
    }

    /// The transformed kernels `u[point]` of MXNet's `(cout, cin, 3, 3)` weights `w`, laid out
    /// as [`Tiling::u_strides`] says; `flipped`, of `w` taken as the forward convolution's
    /// `(cin, cout, 3, 3)` with each kernel turned by 180°.
    pub(crate) fn transform_weights(&self, w: &[f32], flipped: bool, u: &mut [f32]) {
        assert_eq!(
            w.len(),
            self.cin * self.cout * 9,
            "weights of another shape"
        );
        assert_eq!(
            u.len(),
            self.lens().2,
            "transformed weights of another shape"
        );
        let out = SharedMut::new(u);
        // by the weights' rows, each a run of kernels in `w` and in every point
        let (rows, row) = self.weight_rows(flipped);
        for_parts(rows, kernel_rows_grain(row), 1, |r| {
            self.weights_range(w, flipped, r, out)
        });
    }

    /// The points of tiles `start..start + rows` of `x` into `v[point][tile][cin]`, the
    /// points `ps` elements apart ([`point_stride`]).
    pub(crate) fn transform_input(
        &self,
        x: &[f32],
        start: usize,
        rows: usize,
        ps: usize,
        v: &mut [f32],
    ) {
        assert_eq!(x.len(), self.lens().0, "an input of another shape");
        assert!(ps >= rows * self.cin, "points that overlap");
        assert_eq!(v.len(), POINTS * ps, "points of another shape");
        let out = SharedMut::new(v);
        for_parts(rows, TILES_PER_THREAD, 1, |r| {
            self.input_range(x, start, ps, r, out)
        });
    }

    /// Tiles `start..start + rows` of the output `y` (plus `bias`) from their products
    /// `m[point][tile][cout]`, the points `ps` elements apart.
    pub(crate) fn transform_output(
        &self,
        m: &[f32],
        start: usize,
        rows: usize,
        ps: usize,
        bias: Option<&[f32]>,
        y: &mut [f32],
    ) {
        assert_eq!(y.len(), self.lens().1, "an output of another shape");
        assert!(ps >= rows * self.cout, "products that overlap");
        assert_eq!(m.len(), POINTS * ps, "products of another shape");
        if let Some(b) = bias {
            assert_eq!(b.len(), self.cout, "a bias of another length");
        }
        let out = SharedMut::new(y);
        for_parts(rows, TILES_PER_THREAD, 1, |r| {
            self.output_range(m, start, ps, bias, r, out)
        });
    }

    /// The gradient of tiles `start..start + rows`' products, `dm[point][tile][cout]` with
    /// the points `ps` elements apart, from the output gradient `gy` (pixels beyond the
    /// output count as zero).
    pub(crate) fn transform_output_grad(
        &self,
        gy: &[f32],
        start: usize,
        rows: usize,
        ps: usize,
        dm: &mut [f32],
    ) {
        assert_eq!(
            gy.len(),
            self.lens().1,
            "an output gradient of another shape"
        );
        assert!(ps >= rows * self.cout, "products that overlap");
        assert_eq!(dm.len(), POINTS * ps, "products of another shape");
        let out = SharedMut::new(dm);
        for_parts(rows, TILES_PER_THREAD, 1, |r| {
            self.output_grad_range(gy, start, ps, r, out)
        });
    }

    /// The weights' gradient `gw` (MXNet's `(cout, cin, 3, 3)`) from the transformed kernels'
    /// gradient `du[point]`, laid out as the forward pass's kernels ([`Tiling::u_strides`]).
    pub(crate) fn weights_from_grad(&self, du: &[f32], gw: &mut [f32]) {
        assert_eq!(
            du.len(),
            self.lens().2,
            "transformed gradients of another shape"
        );
        assert_eq!(
            gw.len(),
            self.cin * self.cout * 9,
            "a weight gradient of another shape"
        );
        let out = SharedMut::new(gw);
        for_parts(self.cout, kernel_rows_grain(self.cin), 1, |r| {
            self.weights_grad_range(du, r, out)
        });
    }

    simd_dispatch! {
        self: Tiling;
        fn weights_range / weights_body(
            w: &[f32], flipped: bool, rows: Range<usize>, out: SharedMut<'_, f32>
        );
        fn input_range / input_body(
            x: &[f32], start: usize, ps: usize, tiles: Range<usize>, out: SharedMut<'_, f32>
        );
        fn output_grad_range / output_grad_body(
            gy: &[f32], start: usize, ps: usize, tiles: Range<usize>, out: SharedMut<'_, f32>
        );
        fn weights_grad_range / weights_grad_body(
            du: &[f32], outputs: Range<usize>, out: SharedMut<'_, f32>
        );
        fn output_range / output_body(
            m: &[f32], start: usize, ps: usize, bias: Option<&[f32]>, tiles: Range<usize>,
            out: SharedMut<'_, f32>
        );
    }

    #[inline(always)]
    fn weights_body(&self, w: &[f32], flipped: bool, rows: Range<usize>, out: SharedMut<'_, f32>) {
        let ((_, row), us) = (self.weight_rows(flipped), self.u_stride());
        for a in rows {
            for b in (0..row).step_by(LANES) {
                let lanes = LANES.min(row - b);
                // 16 kernels of row `a`, one after another in `w`, to one per lane
                let kernels = &w[(a * row + b) * 9..(a * row + b + lanes) * 9];
                let mut g = [[ZERO; 3]; 3];
                for l in 0..lanes {
                    for (tap, v) in g.iter_mut().flatten().enumerate() {
                        let from = if flipped { 8 - tap } else { tap };
                        v[l] = kernels[l * 9 + from];
                    }
                }
                let mut u = [[ZERO; ALPHA]; ALPHA];
                both_ways(&g, weights_1d, &mut u);
                for (k, point) in u.iter().flatten().enumerate() {
                    let at = k * us + a * row + b;
                    // SAFETY: kernels `b..b + lanes` of row `a` of one point; each row is
                    // handed to one thread.
                    let dst = unsafe { out.range(at..at + lanes) };
                    store(dst, point, lanes);
                }
            }
        }
    }

    #[inline(always)]
    fn output_grad_body(
        &self,
        gy: &[f32],
        start: usize,
        ps: usize,
        tiles: Range<usize>,
        out: SharedMut<'_, f32>,
    ) {
        let cout = self.cout;
        let (mut o, mut p) = ([[ZERO; OUT]; OUT], [[ZERO; ALPHA]; ALPHA]);
        for t in tiles {
            let (b, y0, x0) = self.origin(start + t);
            let (y0, x0) = (
                (y0 + self.ph as isize) as usize,
                (x0 + self.pw as isize) as usize,
            );
            let (height, width) = (OUT.min(self.oh - y0), OUT.min(self.ow - x0));
            // SAFETY: tile `t`'s row of each point; each tile is handed to one thread.
            let mut dst: [&mut [f32]; POINTS] = std::array::from_fn(|k| unsafe {
                out.range(k * ps + t * cout..k * ps + (t + 1) * cout)
            });
            for cb in (0..cout).step_by(LANES) {
                let lanes = LANES.min(cout - cb);
                for (i, row) in o.iter_mut().enumerate() {
                    for (j, px) in row.iter_mut().enumerate() {
                        *px = if i < height && j < width {
                            load(
                                gy,
                                ((b * self.oh + y0 + i) * self.ow + x0 + j) * cout + cb,
                                lanes,
                            )
                        } else {
                            ZERO
                        };
                    }
                }
                both_ways(&o, output_grad_1d, &mut p);
                for (k, row) in dst.iter_mut().enumerate() {
                    store(&mut row[cb..cb + lanes], &p[k / ALPHA][k % ALPHA], lanes);
                }
            }
        }
    }

    #[inline(always)]
    fn weights_grad_body(&self, du: &[f32], outputs: Range<usize>, out: SharedMut<'_, f32>) {
        let (cin, us) = (self.cin, self.u_stride());
        let (mut u, mut g) = ([[ZERO; ALPHA]; ALPHA], [[ZERO; 3]; 3]);
        for co in outputs {
            // SAFETY: the gradient of output channel `co`, a contiguous `(cin, 3, 3)`; each
            // output channel is handed to one thread.
            let dst = unsafe { out.range(co * cin * 9..(co + 1) * cin * 9) };
            for cb in (0..cin).step_by(LANES) {
                let lanes = LANES.min(cin - cb);
                for (k, point) in u.iter_mut().flatten().enumerate() {
                    *point = load(du, k * us + co * cin + cb, lanes);
                }
                both_ways(&u, weights_grad_1d, &mut g);
                // one kernel per lane to 16 kernels one after another
                let kernels = &mut dst[cb * 9..(cb + lanes) * 9];
                for l in 0..lanes {
                    for (tap, v) in g.iter().flatten().enumerate() {
                        kernels[l * 9 + tap] = v[l];
                    }
                }
            }
        }
    }

    #[inline(always)]
    fn input_body(
        &self,
        x: &[f32],
        start: usize,
        ps: usize,
        tiles: Range<usize>,
        out: SharedMut<'_, f32>,
    ) {
        let cin = self.cin;
        for t in tiles {
            let (b, y0, x0) = self.origin(start + t);
            // SAFETY: tile `t`'s row of each point; each tile is handed to one thread.
            let mut dst: [&mut [f32]; POINTS] = std::array::from_fn(|k| unsafe {
                out.range(k * ps + t * cin..k * ps + (t + 1) * cin)
            });
            // the input pixel (row, column) of the tile, where it lies inside the input
            let pixel = |i: usize, j: usize| {
                let (yy, xx) = (y0 + i as isize, x0 + j as isize);
                let inside =
                    (0..self.h as isize).contains(&yy) && (0..self.w as isize).contains(&xx);
                inside.then(|| ((b * self.h + yy as usize) * self.w + xx as usize) * cin)
            };
            let mut at = [[None; ALPHA]; ALPHA];
            for (i, row) in at.iter_mut().enumerate() {
                for (j, p) in row.iter_mut().enumerate() {
                    *p = pixel(i, j);
                }
            }
            for cb in (0..cin).step_by(LANES) {
                let lanes = LANES.min(cin - cb);
                let mut d = [[ZERO; ALPHA]; ALPHA];
                for i in 0..ALPHA {
                    for j in 0..ALPHA {
                        d[i][j] = match at[i][j] {
                            Some(p) => load(x, p + cb, lanes),
                            None => ZERO,
                        };
                    }
                }
                let mut v = [[ZERO; ALPHA]; ALPHA];
                both_ways(&d, input_1d, &mut v);
                for (k, row) in dst.iter_mut().enumerate() {
                    store(&mut row[cb..cb + lanes], &v[k / ALPHA][k % ALPHA], lanes);
                }
            }
        }
    }

    #[inline(always)]
    fn output_body(
        &self,
        m: &[f32],
        start: usize,
        ps: usize,
        bias: Option<&[f32]>,
        tiles: Range<usize>,
        out: SharedMut<'_, f32>,
    ) {
        let cout = self.cout;
        for t in tiles {
            let (b, y0, x0) = self.origin(start + t);
            let (y0, x0) = (
                (y0 + self.ph as isize) as usize,
                (x0 + self.pw as isize) as usize,
            );
            let (height, width) = (OUT.min(self.oh - y0), OUT.min(self.ow - x0));
            let first = |i: usize| ((b * self.oh + y0 + i) * self.ow + x0) * cout;
            let mut dst: [&mut [f32]; OUT] = std::array::from_fn(|_| <&mut [f32]>::default());
            for (i, row) in dst.iter_mut().enumerate().take(height) {
                // SAFETY: row `i` of tile `t`'s output pixels; each tile is handed to one
                // thread, and tiles do not overlap.
                *row = unsafe { out.range(first(i)..first(i) + width * cout) };
            }
            for cb in (0..cout).step_by(LANES) {
                let lanes = LANES.min(cout - cb);
                let mut p = [[ZERO; ALPHA]; ALPHA];
                for (k, point) in p.iter_mut().flatten().enumerate() {
                    *point = load(m, k * ps + t * cout + cb, lanes);
                }
                let mut o = [[ZERO; OUT]; OUT];
                both_ways(&p, output_1d, &mut o);
                if let Some(bias) = bias {
                    let add = load(bias, cb, lanes);
                    for v in o.iter_mut().flatten() {
                        v.iter_mut().zip(&add).for_each(|(v, a)| *v += a);
                    }
                }
                for (row, o) in dst.iter_mut().zip(&o).take(height) {
                    for (j, o) in o.iter().enumerate().take(width) {
                        let at = j * cout + cb;
                        store(&mut row[at..at + lanes], o, lanes);
                    }
                }
            }
        }
    }
}

/// Elements from one point's rows of a chunk to the next's, for `len` elements of rows: a
/// whole number of 64-byte cache lines, and an odd one. Rows of 128 channels in chunks of 56
/// tiles put the points 7 × 4096 bytes apart, where the 36 rows a tile writes share one set of
/// the L1 cache and evict each other: the transforms ran 40% slower than at 131 tiles.
pub(crate) fn point_stride(len: usize) -> usize {
    let lines = len.div_ceil(LINE);
    (lines | 1) * LINE
}

/// The point strides of a chunk's input points and products.
#[derive(Debug, Clone, Copy)]
struct Strides {
    v: usize,
    m: usize,
}

/// The forward products of a chunk of `rows` tiles: `m[point] = v[point] @ u[point]`, `v`
/// `(rows, cin)` and `m` `(rows, cout)` row-major with points `ps` apart, `u` `(cin, cout)`
/// laid out as [`Tiling::u_strides`] says for `flipped` kernels or not.
fn forward_products(
    d: &'static Dnnl,
    rows: usize,
    t: &Tiling,
    ps: Strides,
    flipped: bool,
) -> Result<Matmul, DnnlError> {
    let (r, ci, co, p) = (rows as i64, t.cin as i64, t.cout as i64, POINTS as i64);
    let (ci_stride, co_stride) = t.u_strides(flipped);
    Matmul::new(
        d,
        MemDesc::strided(d, &[p, r, ci], &[ps.v as i64, ci, 1])?,
        MemDesc::strided(
            d,
            &[p, ci, co],
            &[t.u_stride() as i64, ci_stride as i64, co_stride as i64],
        )?,
        MemDesc::strided(d, &[p, r, co], &[ps.m as i64, co, 1])?,
        false,
    )
}

/// The weight gradient's products of a chunk of `rows` tiles, added to what `du` holds with
/// `accumulate`: `du[point] (+)= dm[point]^T @ v[point]`, `(cout, cin)` as the forward pass's
/// kernels lie ([`Tiling::u_strides`]), `dm` read transposed.
fn weight_grad_products(
    d: &'static Dnnl,
    rows: usize,
    t: &Tiling,
    ps: Strides,
    accumulate: bool,
) -> Result<Matmul, DnnlError> {
    let (r, ci, co, p) = (rows as i64, t.cin as i64, t.cout as i64, POINTS as i64);
    Matmul::new(
        d,
        MemDesc::strided(d, &[p, co, r], &[ps.m as i64, 1, co])?,
        MemDesc::strided(d, &[p, r, ci], &[ps.v as i64, ci, 1])?,
        MemDesc::strided(d, &[p, co, ci], &[t.u_stride() as i64, ci, 1])?,
        accumulate,
    )
}

/// The weight gradient's products: the first chunk's (which overwrite), the later full
/// chunks' and the last, shorter chunk's (which add).
struct GradProducts {
    first: Matmul,
    full: Matmul,
    tail: Option<Matmul>,
}

/// One 3×3 convolution of stride 1 by F(4×4, 3×3): its tiles, the products of a full chunk of
/// them and of the last, shorter chunk (and the weight gradient's, for training), and the
/// buffers they share.
pub(crate) struct Winograd {
    tiling: Tiling,
    pass: Pass,
    chunk: usize,
    strides: Strides,
    full: Matmul,
    tail: Option<Matmul>,
    grad: Option<GradProducts>,
    implementation: String,
}

/// What a [`Winograd`] kernel computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pass {
    /// A convolution's forward pass, and for training its weight gradient.
    Forward { weight_grad: bool },
    /// A convolution's data gradient: the same computation on the output gradient, with the
    /// forward pass's kernels flipped ([`Tiling::transform_weights`]).
    DataGrad,
}

/// The buffer every kernel's transformed kernels (or their gradient), a chunk's input points
/// and its products (or their gradient) lie in while it runs: one for the process, as large as
/// the largest kernel's need (kernels run one at a time, as oneDNN's stream does).
static SCRATCH: Mutex<Vec<f32>> = Mutex::new(Vec::new());

/// [`SCRATCH`], held, as `len` elements from a cache line's start: each 16-lane store of the
/// transforms then fills one line, where astride two it took both lines from the cache's
/// other holders (a forward pass of 512 channels at 4×4 took 1.7 times as long).
struct Scratch {
    held: parking_lot::MutexGuard<'static, Vec<f32>>,
    start: usize,
    len: usize,
}

impl Scratch {
    fn new(len: usize) -> Scratch {
        let mut held = SCRATCH.lock();
        if held.len() < len + LINE {
            held.resize(len + LINE, 0.0);
        }
        let start = (LINE - (held.as_ptr() as usize / 4) % LINE) % LINE;
        Scratch { held, start, len }
    }

    fn buf(&mut self) -> &mut [f32] {
        &mut self.held[self.start..self.start + self.len]
    }
}

impl Winograd {
    /// The kernel of `pass` for `tiling`; an error where oneDNN has no matmul for it.
    pub(crate) fn new(d: &'static Dnnl, tiling: Tiling, pass: Pass) -> Result<Winograd, DnnlError> {
        let flipped = pass == Pass::DataGrad;
        let per_tile = POINTS * (tiling.cin + tiling.cout) * 4;
        let kernel_bytes = POINTS * tiling.cin * tiling.cout * 4;
        let tiles = tiling.tiles();
        let most = (CHUNK_BYTES.max(kernel_bytes) / per_tile).max(TILES_PER_THREAD);
        // chunks of about one size: no short last chunk on a matmul of its own
        let chunk = tiles.div_ceil(tiles.div_ceil(most));
        let ps = Strides {
            v: point_stride(chunk * tiling.cin),
            m: point_stride(chunk * tiling.cout),
        };
        let rest = tiles % chunk;
        let full = forward_products(d, chunk, &tiling, ps, flipped)?;
        let tail = (rest > 0)
            .then(|| forward_products(d, rest, &tiling, ps, flipped))
            .transpose()?;
        let grad = if pass == (Pass::Forward { weight_grad: true }) {
            Some(GradProducts {
                first: weight_grad_products(d, chunk, &tiling, ps, false)?,
                full: weight_grad_products(d, chunk, &tiling, ps, true)?,
                tail: (rest > 0)
                    .then(|| weight_grad_products(d, rest, &tiling, ps, true))
                    .transpose()?,
            })
        } else {
            None
        };
        Ok(Winograd {
            pass,
            implementation: format!("winograd_4x4_3x3+matmul:{}", full.implementation()),
            tiling,
            chunk,
            strides: ps,
            full,
            tail,
            grad,
        })
    }

    /// True when it was built for the weight gradient too.
    pub(crate) fn has_weight_grad(&self) -> bool {
        self.grad.is_some()
    }

    /// The gradient `gw` (MXNet's `(cout, cin, 3, 3)`) of the weights for the output gradient
    /// `gy` of the forward pass on `x`, both channels-last.
    pub(crate) fn weight_grad(
        &self,
        x: &[f32],
        gy: &[f32],
        gw: &mut [f32],
    ) -> Result<(), DnnlError> {
        let t = &self.tiling;
        let Some(grad) = &self.grad else {
            return Err(DnnlError::Input(
                "a weight gradient from a kernel built for inference".into(),
            ));
        };
        let (x_len, y_len, u_len) = t.lens();
        if x.len() != x_len || gy.len() != y_len || gw.len() != t.cin * t.cout * 9 {
            return Err(DnnlError::Input(format!(
                "buffers of {}, {} and {} elements for the weight gradient of a convolution of \
                 {x_len} to {y_len}",
                x.len(),
                gy.len(),
                gw.len()
            )));
        }
        let (chunk, ps) = (self.chunk, self.strides);
        let mut scratch = Scratch::new(u_len + POINTS * (ps.v + ps.m));
        let (du, rest) = scratch.buf().split_at_mut(u_len);
        let (v, dm) = rest.split_at_mut(POINTS * ps.v);
        let dm = &mut dm[..POINTS * ps.m];
        let tiles = t.tiles();
        for start in (0..tiles).step_by(chunk) {
            let rows = chunk.min(tiles - start);
            let product = match &grad.tail {
                Some(tail) if rows < chunk => tail,
                _ if start == 0 => &grad.first,
                _ => &grad.full,
            };
            t.transform_input(x, start, rows, ps.v, v);
            t.transform_output_grad(gy, start, rows, ps.m, dm);
            product.run(dm, v, du)?;
        }
        t.weights_from_grad(du, gw);
        Ok(())
    }

    /// `winograd_4x4_3x3+matmul:` and the implementation oneDNN chose for the products.
    pub(crate) fn implementation(&self) -> &str {
        &self.implementation
    }

    /// `y = conv(x, w) + bias` on channels-last `x` and `y`, the weights `w` MXNet's
    /// `(cout, cin, 3, 3)` of the forward pass (for [`Pass::DataGrad`] too: `x` is then the
    /// output gradient and `y` the data gradient).
    pub(crate) fn run(
        &self,
        x: &[f32],
        w: &[f32],
        bias: Option<&[f32]>,
        y: &mut [f32],
    ) -> Result<(), DnnlError> {
        let t = &self.tiling;
        let (x_len, y_len, u_len) = t.lens();
        if x.len() != x_len || y.len() != y_len || w.len() != t.cin * t.cout * 9 {
            return Err(DnnlError::Input(format!(
                "buffers of {}, {} and {} elements for a convolution of {x_len} to {y_len}",
                x.len(),
                w.len(),
                y.len()
            )));
        }
        if bias.is_some_and(|b| b.len() != t.cout) {
            return Err(DnnlError::Input("a bias of another length".into()));
        }
        let (chunk, ps) = (self.chunk, self.strides);
        let mut scratch = Scratch::new(u_len + POINTS * (ps.v + ps.m));
        let (u, rest) = scratch.buf().split_at_mut(u_len);
        let (v, m) = rest.split_at_mut(POINTS * ps.v);
        let m = &mut m[..POINTS * ps.m];
        t.transform_weights(w, self.pass == Pass::DataGrad, u);
        let tiles = t.tiles();
        for start in (0..tiles).step_by(chunk) {
            let rows = chunk.min(tiles - start);
            let product = match &self.tail {
                Some(tail) if rows < chunk => tail,
                _ => &self.full,
            };
            t.transform_input(x, start, rows, ps.v, v);
            product.run(v, u, m)?;
            t.transform_output(m, start, rows, ps.m, bias, y);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deterministic pseudo-random fill in [-1, 1).
    fn fill(len: usize, seed: u64) -> Vec<f32> {
        let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        (0..len)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                (s >> 40) as f32 / (1u64 << 23) as f32 - 1.0
            })
            .collect()
    }

    /// The direct convolution, in f64, of channels-last `x` by MXNet's `(cout, cin, 3, 3)`.
    fn direct(t: &Tiling, x: &[f32], w: &[f32], bias: Option<&[f32]>) -> Vec<f64> {
        let mut y = vec![0.0f64; t.lens().1];
        for b in 0..t.n {
            for oy in 0..t.oh {
                for ox in 0..t.ow {
                    for co in 0..t.cout {
                        let mut s = bias.map_or(0.0, |b| b[co] as f64);
                        for r in 0..3 {
                            for c in 0..3 {
                                let (yy, xx) = (oy + r, ox + c);
                                if yy < t.ph || xx < t.pw || yy - t.ph >= t.h || xx - t.pw >= t.w {
                                    continue;
                                }
                                let p = ((b * t.h + yy - t.ph) * t.w + xx - t.pw) * t.cin;
                                for ci in 0..t.cin {
                                    s += x[p + ci] as f64
                                        * w[((co * t.cin + ci) * 3 + r) * 3 + c] as f64;
                                }
                            }
                        }
                        y[((b * t.oh + oy) * t.ow + ox) * t.cout + co] = s;
                    }
                }
            }
        }
        y
    }

    /// The convolution through the transforms, with the products done here in f64.
    fn by_points(
        t: &Tiling,
        x: &[f32],
        w: &[f32],
        flipped: bool,
        bias: Option<&[f32]>,
        chunk: usize,
    ) -> Vec<f32> {
        let mut u = vec![0.0; t.lens().2];
        t.transform_weights(w, flipped, &mut u);
        let mut y = vec![f32::NAN; t.lens().1];
        let (ci_stride, co_stride) = t.u_strides(flipped);
        let tiles = t.tiles();
        for start in (0..tiles).step_by(chunk) {
            let rows = chunk.min(tiles - start);
            // the points as the kernels lay them out: apart by an odd number of cache lines
            let (vs, ms) = (point_stride(rows * t.cin), point_stride(rows * t.cout));
            let mut v = vec![f32::NAN; POINTS * vs];
            t.transform_input(x, start, rows, vs, &mut v);
            let mut m = vec![f32::NAN; POINTS * ms];
            for k in 0..POINTS {
                for r in 0..rows {
                    for co in 0..t.cout {
                        let s: f64 = (0..t.cin)
                            .map(|ci| {
                                v[k * vs + r * t.cin + ci] as f64
                                    * u[k * t.u_stride() + ci * ci_stride + co * co_stride] as f64
                            })
                            .sum();
                        m[k * ms + r * t.cout + co] = s as f32;
                    }
                }
            }
            t.transform_output(&m, start, rows, ms, bias, &mut y);
        }
        y
    }

    #[test]
    fn points_lie_an_odd_number_of_cache_lines_apart() {
        assert_eq!(point_stride(56 * 128), 56 * 128 + 16); // 7 × 4096 bytes: one line more
        assert_eq!(point_stride(16), 16);
        assert_eq!(point_stride(17), 48);
        assert_eq!(point_stride(3 * 16), 48);
    }

    fn assert_close(got: &[f32], want: &[f64]) {
        let scale = want.iter().fold(1.0f64, |a, v| a.max(v.abs()));
        for (i, (g, w)) in got.iter().zip(want).enumerate() {
            assert!(
                (*g as f64 - w).abs() <= 1e-5 * scale,
                "element {i}: {g} where the direct convolution gives {w}"
            );
        }
    }

    #[test]
    fn points_compute_the_direct_convolution_for_every_padding_and_ragged_sizes() {
        // sizes that leave partial tiles, channel counts off the 16-lane blocks
        for (n, cin, cout, h, w, pad) in [
            (2, 3, 5, 7, 9, (1, 1)),
            (1, 17, 33, 8, 8, (1, 1)),
            (1, 16, 16, 6, 11, (0, 0)),
            (2, 5, 4, 5, 4, (2, 2)),
            (1, 20, 7, 9, 6, (0, 2)),
        ] {
            let t = Tiling::new(n, cin, cout, (h, w), pad).unwrap();
            let x = fill(t.lens().0, 1);
            let wts = fill(cout * cin * 9, 2);
            let bias = fill(cout, 3);
            let want = direct(&t, &x, &wts, Some(&bias));
            for chunk in [1, 3, t.tiles()] {
                let got = by_points(&t, &x, &wts, false, Some(&bias), chunk);
                assert_close(&got, &want);
            }
        }
    }

    #[test]
    fn flipped_weights_give_the_data_gradient() {
        // the data gradient of conv(x, w) with padding p is conv(gy, w turned, channels
        // swapped) with padding 2 - p
        for (n, cin, cout, h, w, p) in
            [(2, 6, 19, 7, 5, 1), (1, 18, 4, 6, 6, 0), (1, 3, 3, 4, 5, 2)]
        {
            let fwd = Tiling::new(n, cin, cout, (h, w), (p, p)).unwrap();
            let wts = fill(cout * cin * 9, 4);
            let gy = fill(fwd.lens().1, 5);
            // the gradient by its definition: gx[x] = sum over outputs reading x
            let mut want = vec![0.0f64; fwd.lens().0];
            for b in 0..n {
                for oy in 0..fwd.oh {
                    for ox in 0..fwd.ow {
                        for r in 0..3 {
                            for c in 0..3 {
                                let (yy, xx) = (oy + r, ox + c);
                                if yy < p || xx < p || yy - p >= h || xx - p >= w {
                                    continue;
                                }
                                for co in 0..cout {
                                    let g =
                                        gy[((b * fwd.oh + oy) * fwd.ow + ox) * cout + co] as f64;
                                    for ci in 0..cin {
                                        want[((b * h + yy - p) * w + xx - p) * cin + ci] +=
                                            g * wts[((co * cin + ci) * 3 + r) * 3 + c] as f64;
                                    }
                                }
                            }
                        }
                    }
                }
            }
            let bwd = Tiling::new(n, cout, cin, (fwd.oh, fwd.ow), (2 - p, 2 - p)).unwrap();
            assert_eq!((bwd.oh, bwd.ow), (h, w));
            let got = by_points(&bwd, &gy, &wts, true, None, 4);
            assert_close(&got, &want);
        }
    }

    #[test]
    fn gradients_of_the_points_give_the_weight_gradient() {
        for (n, cin, cout, h, w, pad) in [
            (2, 3, 5, 7, 9, (1, 1)),
            (1, 17, 18, 6, 6, (0, 0)),
            (2, 4, 20, 5, 4, (2, 1)),
        ] {
            let t = Tiling::new(n, cin, cout, (h, w), pad).unwrap();
            let x = fill(t.lens().0, 6);
            let gy = fill(t.lens().1, 7);
            // gw[co][ci][r][c] = sum over outputs of gy * the input pixel it read
            let mut want = vec![0.0f64; cout * cin * 9];
            for b in 0..n {
                for oy in 0..t.oh {
                    for ox in 0..t.ow {
                        for r in 0..3 {
                            for c in 0..3 {
                                let (yy, xx) = (oy + r, ox + c);
                                if yy < t.ph || xx < t.pw || yy - t.ph >= h || xx - t.pw >= w {
                                    continue;
                                }
                                let p = ((b * h + yy - t.ph) * w + xx - t.pw) * cin;
                                for co in 0..cout {
                                    let g = gy[((b * t.oh + oy) * t.ow + ox) * cout + co] as f64;
                                    for ci in 0..cin {
                                        want[((co * cin + ci) * 3 + r) * 3 + c] +=
                                            g * x[p + ci] as f64;
                                    }
                                }
                            }
                        }
                    }
                }
            }
            let (ci_stride, co_stride) = t.u_strides(false);
            for chunk in [1, 5, t.tiles()] {
                let mut du = vec![0.0f64; t.lens().2];
                let tiles = t.tiles();
                for start in (0..tiles).step_by(chunk) {
                    let rows = chunk.min(tiles - start);
                    let mut v = vec![0.0; POINTS * rows * cin];
                    let mut dm = vec![0.0; POINTS * rows * cout];
                    t.transform_input(&x, start, rows, rows * cin, &mut v);
                    t.transform_output_grad(&gy, start, rows, rows * cout, &mut dm);
                    for k in 0..POINTS {
                        for r in 0..rows {
                            for ci in 0..cin {
                                for co in 0..cout {
                                    du[k * t.u_stride() + ci * ci_stride + co * co_stride] +=
                                        v[(k * rows + r) * cin + ci] as f64
                                            * dm[(k * rows + r) * cout + co] as f64;
                                }
                            }
                        }
                    }
                }
                let du: Vec<f32> = du.iter().map(|&v| v as f32).collect();
                let mut got = vec![f32::NAN; cout * cin * 9];
                t.weights_from_grad(&du, &mut got);
                assert_close(&got, &want);
            }
        }
    }

    #[test]
    fn the_scratch_starts_on_a_cache_line() {
        for len in [1, 100, 4096 + 3] {
            let mut s = Scratch::new(len);
            let buf = s.buf();
            assert_eq!(buf.len(), len);
            assert_eq!(buf.as_ptr() as usize % 64, 0);
        }
    }

    #[test]
    fn tiles_of_an_empty_output_are_refused() {
        assert!(Tiling::new(1, 1, 1, (1, 5), (0, 0)).is_none());
        assert!(Tiling::new(0, 1, 1, (5, 5), (1, 1)).is_none());
        let t = Tiling::new(3, 2, 2, (9, 5), (1, 1)).unwrap();
        assert_eq!((t.oh, t.ow, t.th, t.tw, t.tiles()), (9, 5, 3, 2, 18));
    }
}
