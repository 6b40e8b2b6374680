//! [`OptimizerSpec`]: an optimizer as it travels to the servers, and its binary encoding.
//!
//! ```text
//! spec    := version:u8 name:str n_params:u32 param* n_mults:u32 mult* payload
//! str     := len:u32 utf8:u8*len
//! param   := name:str value:f64
//! mult    := key:u64 lr_mult:f64 wd_mult:f64
//! payload := len:u64 u8*len          (version 2 only; version 1 has none)
//! ```
//! All integers and floats little-endian; `version` is 2 (version 1, without the payload, is
//! still read). Values are not checked here: [`Updater::new`](super::Updater::new) validates
//! them and names what is wrong.

use crate::error::{PsError, Result};

/// Format version written first.
const VERSION: u8 = 2;
/// The version before the payload, still decoded.
const VERSION_1: u8 = 1;

/// An optimizer as it travels to the servers: MXNet's lower-case name, hyper-parameters by
/// MXNet's constructor names, and per-key learning-rate / weight-decay multipliers; or an
/// optimizer the servers run through a hook outside ps-core (a Python optimizer, see
/// [`super::foreign`]), whose name starts with [`FOREIGN`](super::FOREIGN) and whose
/// `payload` is what the hook builds it from.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct OptimizerSpec {
    /// MXNet's registry name, e.g. `"sgd"` or `"adam"`.
    pub name: String,
    /// Hyper-parameters by MXNet's constructor names, e.g. `("momentum", 0.9)`; flags are 0 or 1.
    pub params: Vec<(String, f64)>,
    /// `(key, lr_mult, wd_mult)` for keys whose multipliers are not 1.
    pub key_mults: Vec<(u64, f64, f64)>,
    /// Opaque bytes for a foreign optimizer (the pickled Python optimizer); empty otherwise.
    pub payload: Vec<u8>,
}

impl OptimizerSpec {
    /// Whether this is a foreign optimizer (named [`FOREIGN`](super::FOREIGN) or
    /// `python:<description>`), which only a server with a registered factory runs.
    pub fn is_foreign(&self) -> bool {
        super::foreign::is_foreign(&self.name)
    }

    /// Encodes the spec in the format above.
    pub fn encode(&self) -> Vec<u8> {
        let strings: usize = self.params.iter().map(|(n, _)| 12 + n.len()).sum();
        let mut out = Vec::with_capacity(
            21 + self.name.len() + strings + 24 * self.key_mults.len() + self.payload.len(),
        );
        out.push(VERSION);
        put_str(&mut out, &self.name);
        put_count(&mut out, self.params.len());
        for (name, value) in &self.params {
            put_str(&mut out, name);
            out.extend_from_slice(&value.to_le_bytes());
        }
        put_count(&mut out, self.key_mults.len());
        for (key, lr_mult, wd_mult) in &self.key_mults {
            out.extend_from_slice(&key.to_le_bytes());
            out.extend_from_slice(&lr_mult.to_le_bytes());
            out.extend_from_slice(&wd_mult.to_le_bytes());
        }
        out.extend_from_slice(&(self.payload.len() as u64).to_le_bytes());
        out.extend_from_slice(&self.payload);
        out
    }

    /// Decodes a spec written by [`OptimizerSpec::encode`]; every byte must belong to it.
    ///
    /// Fails with [`PsError::Protocol`] on malformed input; never panics.
    pub fn decode(bytes: &[u8]) -> Result<OptimizerSpec> {
        let mut r = Reader::new(bytes, "optimizer spec");
        let version = r.u8()?;
        if version != VERSION && version != VERSION_1 {
            return Err(r.error(format!(
                "format version {version}, expected {VERSION} (or {VERSION_1})"
            )));
        }
        let name = r.str()?;
        let n_params = r.u32()? as usize;
        // Never reserve more than the bytes present can hold (a param takes at least 12).
        let mut params = Vec::with_capacity(n_params.min(r.remaining() / 12));
        for _ in 0..n_params {
            let name = r.str()?;
            params.push((name, r.f64()?));
        }
        let n_mults = r.u32()? as usize;
        let mut key_mults = Vec::with_capacity(n_mults.min(r.remaining() / 24));
        for _ in 0..n_mults {
            key_mults.push((r.u64()?, r.f64()?, r.f64()?));
        }
        let payload = match version {
            VERSION_1 => Vec::new(),
            _ => {
                let len = r.u64()?;
                let len = usize::try_from(len)
                    .map_err(|_| r.error(format!("a payload of {len} bytes")))?;
                r.take(len)?.to_vec()
            }
        };
        if r.remaining() != 0 {
            return Err(r.error(format!("{} stray bytes after the end", r.remaining())));
        }
        Ok(OptimizerSpec {
            name,
            params,
            key_mults,
            payload,
        })
    }
}

/// Writes a length or count as u32 (the types here never come near 4 GiB).
fn put_count(out: &mut Vec<u8>, n: usize) {
    out.extend_from_slice(&u32::try_from(n).unwrap_or(u32::MAX).to_le_bytes());
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    put_count(out, s.len());
    out.extend_from_slice(s.as_bytes());
}

/// Reads little-endian values from the front of a byte slice, failing with
/// [`PsError::Protocol`] when the bytes run out.
pub(super) struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
    what: &'static str,
}

impl<'a> Reader<'a> {
    pub(super) fn new(bytes: &'a [u8], what: &'static str) -> Self {
        Reader { bytes, at: 0, what }
    }

    pub(super) fn error(&self, msg: String) -> PsError {
        PsError::Protocol(format!("{} at byte {}: {msg}", self.what, self.at))
    }

    /// Bytes read so far.
    pub(super) fn consumed(&self) -> usize {
        self.at
    }

    pub(super) fn remaining(&self) -> usize {
        self.bytes.len() - self.at
    }

    pub(super) fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if n > self.remaining() {
            return Err(self.error(format!(
                "truncated: {n} bytes needed, {} left",
                self.remaining()
            )));
        }
        let out = &self.bytes[self.at..self.at + n];
        self.at += n;
        Ok(out)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N]> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N)?);
        Ok(a)
    }

    pub(super) fn u8(&mut self) -> Result<u8> {
        Ok(self.array::<1>()?[0])
    }

    pub(super) fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    pub(super) fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    fn f64(&mut self) -> Result<f64> {
        Ok(f64::from_le_bytes(self.array()?))
    }

    fn str(&mut self) -> Result<String> {
        let len = self.u32()? as usize;
        let raw = self.take(len)?;
        String::from_utf8(raw.to_vec()).map_err(|_| self.error("a name is not UTF-8".into()))
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::super::tests::{mutate, spec};
    use super::*;

    fn sample_spec() -> OptimizerSpec {
        OptimizerSpec {
            name: "rmsprop".into(),
            params: vec![
                ("learning_rate".into(), 0.05),
                ("centered".into(), 1.0),
                ("clip_gradient".into(), -1.0),
                ("gamma1".into(), f64::MIN_POSITIVE),
            ],
            key_mults: vec![(0, 1.0, 0.0), (u64::MAX, 0.5, 2.0)],
            payload: Vec::new(),
        }
    }

    /// A foreign optimizer's spec: a name, multipliers and an opaque payload.
    fn foreign_spec() -> OptimizerSpec {
        OptimizerSpec {
            name: "python:mymodule.MyOptimizer".into(),
            params: vec![],
            key_mults: vec![(3, 0.5, 1.0)],
            payload: b"\x80\x04opaque pickle bytes\x00\xff".to_vec(),
        }
    }

    #[test]
    fn spec_round_trip() {
        for s in [
            sample_spec(),
            foreign_spec(),
            OptimizerSpec::default(),
            spec("sgd", &[("momentum", 0.9)]),
        ] {
            let bytes = s.encode();
            assert_eq!(OptimizerSpec::decode(&bytes).unwrap(), s);
        }
    }

    #[test]
    fn the_payload_follows_the_multipliers() {
        let s = foreign_spec();
        let bytes = s.encode();
        let n = s.payload.len();
        assert_eq!(&bytes[bytes.len() - n..], &s.payload[..]);
        let len = &bytes[bytes.len() - n - 8..bytes.len() - n];
        assert_eq!(len, (n as u64).to_le_bytes());
        // A payload longer than the bytes left is truncated, never read past the end.
        let mut long = bytes.clone();
        let at = long.len() - n - 8;
        long[at..at + 8].copy_from_slice(&u64::MAX.to_le_bytes());
        let e = OptimizerSpec::decode(&long).unwrap_err().to_string();
        assert!(e.contains("truncated") || e.contains("payload"), "{e}");
    }

    #[test]
    fn version_1_specs_have_no_payload() {
        let s = sample_spec();
        let mut v1 = s.encode();
        v1.truncate(v1.len() - 8); // the payload's length, 0
        v1[0] = 1;
        assert_eq!(OptimizerSpec::decode(&v1).unwrap(), s);
        // A version-1 spec followed by a payload has stray bytes.
        let mut v1_extra = s.encode();
        v1_extra[0] = 1;
        let e = OptimizerSpec::decode(&v1_extra).unwrap_err().to_string();
        assert!(e.contains("8 stray bytes"), "{e}");
    }

    #[test]
    fn malformed_specs_are_protocol_errors() {
        let bytes = sample_spec().encode();
        for cut in 0..bytes.len() {
            let e = OptimizerSpec::decode(&bytes[..cut]).unwrap_err();
            assert!(matches!(e, PsError::Protocol(_)), "{e:?}");
        }
        let mut extra = bytes.clone();
        extra.push(0);
        let e = OptimizerSpec::decode(&extra).unwrap_err().to_string();
        assert!(e.contains("1 stray bytes"), "{e}");
        let mut version = bytes.clone();
        version[0] = 3;
        let e = OptimizerSpec::decode(&version).unwrap_err().to_string();
        assert!(e.contains("format version 3"), "{e}");
        let mut utf8 = bytes.clone();
        utf8[5] = 0xff; // first byte of the name
        let e = OptimizerSpec::decode(&utf8).unwrap_err().to_string();
        assert!(e.contains("not UTF-8"), "{e}");
        let mut count = bytes;
        count[12..16].copy_from_slice(&u32::MAX.to_le_bytes()); // params count after "rmsprop"
        let e = OptimizerSpec::decode(&count).unwrap_err().to_string();
        assert!(e.contains("truncated"), "{e}");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]

        #[test]
        fn random_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..256)) {
            let _ = OptimizerSpec::decode(&data);
        }

        #[test]
        fn mutated_specs_never_panic(
            flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..6),
            cut in any::<usize>(),
        ) {
            let _ = OptimizerSpec::decode(&mutate(sample_spec().encode(), &flips, cut));
            let _ = OptimizerSpec::decode(&mutate(foreign_spec().encode(), &flips, cut));
        }
    }
}
