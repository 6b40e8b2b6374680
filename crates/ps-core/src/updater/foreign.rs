//! Optimizers the servers run through a hook outside ps-core: a user's Python optimizer, which a
//! worker sends pickled (as MXNet 1.9.1 does) and a server started from Python runs in its
//! interpreter.
//!
//! ps-core knows nothing of Python. A foreign optimizer travels as an [`OptimizerSpec`] whose
//! name is [`FOREIGN`] (optionally `python:<what it is>`, for messages) and whose `payload` is
//! opaque. The process that runs a server may register a [`ForeignFactory`] with
//! [`set_foreign_factory`] (the Python bindings do, before they run a server); the factory
//! builds a [`ForeignUpdater`] from the payload, which then updates every piece the server holds
//! and keeps its per-piece states itself. Without a factory (the `ps-server` binary) such a spec
//! is refused with a message saying how to run it.
//!
//! [`OptimizerSpec`]: super::OptimizerSpec

use std::fmt::Debug;
use std::sync::{Arc, RwLock};

use crate::dtype::DType;
use crate::error::{PsError, Result};

/// The spec name of a foreign optimizer: `python`, or `python:<description>` where the
/// description (a class name) is used in messages.
pub const FOREIGN: &str = "python";

/// The piece of a key a server holds: the key and the element offset of its slice in the key
/// (0 for a key held whole). A server holds a 1-D slice of a big key, as MXNet's servers do;
/// a piece of a row-sparse key is whole rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Piece {
    /// The key, as workers send it on the wire.
    pub key: u64,
    /// Element offset of the piece in the key.
    pub offset: u64,
}

/// The gradient of one foreign update, in the update's element type, native byte order.
#[derive(Debug, Clone, Copy)]
pub enum ForeignGrad<'a> {
    /// The summed gradient of the whole piece (as long as the weight).
    Dense(&'a [u8]),
    /// A round of a row-sparse key that carried some rows only: `rows` are the rows present
    /// (indices into the piece, increasing), `values` their summed gradients, `row_len`
    /// elements each, in the same order.
    Rows {
        /// Elements per row.
        row_len: usize,
        /// The rows present, as indices into the piece, increasing.
        rows: &'a [usize],
        /// Their gradients, `rows.len() * row_len` elements.
        values: &'a [u8],
    },
}

/// One update a foreign optimizer makes: the piece's weights, changed in place, and its
/// gradient. Weights and gradient are `dtype` elements (float32 or float64: a server computes
/// float16 and bfloat16 keys in float32) in native byte order.
#[derive(Debug)]
pub struct ForeignUpdate<'a> {
    /// Which piece is updated (its state is the one kept for it).
    pub piece: Piece,
    /// The element type of `weight` and of the gradient: [`DType::F32`] or [`DType::F64`].
    pub dtype: DType,
    /// The piece's weights, updated in place.
    pub weight: &'a mut [u8],
    /// The gradient summed over the round's pushes.
    pub grad: ForeignGrad<'a>,
}

/// An optimizer run by a hook outside ps-core. It keeps one state per [`Piece`], made at the
/// piece's first update, and is called under the piece's lock (never twice at once for one
/// piece; for different pieces, possibly from different threads).
pub trait ForeignUpdater: Send + Sync + Debug {
    /// Applies one update. On error the weight may be unchanged or changed; the server reports
    /// the error to the workers and keeps serving.
    fn update(&self, update: ForeignUpdate<'_>) -> Result<()>;

    /// Changes hyper-parameters (such as `learning_rate`) and per-key multipliers
    /// `(key, lr_mult, wd_mult)` from now on; fails, changing nothing, for one it cannot change.
    fn set_params(&self, params: &[(String, f64)], key_mults: &[(u64, f64, f64)]) -> Result<()>;

    /// The state of `piece`, as bytes [`ForeignUpdater::load_states`] takes back; `None`
    /// before the piece's first update.
    fn save_state(&self, piece: Piece) -> Result<Option<Vec<u8>>>;

    /// Replaces the states of the pieces given, from bytes [`ForeignUpdater::save_state`] made;
    /// checks them all first and changes nothing on error.
    fn load_states(&self, states: &[(Piece, &[u8])]) -> Result<()>;
}

/// Builds a foreign optimizer from its spec's payload.
pub type ForeignFactory = dyn Fn(&[u8]) -> Result<Arc<dyn ForeignUpdater>> + Send + Sync;

/// The factory registered in this process, if any.
static FACTORY: RwLock<Option<Arc<ForeignFactory>>> = RwLock::new(None);

/// Registers the factory that builds foreign optimizers in this process (replacing one
/// registered before). A process that runs a server registers it before the server starts.
pub fn set_foreign_factory(factory: Arc<ForeignFactory>) {
    let mut slot = FACTORY
        .write()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    *slot = Some(factory);
}

/// The factory registered in this process.
pub(super) fn registered_factory() -> Option<Arc<ForeignFactory>> {
    FACTORY
        .read()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .clone()
}

/// Whether a spec named `name` is a foreign optimizer.
pub(super) fn is_foreign(name: &str) -> bool {
    name == FOREIGN
        || name
            .strip_prefix(FOREIGN)
            .is_some_and(|rest| rest.starts_with(':'))
}

/// A foreign optimizer installed on a server: what messages call it, and its hook.
#[derive(Debug, Clone)]
pub(super) struct Foreign {
    /// `python` or `python:<description>`: the spec's name.
    name: String,
    hook: Arc<dyn ForeignUpdater>,
}

impl Foreign {
    /// Builds the foreign optimizer of spec `name` / `payload` with `factory`; without one,
    /// the error says that this server cannot run it and what to do instead.
    pub(super) fn new(
        name: &str,
        payload: &[u8],
        factory: Option<&ForeignFactory>,
    ) -> Result<Foreign> {
        let Some(factory) = factory else {
            return Err(PsError::Optimizer(format!(
                "{} cannot run on this parameter server: the server runs without Python (the \
                 ps-server binary), and a Python optimizer needs a server started from Python. \
                 Start the servers with DMLC_ROLE=server python -c \"import mxrs\" (what \
                 mxrs-launch does by default), use an optimizer the servers run natively (sgd, \
                 nag, adam, adagrad, rmsprop, signum, adamax, adadelta, ftml, ftrl), or train \
                 with update_on_kvstore=False to update on the workers",
                describe(name)
            )));
        };
        let hook = factory(payload)?;
        Ok(Foreign {
            name: name.to_owned(),
            hook,
        })
    }

    /// The spec's name.
    pub(super) fn name(&self) -> &str {
        &self.name
    }

    pub(super) fn hook(&self) -> &dyn ForeignUpdater {
        self.hook.as_ref()
    }
}

/// "Python optimizer mymodule.MyOptimizer" from `python:mymodule.MyOptimizer`.
fn describe(name: &str) -> String {
    match name.strip_prefix(FOREIGN).and_then(|r| r.strip_prefix(':')) {
        Some(what) if !what.is_empty() => format!("Python optimizer {what}"),
        _ => "a Python optimizer".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use parking_lot::Mutex;

    use super::super::{OptimizerSpec, State, Updater};
    use super::*;

    /// A foreign optimizer for the tests: `w += g` (rows: on the rows present), calls recorded.
    #[derive(Debug, Default)]
    struct Adder {
        calls: Mutex<Vec<String>>,
        fail: bool,
    }

    impl ForeignUpdater for Adder {
        fn update(&self, u: ForeignUpdate<'_>) -> Result<()> {
            if self.fail {
                return Err(PsError::Optimizer("ValueError: boom".into()));
            }
            assert_eq!(u.dtype, DType::F32);
            let w: &mut [f32] = bytemuck::cast_slice_mut(u.weight);
            match u.grad {
                ForeignGrad::Dense(g) => {
                    let g: &[f32] = bytemuck::cast_slice(g);
                    w.iter_mut().zip(g).for_each(|(w, g)| *w += g);
                }
                ForeignGrad::Rows {
                    row_len,
                    rows,
                    values,
                } => {
                    let g: &[f32] = bytemuck::cast_slice(values);
                    for (j, r) in rows.iter().enumerate() {
                        for k in 0..row_len {
                            w[r * row_len + k] += g[j * row_len + k];
                        }
                    }
                }
            }
            let what = format!("update {}@{}", u.piece.key, u.piece.offset);
            self.calls.lock().push(what);
            Ok(())
        }

        fn set_params(&self, params: &[(String, f64)], mults: &[(u64, f64, f64)]) -> Result<()> {
            self.calls
                .lock()
                .push(format!("set_params {params:?} {mults:?}"));
            Ok(())
        }

        fn save_state(&self, _: Piece) -> Result<Option<Vec<u8>>> {
            Ok(None)
        }

        fn load_states(&self, _: &[(Piece, &[u8])]) -> Result<()> {
            Ok(())
        }
    }

    fn python_spec(name: &str) -> OptimizerSpec {
        OptimizerSpec {
            name: name.into(),
            params: vec![],
            key_mults: vec![(4, 0.5, 2.0)],
            payload: b"pickled".to_vec(),
        }
    }

    #[test]
    fn foreign_names() {
        assert!(is_foreign("python") && is_foreign("python:m.MyOpt"));
        assert!(!is_foreign("pythonic") && !is_foreign("sgd") && !is_foreign(""));
        assert_eq!(describe("python:m.MyOpt"), "Python optimizer m.MyOpt");
        assert_eq!(describe("python"), "a Python optimizer");
        assert_eq!(describe("python:"), "a Python optimizer");
    }

    #[test]
    fn without_a_factory_a_python_optimizer_is_refused_with_what_to_do() {
        // No test of this library registers a factory: `Updater::new` sees none.
        for e in [
            Updater::new(&python_spec("python:mymodule.MyOpt")).unwrap_err(),
            Updater::with_factory(&python_spec("python:mymodule.MyOpt"), None).unwrap_err(),
        ] {
            assert!(matches!(e, PsError::Optimizer(_)), "{e:?}");
            let msg = e.to_string();
            for part in [
                "Python optimizer mymodule.MyOpt cannot run on this parameter server",
                "without Python (the ps-server binary)",
                "DMLC_ROLE=server python -c \"import mxrs\"",
                "mxrs-launch",
                "update_on_kvstore=False",
            ] {
                assert!(msg.contains(part), "{part:?} not in {msg}");
            }
        }
        let e = Updater::with_factory(&python_spec("python"), None).unwrap_err();
        assert!(
            e.to_string().starts_with("a Python optimizer cannot run"),
            "{e}"
        );
    }

    #[test]
    fn a_factory_builds_the_hook_that_updates_pieces() {
        let made = Arc::new(Adder::default());
        let hook = made.clone();
        let factory = move |payload: &[u8]| -> Result<Arc<dyn ForeignUpdater>> {
            assert_eq!(payload, b"pickled");
            Ok(hook.clone())
        };
        let mut u = Updater::with_factory(&python_spec("python:m.Adder"), Some(&factory)).unwrap();
        assert_eq!(u.name(), "python:m.Adder");
        assert!(u.foreign().is_some() && u.learning_rate().is_none());

        let mut w = vec![1.0f32, 2.0, 3.0, 4.0];
        let mut st: State<f32> = u.new_state(w.len());
        assert!(st.buffers.is_empty());
        let piece = Piece { key: 4, offset: 8 };
        u.update(piece, &mut w, &[0.5, 0.5, 0.5, 0.5], &mut st)
            .unwrap();
        assert_eq!(w, [1.5, 2.5, 3.5, 4.5]);
        // Rows 1 of two rows of 2.
        u.update_rows(piece, &mut w, 2, &[1], &[1.0, -1.0], &mut st)
            .unwrap();
        assert_eq!(w, [1.5, 2.5, 4.5, 3.5]);
        u.set_params(&[("learning_rate".into(), 0.1)], &[]).unwrap();
        assert_eq!(
            *made.calls.lock(),
            [
                "set_params [] [(4, 0.5, 2.0)]",
                "update 4@8",
                "update 4@8",
                "set_params [(\"learning_rate\", 0.1)] []",
            ]
        );

        // The hook's errors are the update's.
        let failing = |_: &[u8]| -> Result<Arc<dyn ForeignUpdater>> {
            Ok(Arc::new(Adder {
                fail: true,
                ..Adder::default()
            }))
        };
        let u = Updater::with_factory(&python_spec("python"), Some(&failing)).unwrap();
        let e = u.update(piece, &mut w, &[0.0; 4], &mut st).unwrap_err();
        assert!(e.to_string().contains("ValueError: boom"), "{e}");
        // And the factory's are the installation's.
        let refusing = |_: &[u8]| -> Result<Arc<dyn ForeignUpdater>> {
            Err(PsError::Optimizer("cannot unpickle".into()))
        };
        let e = Updater::with_factory(&python_spec("python"), Some(&refusing)).unwrap_err();
        assert_eq!(e.to_string(), "cannot unpickle");
    }
}
