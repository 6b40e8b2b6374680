//! A piece of a row-sparse key: its rows, the checks of the row messages that address it, the
//! sparse sum of a round's row pushes, and what a round of them does to the value.
//!
//! Without an optimizer a completed round *replaces* the piece by the round's sum, as a dense
//! push does (MXNet: a push without an updater replaces the value): rows absent from every push
//! of the round become zero. With one, `Updater::update_rows` applies it to the rows present
//! (lazily) or to every row (`lazy_update = 0`).

use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;

use super::KeyData;
use crate::codec::Codec;
use crate::dtype::{Access, DType, Float, shape_str};
use crate::error::{PsError, Result};
use crate::protocol::frame::Entry;
use crate::protocol::frame::rows::{RowsView, check_ids};
use crate::updater::{Piece, Updater};
use crate::warm::{WARM_ROWS, warm};

/// How a piece of a row-sparse key lies in its array.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct RowLayout {
    /// Elements per row.
    pub(super) len: usize,
    /// Rows of the whole array.
    pub(super) total: u64,
    /// The array's rows this piece holds: `first..end`.
    pub(super) first: u64,
    pub(super) end: u64,
}

impl RowLayout {
    /// The rows of the piece an entry of a row-sparse key addresses (`None` for a dense key);
    /// an error when the piece is not whole rows.
    pub(super) fn of(e: &Entry) -> Result<Option<RowLayout>> {
        if !e.rows {
            return Ok(None);
        }
        let bad = |why: &str| {
            PsError::ShapeMismatch(format!(
                "key {}: row-sparse {} {}: {why}",
                e.key,
                e.dtype,
                shape_str(&e.shape)
            ))
        };
        let Some((&total, rest)) = e.shape.split_first() else {
            return Err(bad("a row-sparse array has at least one dimension"));
        };
        let len = rest
            .iter()
            .try_fold(1u64, |n, &d| n.checked_mul(d))
            .filter(|&n| n > 0 && total > 0)
            .ok_or_else(|| bad("it needs at least one row and one element per row"))?;
        if !e.offset.is_multiple_of(len) || !e.count.is_multiple_of(len) {
            return Err(bad(&format!(
                "elements {}..{} are not whole rows of {len}",
                e.offset,
                e.offset.saturating_add(e.count)
            )));
        }
        let len = usize::try_from(len).map_err(|_| bad("rows too long"))?;
        let first = e.offset / len as u64;
        Ok(Some(RowLayout {
            len,
            total,
            first,
            end: first + e.count / len as u64,
        }))
    }
}

/// The sum of a round's row pushes: the rows present and their summed values.
#[derive(Debug, Default)]
pub(super) struct RowSum<T> {
    /// Rows present, as indices into the piece, increasing.
    rows: Vec<usize>,
    /// Their values, `len` elements each, in the same order.
    values: Vec<T>,
}

impl<T: Float> RowSum<T> {
    /// The rows of a checked push-rows payload of `dtype` values.
    pub(super) fn decode(layout: RowLayout, dtype: DType, payload: &[u8]) -> RowSum<T> {
        let view = RowsView::parse(0, payload, layout.len * dtype.size()).expect("checked");
        let mut values = vec![T::zero(); view.len() * layout.len];
        T::read_into(&mut values, view.values, dtype);
        RowSum {
            rows: view.ids().map(|id| (id - layout.first) as usize).collect(),
            values,
        }
    }

    /// Adds the rows of a checked push-rows payload: the union of the rows, summed where both
    /// have one (a merge of two increasing lists, reading the payload in place).
    pub(super) fn add(&mut self, layout: RowLayout, dtype: DType, payload: &[u8]) {
        let n = layout.len;
        let row_bytes = n * dtype.size();
        let view = RowsView::parse(0, payload, row_bytes).expect("checked");
        if view.is_empty() {
            return;
        }
        let theirs: Vec<usize> = view.ids().map(|id| (id - layout.first) as usize).collect();
        let their_row = |j: usize| &view.values[j * row_bytes..(j + 1) * row_bytes];
        let mut rows = Vec::with_capacity(self.rows.len() + theirs.len());
        let mut values: Vec<T> = Vec::with_capacity(self.values.len() + theirs.len() * n);
        let (mut i, mut j) = (0, 0);
        while i < self.rows.len() || j < theirs.len() {
            let at = values.len();
            match (self.rows.get(i), theirs.get(j)) {
                (Some(&r), Some(&s)) if r == s => {
                    rows.push(r);
                    values.extend_from_slice(&self.values[i * n..][..n]);
                    T::add_into(&mut values[at..], their_row(j), dtype);
                    (i, j) = (i + 1, j + 1);
                }
                (Some(&r), s) if s.is_none_or(|&s| r < s) => {
                    rows.push(r);
                    values.extend_from_slice(&self.values[i * n..][..n]);
                    i += 1;
                }
                _ => {
                    rows.push(theirs[j]);
                    values.resize(at + n, T::zero());
                    T::read_into(&mut values[at..], their_row(j), dtype);
                    j += 1;
                }
            }
        }
        *self = RowSum { rows, values };
    }

    /// Adds the rows onto a dense piece of rows of `len` elements.
    pub(super) fn add_into(&self, dense: &mut [T], len: usize) {
        for (j, &r) in self.rows.iter().enumerate() {
            let row = &mut dense[r * len..(r + 1) * len];
            for (d, &v) in row.iter_mut().zip(&self.values[j * len..(j + 1) * len]) {
                *d = *d + v;
            }
        }
    }
}

impl<T: Float> KeyData<T> {
    /// The piece's rows (only called for a row-sparse key).
    pub(super) fn rows_layout(&self) -> RowLayout {
        self.rows.expect("a row-sparse key")
    }

    fn layout_for(&self, e: &Entry, access: Access) -> Result<RowLayout> {
        self.rows.ok_or_else(|| {
            PsError::InvalidRows(format!(
                "key {} is not row-sparse (it was initialised with init, not init_rows); push \
                 and pull it whole",
                self.key
            ))
        })?;
        self.check(e, access)?;
        Ok(self.rows_layout())
    }

    /// Checks a push-rows entry completely without changing anything: a row-sparse key, its
    /// layout, a plain payload of whole rows of an accepted dtype, ids increasing and among
    /// the piece's rows.
    pub(super) fn check_push_rows(&self, e: &Entry) -> Result<()> {
        let layout = self.layout_for(e, Access::Push)?;
        if e.codec != Codec::Plain {
            return Err(PsError::Rejected(format!(
                "key {}: row-sparse pushes cannot be compressed",
                self.key
            )));
        }
        let view = RowsView::parse(self.key, &e.payload, layout.len * e.dtype.size())?;
        check_ids(
            self.key,
            view.id_bytes(),
            layout.total,
            layout.first,
            layout.end,
        )
    }

    /// Checks a pull-rows entry: a row-sparse key pulled in its dtype, ids as for a push.
    pub(super) fn check_pull_rows(&self, e: &Entry) -> Result<()> {
        let layout = self.layout_for(e, Access::Pull)?;
        let view = RowsView::parse(self.key, &e.payload, 0)?;
        check_ids(
            self.key,
            view.id_bytes(),
            layout.total,
            layout.first,
            layout.end,
        )
    }

    /// The values of the rows a checked pull-rows payload asks for, in the key's dtype.
    pub(super) fn rows_bytes(&self, payload: &[u8]) -> Bytes {
        let layout = self.rows_layout();
        debug_assert!(
            self.sent.is_none(),
            "a row-sparse piece's replica is copied in"
        );
        let view = RowsView::parse(self.key, payload, 0).expect("checked");
        let mut out = Vec::with_capacity(view.len() * layout.len * self.dtype.size());
        let spans: Vec<Range<usize>> = view
            .ids()
            .map(|id| {
                let r = (id - layout.first) as usize;
                r * layout.len..(r + 1) * layout.len
            })
            .collect();
        for chunk in spans.chunks(WARM_ROWS) {
            warm(&self.value, &[], chunk.iter().cloned());
            for span in chunk {
                let row = &self.value[span.clone()];
                if self.dtype.size() == size_of::<T>() {
                    out.extend_from_slice(bytemuck::cast_slice(row));
                } else {
                    out.extend_from_slice(&T::write_as(row, self.dtype));
                }
            }
        }
        Bytes::from(out)
    }

    /// A round of row pushes with an optimizer: the rows present (or, with `lazy_update = 0`,
    /// every row) updated.
    pub(super) fn apply_rows(
        &mut self,
        updater: &Updater,
        epoch: u64,
        sum: &RowSum<T>,
    ) -> Result<()> {
        self.ready_state(updater, epoch)?;
        let len = self.rows_layout().len;
        self.adopt_sent();
        let (_, state) = self.opt.as_mut().expect("state set above");
        let value = Arc::make_mut(&mut self.value);
        let piece = Piece {
            key: self.key,
            offset: self.offset,
        };
        updater.update_rows(piece, value, len, &sum.rows, &sum.values, state)
    }

    /// A round of row pushes without an optimizer: the piece becomes the sum (zero where no
    /// push had the row).
    pub(super) fn replace_by_rows(&mut self, sum: &RowSum<T>) {
        self.adopt_sent();
        match Arc::get_mut(&mut self.value) {
            Some(v) => v.fill(T::zero()),
            // A reply still holds the old value: a new one, rather than a copy to clear.
            None => self.value = Arc::new(vec![T::zero(); self.count as usize]),
        }
        let len = self.rows_layout().len;
        let value = Arc::get_mut(&mut self.value).expect("not shared now");
        sum.add_into(value, len);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::frame::rows::encode_push;

    fn payload(ids: &[u64], values: &[f32]) -> Bytes {
        let ids: Vec<u8> = ids.iter().flat_map(|x| x.to_le_bytes()).collect();
        let values: Vec<u8> = values.iter().flat_map(|x| x.to_le_bytes()).collect();
        encode_push(&ids, &values)
    }

    #[test]
    fn layouts_are_whole_rows() {
        let mut e = Entry::new(3, DType::F32, &[10, 2, 3], 12, 18);
        assert_eq!(RowLayout::of(&e).unwrap(), None);
        e.rows = true;
        let l = RowLayout::of(&e).unwrap().unwrap();
        assert_eq!((l.len, l.total, l.first, l.end), (6, 10, 2, 5));
        e.offset = 13;
        let err = RowLayout::of(&e).unwrap_err().to_string();
        assert!(err.contains("not whole rows of 6"), "{err}");
        for shape in [&[][..], &[0, 4], &[4, 0]] {
            let e = Entry {
                rows: true,
                ..Entry::new(3, DType::F32, shape, 0, 0)
            };
            assert!(RowLayout::of(&e).is_err(), "{shape:?}");
        }
    }

    #[test]
    fn row_sums_merge_sorted_rows() {
        // A piece of rows 10..14 of 2 elements.
        let layout = RowLayout {
            len: 2,
            total: 20,
            first: 10,
            end: 14,
        };
        let mut sum =
            RowSum::<f32>::decode(layout, DType::F32, &payload(&[10, 12], &[1., 2., 3., 4.]));
        sum.add(
            layout,
            DType::F32,
            &payload(&[11, 12, 13], &[5., 6., 7., 8., 9., 10.]),
        );
        sum.add(layout, DType::F32, &payload(&[], &[]));
        assert_eq!(sum.rows, [0, 1, 2, 3]);
        assert_eq!(sum.values, [1., 2., 5., 6., 10., 12., 9., 10.]);
        let mut dense = vec![1.0f32; 8];
        sum.add_into(&mut dense, 2);
        assert_eq!(dense, [2., 3., 6., 7., 11., 13., 10., 11.]);
        let mut sum = RowSum::<f64>::decode(layout, DType::F32, &payload(&[13], &[1., 2.]));
        sum.add(layout, DType::F32, &payload(&[10], &[3., 4.]));
        assert_eq!((sum.rows, sum.values), (vec![0, 3], vec![3., 4., 1., 2.]));
    }
}
