//! Payloads of `PushRows` and `PullRows` entries: some rows of one piece of a row-sparse key.
//!
//! ```text
//! push rows := n:u64 ids:u64*n values:dtype*(n*row_len)
//! pull rows := n:u64 ids:u64*n
//! ```
//! Ids are little-endian, strictly increasing, rows of the whole array. Both sides check them
//! with [`check_ids`]: the worker against the key's rows before anything is sent, the server
//! against the rows of the piece the entry addresses, so that nothing malformed is ever summed.

use bytes::{BufMut, Bytes, BytesMut};

use super::Entry;
use crate::error::{PsError, Result};

/// Bytes of one row id on the wire.
pub const ID_BYTES: usize = 8;

/// Bytes of the row count that opens a payload.
const COUNT_BYTES: usize = 8;

/// A push-rows payload: the count, the ids (`ID_BYTES` each, as [`check_ids`] accepted them),
/// then the rows' values.
pub fn encode_push(ids: &[u8], values: &[u8]) -> Bytes {
    let mut out = BytesMut::with_capacity(COUNT_BYTES + ids.len() + values.len());
    out.put_u64_le((ids.len() / ID_BYTES) as u64);
    out.extend_from_slice(ids);
    out.extend_from_slice(values);
    out.freeze()
}

/// A pull-rows payload: the count and the ids.
pub fn encode_pull(ids: &[u8]) -> Bytes {
    encode_push(ids, &[])
}

/// The rows a payload carries, as views into it.
#[derive(Debug, Clone, Copy)]
pub struct RowsView<'a> {
    ids: &'a [u8],
    /// The rows' values (empty for a pull).
    pub values: &'a [u8],
}

impl<'a> RowsView<'a> {
    /// Reads a payload of `key` whose rows take `row_bytes` each (0 for a pull: ids only);
    /// the sizes must add up exactly.
    pub fn parse(key: u64, payload: &'a [u8], row_bytes: usize) -> Result<RowsView<'a>> {
        let Some((count, rest)) = payload.split_at_checked(COUNT_BYTES) else {
            return Err(PsError::ShapeMismatch(format!(
                "key {key}: a row message of {} bytes lacks its row count",
                payload.len()
            )));
        };
        let n = u64::from_le_bytes(count.try_into().expect("8 bytes"));
        let expected = n
            .checked_mul((ID_BYTES + row_bytes) as u64)
            .filter(|&b| b == rest.len() as u64);
        if expected.is_none() {
            return Err(PsError::ShapeMismatch(format!(
                "key {key}: a row message of {n} rows carries {} bytes, expected {} ({} bytes \
                 of ids and values per row)",
                rest.len(),
                n.saturating_mul((ID_BYTES + row_bytes) as u64),
                ID_BYTES + row_bytes
            )));
        }
        let (ids, values) = rest.split_at(n as usize * ID_BYTES);
        Ok(RowsView { ids, values })
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.ids.len() / ID_BYTES
    }

    /// Whether it carries no rows.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// The ids as they travel.
    pub fn id_bytes(&self) -> &'a [u8] {
        self.ids
    }

    /// The ids.
    pub fn ids(&self) -> impl ExactSizeIterator<Item = u64> + 'a {
        self.ids
            .chunks_exact(ID_BYTES)
            .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
    }
}

/// Elements the reply to a pull-rows entry carries (when the entry is valid): its row count
/// times the row length its shape gives.
pub fn pulled_elements(e: &Entry) -> u64 {
    let n = e
        .payload
        .get(..COUNT_BYTES)
        .map_or(0, |b| u64::from_le_bytes(b.try_into().expect("8 bytes")));
    let row_len = e
        .shape
        .iter()
        .skip(1)
        .fold(1u64, |a, &d| a.saturating_mul(d));
    n.saturating_mul(row_len)
}

/// The number of 8-byte ids in `ids` before the first that is at least `row` (ids increasing).
pub fn ids_below(ids: &[u8], row: u64) -> usize {
    let ids: &[[u8; ID_BYTES]] = bytemuck::cast_slice(&ids[..ids.len() / ID_BYTES * ID_BYTES]);
    ids.partition_point(|c| u64::from_le_bytes(*c) < row)
}

/// Id `i` of little-endian 8-byte ids.
pub fn id_at(ids: &[u8], i: usize) -> i64 {
    let at = i * ID_BYTES;
    i64::from_le_bytes(ids[at..at + ID_BYTES].try_into().expect("8 bytes"))
}

/// Checks little-endian 8-byte row ids of `key` (a table of `rows` rows): a whole number of
/// ids, strictly increasing, each in `lo..hi` (the key's rows, or those of one piece), none
/// negative. The error names the first bad id and why.
pub fn check_ids(key: u64, ids: &[u8], rows: u64, lo: u64, hi: u64) -> Result<()> {
    if !ids.len().is_multiple_of(ID_BYTES) {
        return Err(PsError::InvalidRows(format!(
            "key {key}: {} bytes of row ids are not a whole number of 8-byte ids",
            ids.len()
        )));
    }
    let mut prev: Option<i64> = None;
    for (i, c) in ids.chunks_exact(ID_BYTES).enumerate() {
        let id = i64::from_le_bytes(c.try_into().expect("8 bytes"));
        if id < 0 {
            return Err(PsError::InvalidRows(format!(
                "key {key}: row id {id} (at position {i}) is negative; the key has {rows} rows"
            )));
        }
        if id as u64 >= rows {
            return Err(PsError::InvalidRows(format!(
                "key {key}: row id {id} (at position {i}) is out of range: the key has {rows} \
                 rows (0..{rows})"
            )));
        }
        if !(lo..hi).contains(&(id as u64)) {
            return Err(PsError::InvalidRows(format!(
                "key {key}: row id {id} (at position {i}) is not among rows {lo}..{hi}, which \
                 this message addresses"
            )));
        }
        if let Some(p) = prev
            && id <= p
        {
            return Err(PsError::InvalidRows(format!(
                "key {key}: row ids must be strictly increasing, but {id} (at position {i}) \
                 follows {p}"
            )));
        }
        prev = Some(id);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(v: &[i64]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    #[test]
    fn payloads_round_trip_and_bad_sizes_are_refused() {
        let p = encode_push(&ids(&[1, 4]), &[7u8; 16]);
        let v = RowsView::parse(9, &p, 8).unwrap();
        assert_eq!(v.ids().collect::<Vec<_>>(), [1, 4]);
        assert_eq!((v.len(), v.values), (2, &[7u8; 16][..]));
        for cut in 0..p.len() {
            assert!(RowsView::parse(9, &p[..cut], 8).is_err(), "cut {cut}");
        }
        let e = RowsView::parse(9, &p, 4).unwrap_err().to_string();
        assert!(
            e.contains("key 9: a row message of 2 rows carries 32 bytes"),
            "{e}"
        );
        // A count no payload can hold does not overflow.
        let mut huge = u64::MAX.to_le_bytes().to_vec();
        huge.extend_from_slice(&[0; 16]);
        assert!(RowsView::parse(9, &huge, 8).is_err());
        let pull = encode_pull(&ids(&[3]));
        assert_eq!(RowsView::parse(9, &pull, 0).unwrap().len(), 1);
        assert_eq!(id_at(&ids(&[5, -2]), 1), -2);
        let sorted = ids(&[1, 4, 9]);
        let below: Vec<usize> = [0, 1, 2, 4, 9, 10].map(|r| ids_below(&sorted, r)).to_vec();
        assert_eq!(below, [0, 0, 1, 1, 2, 3]);
        let mut e = Entry::new(9, crate::dtype::DType::F32, &[10, 3, 2], 0, 60);
        e.payload = pull;
        assert_eq!(pulled_elements(&e), 6);
    }

    #[test]
    fn ids_must_increase_and_stay_in_range() {
        check_ids(1, &ids(&[0, 2, 9]), 10, 0, 10).unwrap();
        check_ids(1, &[], 10, 0, 10).unwrap();
        let err = |v: &[i64], lo, hi| check_ids(1, &ids(v), 10, lo, hi).unwrap_err();
        let e = err(&[0, 10], 0, 10);
        assert!(
            matches!(&e, PsError::InvalidRows(m)
            if m.contains("row id 10") && m.contains("the key has 10 rows")),
            "{e}"
        );
        let e = err(&[-1], 0, 10).to_string();
        assert!(e.contains("row id -1") && e.contains("negative"), "{e}");
        let e = err(&[3, 3], 0, 10).to_string();
        assert!(e.contains("strictly increasing, but 3"), "{e}");
        let e = err(&[4, 2], 0, 10).to_string();
        assert!(e.contains("but 2 (at position 1) follows 4"), "{e}");
        let e = err(&[4], 5, 10).to_string();
        assert!(e.contains("row id 4") && e.contains("rows 5..10"), "{e}");
        let e = check_ids(1, &[0; 7], 10, 0, 10).unwrap_err().to_string();
        assert!(e.contains("7 bytes of row ids"), "{e}");
    }
}
