//! ReLU's own loops, one pass over memory each, on OpenMP's threads ([`crate::parallel`]) and
//! the CPU's widest vector instructions: the forward pass, the residual addition with its ReLU
//! (`relu(a + b)`, as a ResNet block ends), and the gradient, also of an output whose gradient
//! comes in two parts (the block's output feeds the next block's body and its shortcut), added
//! in the same pass. oneDNN's ReLU turns NaN into 0; these keep MXNet's semantics: a NaN input
//! gives a NaN output, whose gradient is NaN, and elsewhere the gradient is `g * (y > 0)` (so a
//! NaN or infinite `g` where `y <= 0` stays NaN).

use crate::DnnlError;
use crate::parallel::{SharedMut, for_ranges};

fn check(lens: &[usize], what: &str) -> Result<(), DnnlError> {
    if lens.windows(2).all(|w| w[0] == w[1]) {
        Ok(())
    } else {
        Err(DnnlError::Input(format!(
            "{what}: buffers of different lengths {lens:?}"
        )))
    }
}

/// MXNet's ReLU of one value: NaN passes through.
#[inline(always)]
pub(crate) fn relu(x: f32) -> f32 {
    // NaN compares false, so it passes through
    if x <= 0.0 { 0.0 } else { x }
}

simd_dispatch! {
    fn forward_run / forward_body(x: &[f32], y: &mut [f32]);
    fn add_forward_run / add_forward_body(a: &[f32], b: &[f32], y: &mut [f32]);
    fn backward_run / backward_body(y: &[f32], gy: &[f32], gx: &mut [f32]);
    fn backward_sum_run / backward_sum_body(y: &[f32], g1: &[f32], g2: &[f32], gx: &mut [f32]);
}

#[inline(always)]
fn forward_body(x: &[f32], y: &mut [f32]) {
    for (y, &x) in y.iter_mut().zip(x) {
        *y = relu(x);
    }
}

#[inline(always)]
fn add_forward_body(a: &[f32], b: &[f32], y: &mut [f32]) {
    for ((y, &a), &b) in y.iter_mut().zip(a).zip(b) {
        *y = relu(a + b);
    }
}

#[inline(always)]
fn backward_body(y: &[f32], gy: &[f32], gx: &mut [f32]) {
    for ((gx, &y), &g) in gx.iter_mut().zip(y).zip(gy) {
        *gx = mask(y, g);
    }
}

#[inline(always)]
fn backward_sum_body(y: &[f32], g1: &[f32], g2: &[f32], gx: &mut [f32]) {
    for ((gx, &y), (&a, &b)) in gx.iter_mut().zip(y).zip(g1.iter().zip(g2)) {
        *gx = mask(y, a + b);
    }
}

/// `y = relu(x)`.
pub fn forward(x: &[f32], y: &mut [f32]) -> Result<(), DnnlError> {
    check(&[x.len(), y.len()], "relu")?;
    let out = SharedMut::new(y);
    for_ranges(x.len(), |r| {
        // SAFETY: for_ranges hands out each range once.
        let y = unsafe { out.range(r.clone()) };
        forward_run(&x[r], y);
    });
    Ok(())
}

/// `y = relu(a + b)`.
pub fn add_forward(a: &[f32], b: &[f32], y: &mut [f32]) -> Result<(), DnnlError> {
    check(&[a.len(), b.len(), y.len()], "relu of a sum")?;
    let out = SharedMut::new(y);
    for_ranges(a.len(), |r| {
        // SAFETY: for_ranges hands out each range once.
        let y = unsafe { out.range(r.clone()) };
        add_forward_run(&a[r.clone()], &b[r], y);
    });
    Ok(())
}

/// The gradient of an output `y` whose gradient is `g`: `g` where `y > 0`, `g * 0` elsewhere
/// (NaN stays NaN), NaN where `y` is.
#[inline(always)]
pub(crate) fn mask(y: f32, g: f32) -> f32 {
    let masked = if y > 0.0 { g } else { g * 0.0 };
    if y.is_nan() { y } else { masked }
}

/// The input gradient `gx` for the output `y` and its gradient `gy`.
pub fn backward(y: &[f32], gy: &[f32], gx: &mut [f32]) -> Result<(), DnnlError> {
    check(&[y.len(), gy.len(), gx.len()], "relu gradient")?;
    let out = SharedMut::new(gx);
    for_ranges(y.len(), |r| {
        // SAFETY: for_ranges hands out each range once.
        let gx = unsafe { out.range(r.clone()) };
        backward_run(&y[r.clone()], &gy[r], gx);
    });
    Ok(())
}

/// The input gradient `gx` for the output `y` whose gradient is `g1 + g2`.
pub fn backward_sum(y: &[f32], g1: &[f32], g2: &[f32], gx: &mut [f32]) -> Result<(), DnnlError> {
    check(
        &[y.len(), g1.len(), g2.len(), gx.len()],
        "relu gradient of two parts",
    )?;
    let out = SharedMut::new(gx);
    for_ranges(y.len(), |r| {
        // SAFETY: for_ranges hands out each range once.
        let gx = unsafe { out.range(r.clone()) };
        backward_sum_run(&y[r.clone()], &g1[r.clone()], &g2[r], gx);
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forward_keeps_nan_and_clamps() {
        let x = [-1.0, 0.0, 2.5, f32::NAN, -0.0, f32::INFINITY];
        let mut y = [9.0; 6];
        forward(&x, &mut y).unwrap();
        assert_eq!(&y[..3], &[0.0, 0.0, 2.5]);
        assert!(y[3].is_nan());
        assert_eq!(y[4], 0.0);
        assert_eq!(y[5], f32::INFINITY);
    }

    #[test]
    fn sum_then_relu() {
        let (a, b) = ([1.0, -3.0, f32::NAN], [-2.0, 4.0, 1.0]);
        let mut y = [0.0; 3];
        add_forward(&a, &b, &mut y).unwrap();
        assert_eq!(&y[..2], &[0.0, 1.0]);
        assert!(y[2].is_nan());
    }

    #[test]
    fn gradient_masks_and_keeps_nan() {
        let y = [0.0, 3.0, f32::NAN, 0.0];
        let g = [5.0, 7.0, 1.0, f32::NAN];
        let mut gx = [9.0; 4];
        backward(&y, &g, &mut gx).unwrap();
        assert_eq!(&gx[..2], &[0.0, 7.0]);
        assert!(gx[2].is_nan() && gx[3].is_nan());
    }

    #[test]
    fn gradient_of_two_parts_adds_then_masks() {
        let y = [0.0, 3.0, f32::NAN, 0.0, 1.0];
        let (g1, g2) = ([5.0, 7.0, 1.0, f32::NAN, -2.0], [1.0, 0.5, 1.0, 1.0, 2.0]);
        let mut gx = [9.0; 5];
        backward_sum(&y, &g1, &g2, &mut gx).unwrap();
        assert_eq!(&gx[..2], &[0.0, 7.5]);
        assert!(gx[2].is_nan() && gx[3].is_nan());
        assert_eq!(gx[4], 0.0);
        let err = backward_sum(&y, &g1, &g2[..4], &mut gx).unwrap_err();
        assert!(err.to_string().contains("different lengths"), "{err}");
    }

    #[test]
    fn lengths_must_agree() {
        let mut y = [0.0; 2];
        let err = add_forward(&[1.0; 3], &[1.0; 3], &mut y).unwrap_err();
        assert!(err.to_string().contains("different lengths"), "{err}");
    }

    #[test]
    fn long_buffers_split_the_same() {
        let n = 4 * crate::parallel::MIN_PER_THREAD + 5;
        let a: Vec<f32> = (0..n).map(|i| (i % 7) as f32 - 3.0).collect();
        let b: Vec<f32> = (0..n).map(|i| (i % 5) as f32 - 2.0).collect();
        let mut y = vec![0.0; n];
        add_forward(&a, &b, &mut y).unwrap();
        assert!((0..n).all(|i| y[i] == (a[i] + b[i]).max(0.0)));
    }
}
