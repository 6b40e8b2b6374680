//! Placement of keys on servers.
//!
//! An array of up to `bound` elements (`MXNET_KVSTORE_BIGARRAY_BOUND`) lives whole on one server,
//! chosen by hashing its key, so small keys spread evenly. A larger array is cut into S contiguous
//! slices, slice i on server i, so one big layer loads every server alike.
//!
//! A row-sparse array (`init_rows`: rows of `row_len` elements) is placed by MXNet's rule for
//! row-sparse keys: up to `bound` elements whole on one server (the same hashed one), else cut
//! into S contiguous *row* ranges, server i holding rows `rows·i/S .. rows·(i+1)/S`, so that
//! every row lies whole on one server ([`Partitioner::row_parts`]). A server whose range is empty
//! (fewer rows than servers) holds nothing of the key.
//!
//! Whatever lies on one server also travels and is summed in pieces of at most [`PIECE_BYTES`]
//! (whole rows for a row-sparse array, at least one):
//! each piece has its own sync round on the server, so the reply for the first piece of a large
//! pushpull is on its way back while the last piece is still arriving (both directions of the
//! connection busy at once).

/// Largest piece of one array in one frame entry.
pub const PIECE_BYTES: u64 = 1 << 20;

/// One contiguous piece of a key's flattened array and the server that holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Part {
    pub server: usize,
    pub offset: u64,
    pub count: u64,
}

/// Maps keys to servers.
#[derive(Debug, Clone)]
pub struct Partitioner {
    num_servers: usize,
    bound: u64,
}

impl Partitioner {
    /// Places keys over `num_servers` servers (at least one), slicing arrays above `bound`.
    pub fn new(num_servers: usize, bound: u64) -> Self {
        assert!(num_servers > 0, "a job has at least one server");
        Partitioner { num_servers, bound }
    }

    /// Number of servers keys are spread over.
    pub fn num_servers(&self) -> usize {
        self.num_servers
    }

    /// The server that holds small key `key`.
    pub fn server_of(&self, key: u64) -> usize {
        (mix(key) % self.num_servers as u64) as usize
    }

    /// The pieces of an array of `numel` elements of `elem_bytes` bytes stored under `key`,
    /// in order of offset; they cover `0..numel` exactly.
    pub fn parts(&self, key: u64, numel: u64, elem_bytes: usize) -> Vec<Part> {
        let max_piece = (PIECE_BYTES / elem_bytes.max(1) as u64).max(1);
        if numel <= self.bound {
            let server = self.server_of(key);
            return pieces(server, 0, numel, max_piece).collect();
        }
        let s = self.num_servers as u64;
        (0..s)
            .flat_map(|i| {
                let begin = numel * i / s;
                let end = numel * (i + 1) / s;
                pieces(i as usize, begin, end - begin, max_piece)
            })
            .collect()
    }
}

impl Part {
    /// The rows of a row-sparse array (rows of `row_len` elements) this piece holds.
    pub fn rows(&self, row_len: u64) -> std::ops::Range<u64> {
        let row_len = row_len.max(1);
        self.offset / row_len..(self.offset + self.count) / row_len
    }
}

impl Partitioner {
    /// The pieces of a row-sparse array of `rows` rows of `row_len` elements of `elem_bytes`
    /// bytes stored under `key`, in order of offset: whole rows each, at most [`PIECE_BYTES`]
    /// (or one row), covering `0..rows·row_len` exactly; none on a server whose row range is
    /// empty.
    pub fn row_parts(&self, key: u64, rows: u64, row_len: u64, elem_bytes: usize) -> Vec<Part> {
        let row_bytes = row_len.saturating_mul(elem_bytes.max(1) as u64).max(1);
        let max_rows = (PIECE_BYTES / row_bytes).max(1);
        let in_rows = |server: usize, begin: u64, end: u64| {
            pieces(server, begin, end - begin, max_rows)
                .filter(|p| p.count > 0)
                .map(move |p| Part {
                    server,
                    offset: p.offset * row_len,
                    count: p.count * row_len,
                })
        };
        if rows.saturating_mul(row_len) <= self.bound {
            return in_rows(self.server_of(key), 0, rows).collect();
        }
        let s = self.num_servers as u128;
        let bound_of = |i: u128| (rows as u128 * i / s) as u64;
        (0..self.num_servers)
            .flat_map(|i| in_rows(i, bound_of(i as u128), bound_of(i as u128 + 1)))
            .collect()
    }
}

fn pieces(server: usize, offset: u64, count: u64, max_piece: u64) -> impl Iterator<Item = Part> {
    let n = count.div_ceil(max_piece).max(1);
    (0..n).map(move |j| {
        let begin = j * max_piece;
        Part {
            server,
            offset: offset + begin,
            count: max_piece.min(count - begin.min(count)),
        }
    })
}

/// SplitMix64's finaliser: consecutive keys land on unrelated servers.
fn mix(key: u64) -> u64 {
    let mut z = key.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_arrays_go_whole_to_one_server() {
        let p = Partitioner::new(3, 1000);
        for key in 0..50 {
            let parts = p.parts(key, 1000, 4);
            assert_eq!(
                parts,
                vec![Part {
                    server: p.server_of(key),
                    offset: 0,
                    count: 1000
                }]
            );
        }
        let mut load = [0; 3];
        for key in 0..3000 {
            load[p.server_of(key)] += 1;
        }
        assert!(load.iter().all(|&n| (900..1100).contains(&n)), "{load:?}");
    }

    #[test]
    fn big_arrays_are_cut_into_one_slice_per_server() {
        let p = Partitioner::new(3, 1000);
        let parts = p.parts(9, 1001, 4);
        assert_eq!(
            parts,
            vec![
                Part {
                    server: 0,
                    offset: 0,
                    count: 333
                },
                Part {
                    server: 1,
                    offset: 333,
                    count: 334
                },
                Part {
                    server: 2,
                    offset: 667,
                    count: 334
                },
            ]
        );
    }

    /// Every row of a row-sparse array of `rows` rows lies in exactly one part, in order, and
    /// parts are whole rows.
    fn check_rows(parts: &[Part], rows: u64, row_len: u64) {
        let mut next = 0;
        for part in parts {
            assert_eq!(part.offset % row_len, 0, "{parts:?}");
            assert_eq!(part.count % row_len, 0, "{parts:?}");
            assert!(part.count > 0, "{parts:?}");
            assert_eq!(part.rows(row_len).start, next, "{parts:?}");
            next = part.rows(row_len).end;
        }
        assert_eq!(next, rows);
    }

    #[test]
    fn row_sparse_arrays_are_cut_on_row_boundaries() {
        // 10 rows of 3 elements = 30 > bound 20: rows 0..3, 3..6, 6..10 (not elements 0..10).
        let p = Partitioner::new(3, 20);
        let parts = p.row_parts(4, 10, 3, 4);
        assert_eq!(
            parts,
            vec![
                Part {
                    server: 0,
                    offset: 0,
                    count: 9
                },
                Part {
                    server: 1,
                    offset: 9,
                    count: 9
                },
                Part {
                    server: 2,
                    offset: 18,
                    count: 12
                },
            ]
        );
        assert_eq!(parts[2].rows(3), 6..10);
        check_rows(&parts, 10, 3);
        // The dense split of the same elements would cut rows in two.
        assert_eq!(p.parts(4, 30, 4)[0].count, 10);
    }

    #[test]
    fn small_row_sparse_arrays_go_whole_to_the_hashed_server() {
        let p = Partitioner::new(3, 1000);
        for key in 0..20 {
            let parts = p.row_parts(key, 100, 10, 4);
            assert_eq!(
                parts,
                vec![Part {
                    server: p.server_of(key),
                    offset: 0,
                    count: 1000
                }]
            );
        }
    }

    #[test]
    fn every_row_is_owned_by_exactly_one_server() {
        for s in 1..5 {
            let p = Partitioner::new(s, 10);
            for (rows, row_len) in [(1u64, 64u64), (2, 7), (3, 5), (17, 1), (1000, 3)] {
                let parts = p.row_parts(11, rows, row_len, 4);
                check_rows(&parts, rows, row_len);
                if rows * row_len > 10 {
                    // Server i holds rows rows*i/S .. rows*(i+1)/S.
                    for part in &parts {
                        let i = part.server as u64;
                        let (lo, hi) = (rows * i / s as u64, rows * (i + 1) / s as u64);
                        let r = part.rows(row_len);
                        assert!(lo <= r.start && r.end <= hi, "S={s} {parts:?}");
                    }
                }
            }
        }
        // Within a server, pieces of at most PIECE_BYTES, whole rows: 3 rows of 0.4 MiB fit
        // two to a piece; a row over the limit is a piece of its own.
        let p = Partitioner::new(1, u64::MAX);
        let row_len = (PIECE_BYTES * 2 / 5) / 4;
        let parts = p.row_parts(1, 5, row_len, 4);
        assert_eq!(parts.len(), 3);
        check_rows(&parts, 5, row_len);
        let parts = p.row_parts(1, 3, PIECE_BYTES, 4);
        assert_eq!(parts.len(), 3);
        check_rows(&parts, 3, PIECE_BYTES);
    }

    #[test]
    fn pieces_cover_the_array_exactly() {
        let p = Partitioner::new(2, 10);
        for numel in [0u64, 1, 10, 11, 12, 1000] {
            let parts = p.parts(5, numel, 4);
            let mut next = 0;
            for part in &parts {
                assert_eq!(part.offset, next);
                next += part.count;
            }
            assert_eq!(next, numel);
        }
        // Over PIECE_BYTES a slice is split further, still in order.
        let huge = PIECE_BYTES; // elements of 8 bytes: 8x the piece limit
        let p = Partitioner::new(1, u64::MAX);
        let parts = p.parts(1, huge, 8);
        assert_eq!(parts.len(), 8);
        assert!(
            parts
                .iter()
                .all(|x| x.count * 8 == PIECE_BYTES && x.server == 0)
        );
    }
}
