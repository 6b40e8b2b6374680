//! Element types the servers aggregate, with MXNet's numeric type codes.
//!
//! float32 and float64 keys are stored as they are; float16 and bfloat16 keys travel at two bytes
//! per element but are summed and updated in a float32 master copy on the server.

use half::slice::HalfFloatSliceExt;
use half::{bf16, f16};

use crate::error::{PsError, Result};

/// Element type of a key, numbered as MXNet numbers its dtypes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum DType {
    F32 = 0,
    F64 = 1,
    F16 = 2,
    BF16 = 12,
}

impl DType {
    /// Decodes MXNet's type code.
    pub fn from_code(code: u8) -> Result<DType> {
        match code {
            0 => Ok(DType::F32),
            1 => Ok(DType::F64),
            2 => Ok(DType::F16),
            12 => Ok(DType::BF16),
            _ => Err(PsError::Protocol(format!(
                "dtype code {code} is not one the parameter server aggregates \
                 (float32, float64, float16, bfloat16)"
            ))),
        }
    }

    /// Parses NumPy's name for the type.
    pub fn from_name(name: &str) -> Result<DType> {
        match name {
            "float32" | "f4" | "<f4" => Ok(DType::F32),
            "float64" | "f8" | "<f8" => Ok(DType::F64),
            "float16" | "f2" | "<f2" => Ok(DType::F16),
            "bfloat16" => Ok(DType::BF16),
            other => Err(PsError::Rejected(format!(
                "dtype {other} is not supported by the parameter server \
                 (float32, float64, float16, bfloat16)"
            ))),
        }
    }

    /// Bytes per element on the wire.
    pub fn size(self) -> usize {
        match self {
            DType::F32 => 4,
            DType::F64 => 8,
            DType::F16 | DType::BF16 => 2,
        }
    }

    /// NumPy's name for the type.
    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "float32",
            DType::F64 => "float64",
            DType::F16 => "float16",
            DType::BF16 => "bfloat16",
        }
    }

    /// True when the server keeps a float64 master copy (else float32).
    pub fn is_f64(self) -> bool {
        self == DType::F64
    }

    /// Whether a key of this dtype accepts an array of `pushed` in `access`: its own dtype
    /// always; a push into a key with a float32 master copy (float32, float16, bfloat16) also
    /// any of those three, summed in float32. Inits and pulls take the key's own dtype only.
    pub fn accepts(self, pushed: DType, access: Access) -> bool {
        let f32_family = |d: DType| matches!(d, DType::F32 | DType::F16 | DType::BF16);
        pushed == self || (access == Access::Push && f32_family(self) && f32_family(pushed))
    }
}

/// How an array meets a key: what [`DType::accepts`] decides on, and the verb of its messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    Init,
    Push,
    Pull,
}

impl Access {
    /// "init with", "pushed", "pulled": how error messages say it.
    pub fn verb(self) -> &'static str {
        match self {
            Access::Init => "init with",
            Access::Push => "pushed",
            Access::Pull => "pulled",
        }
    }
}

impl std::fmt::Display for DType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// "[3, 4]".
pub fn shape_str(shape: &[u64]) -> String {
    let dims: Vec<String> = shape.iter().map(u64::to_string).collect();
    format!("[{}]", dims.join(", "))
}

/// "float32 [3, 4]".
pub fn describe_array(dtype: DType, shape: &[u64]) -> String {
    format!("{dtype} {}", shape_str(shape))
}

/// A floating-point type the server computes in: `f32` or `f64`.
pub trait Float:
    num_traits::Float + bytemuck::Pod + Send + Sync + std::fmt::Debug + 'static
{
    /// Converts wire bytes of `dtype` into `dst`, element by element (`dst.len()` elements).
    fn read_into(dst: &mut [Self], src: &[u8], dtype: DType);
    /// Adds wire bytes of `dtype` onto `dst`.
    fn add_into(dst: &mut [Self], src: &[u8], dtype: DType);
    /// Writes the sum of two wire arrays into `dst` in one pass.
    fn sum_into(dst: &mut [Self], a: &[u8], da: DType, b: &[u8], db: DType);
    /// Converts `src` to wire bytes of `dtype`.
    fn write_as(src: &[Self], dtype: DType) -> Vec<u8>;
    /// From an `f64` hyper-parameter.
    fn of(v: f64) -> Self;
}

macro_rules! impl_float {
    ($t:ty) => {
        impl Float for $t {
            fn read_into(dst: &mut [Self], src: &[u8], dtype: DType) {
                convert(dst, src, dtype, |_, v| v);
            }

            fn add_into(dst: &mut [Self], src: &[u8], dtype: DType) {
                convert(dst, src, dtype, |d, v| d + v);
            }

            fn sum_into(dst: &mut [Self], a: &[u8], da: DType, b: &[u8], db: DType) {
                if da == db && da.size() == std::mem::size_of::<Self>() {
                    let n = std::mem::size_of::<Self>();
                    let load = |c: &[u8]| -> Self { bytemuck::pod_read_unaligned(c) };
                    for ((d, x), y) in dst.iter_mut().zip(a.chunks_exact(n)).zip(b.chunks_exact(n))
                    {
                        *d = load(x) + load(y);
                    }
                } else {
                    Self::read_into(dst, a, da);
                    Self::add_into(dst, b, db);
                }
            }

            fn write_as(src: &[Self], dtype: DType) -> Vec<u8> {
                let mut out = Vec::with_capacity(src.len() * dtype.size());
                match dtype {
                    DType::F32 => src
                        .iter()
                        .for_each(|v| out.extend_from_slice(&(*v as f32).to_le_bytes())),
                    DType::F64 => src
                        .iter()
                        .for_each(|v| out.extend_from_slice(&(*v as f64).to_le_bytes())),
                    DType::F16 => src.iter().for_each(|v| {
                        out.extend_from_slice(&f16::from_f64(*v as f64).to_le_bytes())
                    }),
                    DType::BF16 => src.iter().for_each(|v| {
                        out.extend_from_slice(&bf16::from_f64(*v as f64).to_le_bytes())
                    }),
                }
                out
            }

            fn of(v: f64) -> Self {
                v as $t
            }
        }
    };
}

impl_float!(f32);
impl_float!(f64);

/// Applies `f(dst[i], src[i])` with `src` decoded from little-endian `dtype` bytes. Unaligned
/// source bytes are fine: each element is loaded with `from_le_bytes`, which compiles to a plain
/// (vectorised) load on little-endian machines.
fn convert<T: Float>(dst: &mut [T], src: &[u8], dtype: DType, f: impl Fn(T, T) -> T) {
    debug_assert_eq!(src.len(), dst.len() * dtype.size());
    let of64 = |v: f64| T::from(v).unwrap_or_else(T::nan);
    let of32 = |v: f32| T::from(v).unwrap_or_else(T::nan);
    match dtype {
        DType::F32 => {
            for (d, s) in dst.iter_mut().zip(src.chunks_exact(4)) {
                *d = f(*d, of32(f32::from_le_bytes([s[0], s[1], s[2], s[3]])));
            }
        }
        DType::F64 => {
            for (d, s) in dst.iter_mut().zip(src.chunks_exact(8)) {
                let v = f64::from_le_bytes(s.try_into().expect("chunk of 8"));
                *d = f(*d, of64(v));
            }
        }
        DType::F16 => {
            // A block at a time: the slice conversion uses the CPU's float16 instructions
            // where it has them.
            const BLOCK: usize = 256;
            let (mut halves, mut floats) = ([f16::ZERO; BLOCK], [0f32; BLOCK]);
            for (d, s) in dst.chunks_mut(BLOCK).zip(src.chunks(2 * BLOCK)) {
                let n = d.len();
                for (h, c) in halves.iter_mut().zip(s.chunks_exact(2)) {
                    *h = f16::from_le_bytes([c[0], c[1]]);
                }
                halves[..n].convert_to_f32_slice(&mut floats[..n]);
                for (d, v) in d.iter_mut().zip(&floats[..n]) {
                    *d = f(*d, of32(*v));
                }
            }
        }
        DType::BF16 => {
            for (d, s) in dst.iter_mut().zip(src.chunks_exact(2)) {
                *d = f(*d, of32(bf16::from_le_bytes([s[0], s[1]]).to_f32()));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip() {
        for d in [DType::F32, DType::F64, DType::F16, DType::BF16] {
            assert_eq!(DType::from_code(d as u8).unwrap(), d);
            assert_eq!(DType::from_name(d.name()).unwrap(), d);
        }
        assert!(
            DType::from_code(4)
                .unwrap_err()
                .to_string()
                .contains("dtype code 4")
        );
        assert!(
            DType::from_name("int32")
                .unwrap_err()
                .to_string()
                .contains("int32")
        );
    }

    #[test]
    fn half_precision_sums_in_f32() {
        let halves: Vec<u8> = [1.5f32, -2.25, 1e-3]
            .iter()
            .flat_map(|v| f16::from_f32(*v).to_le_bytes())
            .collect();
        let mut acc = vec![0f32; 3];
        f32::add_into(&mut acc, &halves, DType::F16);
        f32::add_into(&mut acc, &halves, DType::F16);
        assert_eq!(acc[0], 3.0);
        assert_eq!(acc[1], -4.5);
        assert!((acc[2] - 2.0 * f16::from_f32(1e-3).to_f32()).abs() < 1e-9);
        let back = f32::write_as(&acc, DType::F16);
        assert_eq!(&back[0..2], &f16::from_f32(3.0).to_le_bytes());
    }

    #[test]
    fn unaligned_source_reads() {
        let mut raw = vec![0u8; 1];
        for v in [1.0f32, 2.0, 3.0] {
            raw.extend_from_slice(&v.to_le_bytes());
        }
        let mut out = vec![0f32; 3];
        f32::read_into(&mut out, &raw[1..], DType::F32);
        assert_eq!(out, [1.0, 2.0, 3.0]);
        let mut d = vec![0f64; 3];
        f64::read_into(&mut d, &raw[1..], DType::F32);
        assert_eq!(d, [1.0, 2.0, 3.0]);
    }
}
