//! The blob that carries saved optimizer states between servers, workers and files:
//! `count:u64`, then per piece `key:u64 offset:u64 is_f64:u8 len:u64 state:u8*len`, where
//! `state` is an `updater::State` encoding for the piece of `key` starting at element `offset`.

use crate::error::{PsError, Result};

/// One saved piece: key, element offset, whether it computes in float64, encoded state.
pub type StatePiece<'a> = (u64, u64, bool, &'a [u8]);

/// Splits a blob into its pieces; a malformed blob is a protocol error, never a panic.
pub fn split(blob: &[u8]) -> Result<Vec<StatePiece<'_>>> {
    let bad = || PsError::Protocol("malformed optimizer-state blob".into());
    let u64_at = |at: usize| -> Result<u64> {
        let raw = blob
            .get(at..at.checked_add(8).ok_or_else(bad)?)
            .ok_or_else(bad)?;
        Ok(u64::from_le_bytes(raw.try_into().expect("8 bytes")))
    };
    let n = u64_at(0)?;
    let mut at = 8usize;
    let mut out = Vec::new();
    for _ in 0..n {
        let key = u64_at(at)?;
        let offset = u64_at(at + 8)?;
        let is_f64 = *blob.get(at + 16).ok_or_else(bad)? != 0;
        let len = usize::try_from(u64_at(at + 17)?).map_err(|_| bad())?;
        let start = at + 25;
        let end = start.checked_add(len).ok_or_else(bad)?;
        out.push((key, offset, is_f64, blob.get(start..end).ok_or_else(bad)?));
        at = end;
    }
    if at != blob.len() {
        return Err(bad());
    }
    Ok(out)
}

/// Writes pieces as one blob.
pub fn join(pieces: &[StatePiece<'_>]) -> Vec<u8> {
    let mut out = (pieces.len() as u64).to_le_bytes().to_vec();
    for (key, offset, is_f64, state) in pieces {
        out.extend_from_slice(&key.to_le_bytes());
        out.extend_from_slice(&offset.to_le_bytes());
        out.push(*is_f64 as u8);
        out.extend_from_slice(&(state.len() as u64).to_le_bytes());
        out.extend_from_slice(state);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn round_trip() {
        let pieces: Vec<StatePiece> = vec![(1, 0, false, b"abc"), (2, 10, true, b"")];
        let blob = join(&pieces);
        assert_eq!(split(&blob).unwrap(), pieces);
        assert!(split(&blob[..blob.len() - 1]).is_err());
        let mut longer = blob.clone();
        longer.push(0);
        assert!(split(&longer).is_err());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        #[test]
        fn garbage_never_panics(data in proptest::collection::vec(any::<u8>(), 0..256)) {
            let _ = split(&data);
        }
    }
}
