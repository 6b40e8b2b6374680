//! Gradient compression: what a worker makes of a float32 gradient before it crosses the wire,
//! and what a server makes of it again.
//!
//! A [`Compression`] is one of:
//! - `2bit`, the error-feedback quantisation of MXNet 1.9.1, with its numbers. The worker keeps a
//!   float32 residual per key; a push adds the gradient to it element by element, and an element
//!   whose residual is then `>= threshold` is sent as `+threshold` (and `threshold` is subtracted
//!   from the residual), one whose residual is `<= -threshold` as `-threshold` (and `threshold`
//!   is added), any other as 0. All in float32, in that order, so the values a server decodes
//!   are exactly MXNet's. The entry travels with codec [`Codec::TwoBit`] and dtype float32 (the
//!   type it decodes to).
//! - `fp16` and `bf16`: each element rounded to the nearest float16 / bfloat16 (ties to even).
//!   These travel as ordinary float16 / bfloat16 entries ([`Codec::Plain`]), which servers sum
//!   into a float32 key in float32.
//!
//! # 2-bit payload
//! ```text
//! payload := threshold:f32 code:u8*(4*ceil(count/16))
//! ```
//! Element `j` of the entry (counted from the entry's own `offset`, so every slice of a sliced key
//! is packed on its own) is the 2-bit code in byte `j / 4` at bits 7-6 when `j % 4 == 0`, 5-4,
//! 3-2 and 1-0 for the next three: `0b11` is `+threshold`, `0b10` is `-threshold`, `0b00` is 0
//! (and `0b01`, which no worker sends, reads as 0, as MXNet reads it). The code bytes come in
//! groups of four, MXNet's layout of 16 elements per float32 word as that word lies in memory;
//! the codes after the last element are zero. A server checks the payload's length for the
//! entry's count and that the threshold is finite and positive before it uses an entry.

use half::slice::HalfFloatSliceExt;
use half::{bf16, f16};

use crate::dtype::{DType, Float};
use crate::error::{PsError, Result};

/// Bytes of the threshold that opens a 2-bit payload.
pub const TWO_BIT_HEADER: usize = 4;
/// Elements per group of four code bytes.
const TWO_BIT_GROUP: usize = 16;

/// How an entry's payload encodes its elements: the `codec` byte of an entry on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Codec {
    /// `count` elements of the entry's dtype, little-endian.
    Plain = 0,
    /// A 2-bit payload (see the module's doc) that decodes to float32.
    TwoBit = 1,
}

impl Codec {
    /// Decodes the wire code.
    pub fn from_code(code: u8) -> Result<Codec> {
        match code {
            0 => Ok(Codec::Plain),
            1 => Ok(Codec::TwoBit),
            _ => Err(PsError::Protocol(format!("unknown codec {code}"))),
        }
    }
}

/// What a payload holds: elements of a dtype, or 2-bit codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Packing {
    Plain(DType),
    TwoBit,
}

impl Packing {
    /// The packing of an entry of `dtype` and `codec`.
    pub fn new(dtype: DType, codec: Codec) -> Packing {
        match codec {
            Codec::Plain => Packing::Plain(dtype),
            Codec::TwoBit => Packing::TwoBit,
        }
    }

    /// Payload bytes of `count` elements (saturating: a count no payload can have).
    pub fn payload_len(self, count: u64) -> u64 {
        match self {
            Packing::Plain(dtype) => count.saturating_mul(dtype.size() as u64),
            Packing::TwoBit => two_bit_len(count),
        }
    }

    /// Checks that `payload` encodes `count` elements; names `key` and `what` holds them.
    pub fn check(self, key: u64, payload: &[u8], count: u64, what: &str) -> Result<()> {
        let expected = self.payload_len(count);
        if payload.len() as u64 != expected {
            let kind = match self {
                Packing::Plain(dtype) => dtype.name(),
                Packing::TwoBit => "2-bit codes",
            };
            return Err(PsError::ShapeMismatch(format!(
                "key {key}: pushed {} bytes of {kind} but {what} takes {expected}",
                payload.len()
            )));
        }
        if self == Packing::TwoBit {
            let t = two_bit_threshold(payload);
            if !(t.is_finite() && t > 0.0) {
                return Err(PsError::Rejected(format!(
                    "key {key}: 2-bit push with threshold {t}; it must be finite and above 0"
                )));
            }
        }
        Ok(())
    }

    /// Writes the elements of `src` (checked by [`Packing::check`]) into `dst`.
    pub fn read_into<T: Float>(self, dst: &mut [T], src: &[u8]) {
        match self {
            Packing::Plain(dtype) => T::read_into(dst, src, dtype),
            Packing::TwoBit => two_bit_apply(dst, src, |_, v| v),
        }
    }

    /// Adds the elements of `src` (checked by [`Packing::check`]) onto `dst`.
    pub fn add_into<T: Float>(self, dst: &mut [T], src: &[u8]) {
        match self {
            Packing::Plain(dtype) => T::add_into(dst, src, dtype),
            Packing::TwoBit => two_bit_apply(dst, src, |d, v| d + v),
        }
    }

    /// Writes the sum of two payloads into `dst`, in one pass when both are plain.
    pub fn sum_into<T: Float>(dst: &mut [T], a: (Packing, &[u8]), b: (Packing, &[u8])) {
        match (a, b) {
            ((Packing::Plain(da), a), (Packing::Plain(db), b)) => T::sum_into(dst, a, da, b, db),
            _ => {
                a.0.read_into(dst, a.1);
                b.0.add_into(dst, b.1);
            }
        }
    }
}

/// Bytes of a 2-bit payload of `count` elements (saturating).
pub fn two_bit_len(count: u64) -> u64 {
    (count.div_ceil(TWO_BIT_GROUP as u64))
        .saturating_mul(4)
        .saturating_add(TWO_BIT_HEADER as u64)
}

/// The threshold of a 2-bit payload (NaN when it is too short to have one).
fn two_bit_threshold(payload: &[u8]) -> f32 {
    match payload.first_chunk::<TWO_BIT_HEADER>() {
        Some(b) => f32::from_le_bytes(*b),
        None => f32::NAN,
    }
}

/// Applies `f(dst[i], value_i)` for every element of a checked 2-bit payload.
fn two_bit_apply<T: Float>(dst: &mut [T], payload: &[u8], f: impl Fn(T, T) -> T) {
    let t = two_bit_threshold(payload);
    // Indexed by the code: 0b00 and 0b01 are 0, 0b10 is -threshold, 0b11 is +threshold.
    let values = [
        T::zero(),
        T::zero(),
        T::of(-f64::from(t)),
        T::of(f64::from(t)),
    ];
    let codes = &payload[TWO_BIT_HEADER..];
    for (d4, &byte) in dst.chunks_mut(4).zip(codes) {
        for (k, d) in d4.iter_mut().enumerate() {
            let code = (byte >> (6 - 2 * k)) & 0b11;
            *d = f(*d, values[code as usize]);
        }
    }
}

/// The 2-bit code of one element: adds `g` to the residual `r`, then takes `t` off it (+) or
/// gives it back (-) when the residual has reached it, in MXNet's float32 order (`v - 0.0` is
/// `v`, so the branch-free form leaves every other residual as it was).
#[inline(always)]
fn two_bit_code(r: &mut f32, g: f32, t: f32) -> u8 {
    let v = *r + g;
    let pos = v >= t;
    let neg = v <= -t;
    let taken = if pos {
        t
    } else if neg {
        -t
    } else {
        0.0
    };
    *r = v - taken;
    u8::from(pos | neg) << 1 | u8::from(pos)
}

/// Appends the 2-bit payload of `grad` (float32 bytes) to `out`, updating `residual` (one
/// element per gradient element).
fn two_bit_encode(grad: &[u8], residual: &mut [f32], t: f32, out: &mut Vec<u8>) {
    let count = residual.len();
    debug_assert_eq!(grad.len(), count * 4);
    let start = out.len();
    out.reserve(two_bit_len(count as u64) as usize);
    out.extend_from_slice(&t.to_le_bytes());
    let g = |c: &[u8]| f32::from_le_bytes([c[0], c[1], c[2], c[3]]);
    // Whole groups of 16 elements, four code bytes each, in fixed-size blocks the compiler
    // can keep in registers.
    let mut groups_r = residual.chunks_exact_mut(TWO_BIT_GROUP);
    let mut groups_g = grad.chunks_exact(4 * TWO_BIT_GROUP);
    for (r, c) in (&mut groups_r).zip(&mut groups_g) {
        let mut codes = [0u8; TWO_BIT_GROUP];
        for ((code, r), c) in codes.iter_mut().zip(r.iter_mut()).zip(c.chunks_exact(4)) {
            *code = two_bit_code(r, g(c), t);
        }
        for q in codes.chunks_exact(4) {
            out.push(q[0] << 6 | q[1] << 4 | q[2] << 2 | q[3]);
        }
    }
    let (r, c) = (groups_r.into_remainder(), groups_g.remainder());
    for (r, c) in r.chunks_mut(4).zip(c.chunks(16)) {
        let mut byte = 0;
        for (k, (r, c)) in r.iter_mut().zip(c.chunks_exact(4)).enumerate() {
            byte |= two_bit_code(r, g(c), t) << (6 - 2 * k);
        }
        out.push(byte);
    }
    out.resize(start + two_bit_len(count as u64) as usize, 0);
}

/// `grad` (float32 bytes) as float16 bytes, converted a block at a time (the slice conversion
/// uses the CPU's float16 instructions where it has them).
fn f16_encode(grad: &[u8]) -> Vec<u8> {
    const BLOCK: usize = 256;
    let mut out = Vec::with_capacity(grad.len() / 2);
    let mut src = [0f32; BLOCK];
    let mut dst = [f16::ZERO; BLOCK];
    for block in grad.chunks(4 * BLOCK) {
        let n = block.len() / 4;
        for (s, c) in src.iter_mut().zip(block.chunks_exact(4)) {
            *s = f32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        }
        dst[..n].convert_from_f32_slice(&src[..n]);
        dst[..n]
            .iter()
            .for_each(|h| out.extend_from_slice(&h.to_le_bytes()));
    }
    out
}

/// A compression a worker applies to the float32 gradients it pushes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Compression {
    /// MXNet's 2-bit quantisation with error feedback.
    TwoBit { threshold: f32 },
    /// Rounded to float16.
    F16,
    /// Rounded to bfloat16.
    BF16,
}

impl Compression {
    /// The compression named `kind` ("2bit", "fp16" or "bf16"); `threshold` is 2bit's and must
    /// be finite and above 0 (as a float32).
    pub fn new(kind: &str, threshold: f64) -> Result<Compression> {
        match kind {
            "2bit" => {
                let t = threshold as f32;
                if t.is_finite() && t > 0.0 {
                    Ok(Compression::TwoBit { threshold: t })
                } else {
                    Err(PsError::Rejected(format!(
                        "gradient compression 2bit: threshold must be finite and greater than \
                         0, got {threshold}"
                    )))
                }
            }
            "fp16" => Ok(Compression::F16),
            "bf16" => Ok(Compression::BF16),
            other => Err(PsError::Rejected(format!(
                "unknown gradient compression type '{other}' (2bit, fp16 or bf16)"
            ))),
        }
    }

    /// "2bit", "fp16" or "bf16".
    pub fn name(self) -> &'static str {
        match self {
            Compression::TwoBit { .. } => "2bit",
            Compression::F16 => "fp16",
            Compression::BF16 => "bf16",
        }
    }

    /// The dtype of the entries it sends (2-bit entries carry the float32 they decode to).
    pub fn dtype(self) -> DType {
        match self {
            Compression::TwoBit { .. } => DType::F32,
            Compression::F16 => DType::F16,
            Compression::BF16 => DType::BF16,
        }
    }

    /// The codec of the entries it sends.
    pub fn codec(self) -> Codec {
        match self {
            Compression::TwoBit { .. } => Codec::TwoBit,
            Compression::F16 | Compression::BF16 => Codec::Plain,
        }
    }

    /// Whether it keeps a residual per key.
    /// The type a pulled sum of pushes may travel in under this compression: float16 for
    /// `fp16`, bfloat16 for `bf16`; `2bit` pulls stay plain (its error feedback needs a
    /// residual per receiver of the value).
    pub fn pull_dtype(self) -> Option<DType> {
        match self {
            Compression::F16 => Some(DType::F16),
            Compression::BF16 => Some(DType::BF16),
            Compression::TwoBit { .. } => None,
        }
    }

    pub fn needs_residual(self) -> bool {
        matches!(self, Compression::TwoBit { .. })
    }

    /// Encodes `grad` (float32, little-endian) as an entry payload. For 2bit `residual` holds
    /// at least one element per gradient element and is updated; other kinds ignore it.
    pub fn encode(self, grad: &[u8], residual: &mut [f32]) -> Vec<u8> {
        match self {
            Compression::TwoBit { threshold } => {
                let mut out = Vec::new();
                two_bit_encode(grad, &mut residual[..grad.len() / 4], threshold, &mut out);
                out
            }
            Compression::F16 => f16_encode(grad),
            Compression::BF16 => grad
                .chunks_exact(4)
                .flat_map(|c| {
                    bf16::from_f32(f32::from_le_bytes([c[0], c[1], c[2], c[3]])).to_le_bytes()
                })
                .collect(),
        }
    }

    /// What a receiver decodes from [`Compression::encode`]'s output, as float32 (`dst` has one
    /// element per gradient element).
    pub fn decode(self, payload: &[u8], dst: &mut [f32]) {
        Packing::new(self.dtype(), self.codec()).read_into(dst, payload);
    }
}

impl std::fmt::Display for Compression {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Compression::TwoBit { threshold } => write!(f, "2bit (threshold {threshold})"),
            other => f.write_str(other.name()),
        }
    }
}

#[cfg(test)]
mod tests;
