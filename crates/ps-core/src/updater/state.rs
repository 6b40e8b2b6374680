//! [`State`]: what an optimizer keeps per key, and its binary encoding.
//!
//! ```text
//! state  := elem_size:u8 steps:u64 n_buffers:u8 buffer*
//! buffer := len:u64 elem*len          (elem: f32 or f64 as elem_size says)
//! ```
//! All little-endian. A decoder is told the slice length it expects and checks every buffer
//! against it, and the element size against the type it decodes into.

use std::mem::size_of;

use super::spec::Reader;
use crate::dtype::Float;
use crate::error::Result;

/// Per-key optimizer state: the number of updates applied so far (MXNet's per-index update
/// count `t`) and the element buffers (momentum, mean/var, history...).
#[derive(Debug, Clone, PartialEq)]
pub struct State<T> {
    /// Updates applied to this key so far, starting from `begin_num_update`.
    pub steps: u64,
    /// The optimizer's element buffers, each as long as the key's slice; in the order the
    /// optimizer's file documents.
    pub buffers: Vec<Vec<T>>,
}

impl<T: Float> State<T> {
    /// Appends this state to `out` (for `save_optimizer_states`).
    pub fn encode(&self, out: &mut Vec<u8>) {
        let n = self.buffers.len().min(usize::from(u8::MAX));
        let elems: usize = self.buffers[..n].iter().map(Vec::len).sum();
        out.reserve(10 + 8 * n + elems * size_of::<T>());
        out.push(size_of::<T>() as u8);
        out.extend_from_slice(&self.steps.to_le_bytes());
        out.push(n as u8);
        for buf in &self.buffers[..n] {
            out.extend_from_slice(&(buf.len() as u64).to_le_bytes());
            put_elems(out, buf);
        }
    }

    /// Decodes one state written by `encode` from the start of `bytes` for a slice of `len`
    /// elements; returns it and the bytes consumed.
    ///
    /// Fails with [`PsError::Protocol`](crate::error::PsError::Protocol) on malformed input;
    /// never panics.
    pub fn decode(bytes: &[u8], len: usize) -> Result<(State<T>, usize)> {
        let mut r = Reader::new(bytes, "optimizer state");
        let elem = r.u8()?;
        if usize::from(elem) != size_of::<T>() {
            return Err(r.error(format!(
                "elements of {elem} bytes, expected {}",
                size_of::<T>()
            )));
        }
        let steps = r.u64()?;
        let n = r.u8()?;
        let mut buffers = Vec::with_capacity(usize::from(n));
        for _ in 0..n {
            let count = r.u64()?;
            if u64::try_from(len).ok() != Some(count) {
                return Err(r.error(format!("a buffer of {count} elements for a slice of {len}")));
            }
            let size = len
                .checked_mul(size_of::<T>())
                .ok_or_else(|| r.error(format!("{len} elements overflow")))?;
            buffers.push(read_elems(r.take(size)?, len));
        }
        Ok((State { steps, buffers }, r.consumed()))
    }
}

/// Appends `v` as little-endian bytes.
fn put_elems<T: Float>(out: &mut Vec<u8>, v: &[T]) {
    let start = out.len();
    out.extend_from_slice(bytemuck::cast_slice(v));
    if cfg!(target_endian = "big") {
        out[start..]
            .chunks_exact_mut(size_of::<T>())
            .for_each(<[u8]>::reverse);
    }
}

/// Reads `len` elements from exactly `len * size_of::<T>()` little-endian bytes.
fn read_elems<T: Float>(src: &[u8], len: usize) -> Vec<T> {
    let mut v = vec![T::zero(); len];
    let dst: &mut [u8] = bytemuck::cast_slice_mut(&mut v);
    dst.copy_from_slice(src);
    if cfg!(target_endian = "big") {
        dst.chunks_exact_mut(size_of::<T>())
            .for_each(<[u8]>::reverse);
    }
    v
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::super::tests::{GRADS, W0, mutate, run, updater};
    use super::*;
    use crate::error::PsError;

    fn sample_state<T: Float>() -> State<T> {
        let u = updater("rmsprop", &[("centered", 1.0), ("learning_rate", 0.1)]);
        run::<T>(&u, &W0, &GRADS).1
    }

    fn state_round_trip<T: Float>() {
        let st = sample_state::<T>();
        let mut bytes = vec![];
        st.encode(&mut bytes);
        let end = bytes.len();
        bytes.extend_from_slice(b"next state");
        let (back, used) = State::<T>::decode(&bytes, W0.len()).unwrap();
        assert_eq!((back, used), (st, end));

        let empty = State::<T> {
            steps: u64::MAX,
            buffers: vec![],
        };
        let mut bytes = vec![];
        empty.encode(&mut bytes);
        assert_eq!(
            State::<T>::decode(&bytes, 123).unwrap(),
            (empty, bytes.len())
        );
    }

    #[test]
    fn state_round_trips() {
        state_round_trip::<f32>();
        state_round_trip::<f64>();
    }

    #[test]
    fn malformed_states_are_protocol_errors() {
        let mut bytes = vec![];
        sample_state::<f32>().encode(&mut bytes);
        for cut in 0..bytes.len() {
            assert!(
                State::<f32>::decode(&bytes[..cut], W0.len()).is_err(),
                "cut {cut}"
            );
        }
        let e = State::<f64>::decode(&bytes, W0.len()).unwrap_err();
        assert!(
            matches!(&e, PsError::Protocol(m) if m.contains("elements of 4 bytes, expected 8")),
            "{e}"
        );
        let e = State::<f32>::decode(&bytes, 5).unwrap_err().to_string();
        assert!(e.contains("a buffer of 6 elements for a slice of 5"), "{e}");
        let e = State::<f32>::decode(&bytes, usize::MAX).unwrap_err();
        assert!(matches!(e, PsError::Protocol(_)));
    }

    fn decode_both(data: &[u8], len: usize) {
        let _ = State::<f32>::decode(data, len);
        let _ = State::<f64>::decode(data, len);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]

        #[test]
        fn random_bytes_never_panic(
            data in proptest::collection::vec(any::<u8>(), 0..256),
            len in prop_oneof![0usize..16, any::<usize>()],
        ) {
            decode_both(&data, len);
        }

        #[test]
        fn mutated_states_never_panic(
            flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..6),
            cut in any::<usize>(),
        ) {
            let mut bytes = vec![];
            sample_state::<f32>().encode(&mut bytes);
            decode_both(&mutate(bytes, &flips, cut), W0.len());
            let mut bytes = vec![];
            sample_state::<f64>().encode(&mut bytes);
            decode_both(&mutate(bytes, &flips, cut), W0.len());
        }
    }
}
