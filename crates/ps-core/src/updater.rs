//! Optimizers applied on the servers (placeholder with the final interface; SGD only).

use crate::dtype::Float;
use crate::error::{PsError, Result};

/// An optimizer as it travels to the servers.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct OptimizerSpec {
    pub name: String,
    pub params: Vec<(String, f64)>,
    pub key_mults: Vec<(u64, f64, f64)>,
}

impl OptimizerSpec {
    /// Wire form.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(&(self.name.len() as u32).to_le_bytes());
        out.extend_from_slice(self.name.as_bytes());
        out.extend_from_slice(&(self.params.len() as u32).to_le_bytes());
        for (k, v) in &self.params {
            out.extend_from_slice(&(k.len() as u32).to_le_bytes());
            out.extend_from_slice(k.as_bytes());
            out.extend_from_slice(&v.to_le_bytes());
        }
        out
    }

    /// Parses the wire form.
    pub fn decode(bytes: &[u8]) -> Result<OptimizerSpec> {
        let bad = || PsError::Protocol("malformed optimizer spec".into());
        let mut at = 0usize;
        let mut take = |n: usize| -> Result<&[u8]> {
            let s = bytes.get(at..at + n).ok_or_else(bad)?;
            at += n;
            Ok(s)
        };
        let n = u32::from_le_bytes(take(4)?.try_into().unwrap()) as usize;
        let name = String::from_utf8(take(n)?.to_vec()).map_err(|_| bad())?;
        let np = u32::from_le_bytes(take(4)?.try_into().unwrap()) as usize;
        let mut params = Vec::new();
        for _ in 0..np {
            let n = u32::from_le_bytes(take(4)?.try_into().unwrap()) as usize;
            let k = String::from_utf8(take(n)?.to_vec()).map_err(|_| bad())?;
            let v = f64::from_le_bytes(take(8)?.try_into().unwrap());
            params.push((k, v));
        }
        Ok(OptimizerSpec {
            name,
            params,
            key_mults: vec![],
        })
    }
}

/// A server-side optimizer.
#[derive(Debug, Clone)]
pub struct Updater {
    lr: f64,
}

impl Updater {
    /// Builds the optimizer `spec` names.
    pub fn new(spec: &OptimizerSpec) -> Result<Updater> {
        if spec.name != "sgd" {
            return Err(PsError::Optimizer(format!(
                "optimizer '{}' cannot run on the parameter servers",
                spec.name
            )));
        }
        let mut u = Updater { lr: 0.01 };
        u.set_params(&spec.params, &[])?;
        Ok(u)
    }
    /// Name.
    pub fn name(&self) -> &str {
        "sgd"
    }
    /// Changes hyper-parameters.
    pub fn set_params(
        &mut self,
        params: &[(String, f64)],
        _key_mults: &[(u64, f64, f64)],
    ) -> Result<()> {
        for (k, v) in params {
            match k.as_str() {
                "learning_rate" => self.lr = *v,
                _ => return Err(PsError::Optimizer(format!("unknown {k}"))),
            }
        }
        Ok(())
    }
    /// Learning rate.
    pub fn learning_rate(&self) -> f64 {
        self.lr
    }
    /// Fresh state.
    pub fn new_state<T: Float>(&self, _len: usize) -> State<T> {
        State {
            steps: 0,
            buffers: vec![],
        }
    }
    /// One update.
    pub fn update<T: Float>(&self, _key: u64, weight: &mut [T], grad: &[T], state: &mut State<T>) {
        let lr = T::of(self.lr);
        for (w, g) in weight.iter_mut().zip(grad) {
            *w = *w - lr * *g;
        }
        state.steps += 1;
    }
}

/// Per-key optimizer state.
#[derive(Debug, Clone, PartialEq)]
pub struct State<T> {
    pub steps: u64,
    pub buffers: Vec<Vec<T>>,
}

impl<T: Float> State<T> {
    /// Wire form.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.steps.to_le_bytes());
        out.extend_from_slice(&(self.buffers.len() as u32).to_le_bytes());
        for b in &self.buffers {
            out.extend_from_slice(bytemuck::cast_slice(b));
        }
    }
    /// Parses the wire form.
    pub fn decode(bytes: &[u8], len: usize) -> Result<(State<T>, usize)> {
        let bad = || PsError::Protocol("malformed optimizer state".into());
        let steps = u64::from_le_bytes(bytes.get(0..8).ok_or_else(bad)?.try_into().unwrap());
        let nb = u32::from_le_bytes(bytes.get(8..12).ok_or_else(bad)?.try_into().unwrap()) as usize;
        let mut at = 12;
        let sz = std::mem::size_of::<T>();
        let mut buffers = Vec::new();
        for _ in 0..nb {
            let raw = bytes.get(at..at + len * sz).ok_or_else(bad)?;
            buffers.push(
                raw.chunks_exact(sz)
                    .map(bytemuck::pod_read_unaligned)
                    .collect(),
            );
            at += len * sz;
        }
        Ok((State { steps, buffers }, at))
    }
}
