//! Optimizers applied on the servers, with Apache MXNet 1.x's update rules.
//!
//! With `update_on_kvstore` a worker sends its optimizer once, as an [`OptimizerSpec`]: MXNet's
//! lower-case name and its hyper-parameters as numbers, under MXNet's constructor names. Each
//! server builds an [`Updater`] from it and applies it to every merged push: `update` changes a
//! key's weights in place and keeps the key's [`State`] (update count and element buffers);
//! `update_rows` does the same for a round of a row-sparse key's pushes, which carried only some
//! rows (MXNet's lazy update, `rows`).
//!
//! The rules are MXNet's to the formula: where weight decay enters, whether clipping comes before
//! or after it, Adam's bias correction folded into the learning rate with the key's own update
//! count. Each optimizer file states its rule above its loop.
//!
//! A worker may also send an optimizer ps-core does not know (a user's Python optimizer,
//! pickled): [`foreign`] runs it through a hook the process registers, without which it is
//! refused.
//!
//! # Layout
//! - `spec`: [`OptimizerSpec`] and its binary encoding.
//! - [`foreign`]: the hook for optimizers run outside ps-core ([`ForeignUpdater`]).
//! - `state`: [`State`] and its binary encoding (for `save_optimizer_states`).
//! - `sgd`, `nag`, `adam`, `adagrad`, `rmsprop`, `signum`, `adamax`, `adadelta`, `ftml`,
//!   `ftrl`: one update rule each.
//! - `rows`: the update of some rows of a row-sparse key (lazy, or dense with zero gradients).
//!
//! # Clipping
//! MXNet writes "no clipping" as `clip_gradient=None` or `-1`; so do we: an absent or negative
//! `clip_gradient` (or `clip_weights`) turns clipping off. A zero bound follows MXNet too: the
//! fused kernels (every optimizer but AdaGrad) treat 0 as off, AdaGrad's dense update clips every
//! gradient to 0.
//!
//! # Precision and validation
//! Hyper-parameters are kept in f64 and converted once per update to the array's type, so f32
//! keys compute in f32 as MXNet's kernels do; f64 keys get f64 hyper-parameters where MXNet's
//! kernels would round them to f32 first. Values MXNet would take silently but that cannot be
//! meant (NaN, infinities, a negative learning rate or weight decay, decay rates outside
//! [0, 1), a non-positive epsilon or `rescale_grad`) are refused with a message naming them.

mod adadelta;
mod adagrad;
mod adam;
mod adamax;
pub mod foreign;
mod ftml;
mod ftrl;
mod nag;
mod rmsprop;
mod rows;
mod sgd;
mod signum;
mod spec;
mod state;

#[cfg(test)]
mod tests;

use rustc_hash::FxHashMap;
use smallvec::SmallVec;

use crate::dtype::{DType, Float};
use crate::error::{PsError, Result};
use foreign::{Foreign, ForeignFactory, ForeignGrad, ForeignUpdate};

pub use foreign::{FOREIGN, ForeignUpdater, Piece, set_foreign_factory};
pub use spec::OptimizerSpec;
pub use state::State;

/// The optimizers the servers run, in the order error messages list them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Sgd,
    Nag,
    Adam,
    AdaGrad,
    RmsProp,
    Signum,
    Adamax,
    AdaDelta,
    Ftml,
    Ftrl,
}

/// Hyper-parameters every optimizer takes (MXNet's `Optimizer.__init__`, and `lazy_update`, which
/// MXNet's SGD and Adam take and which decides how any optimizer updates a row-sparse key here).
const COMMON: &[&str] = &[
    "learning_rate",
    "wd",
    "rescale_grad",
    "clip_gradient",
    "begin_num_update",
    "multi_precision",
    "lazy_update",
];

impl Kind {
    const ALL: [Kind; 10] = [
        Kind::Sgd,
        Kind::Nag,
        Kind::Adam,
        Kind::AdaGrad,
        Kind::RmsProp,
        Kind::Signum,
        Kind::Adamax,
        Kind::AdaDelta,
        Kind::Ftml,
        Kind::Ftrl,
    ];

    fn name(self) -> &'static str {
        match self {
            Kind::Sgd => "sgd",
            Kind::Nag => "nag",
            Kind::Adam => "adam",
            Kind::AdaGrad => "adagrad",
            Kind::RmsProp => "rmsprop",
            Kind::Signum => "signum",
            Kind::Adamax => "adamax",
            Kind::AdaDelta => "adadelta",
            Kind::Ftml => "ftml",
            Kind::Ftrl => "ftrl",
        }
    }

    /// Hyper-parameters this optimizer's constructor adds to [`COMMON`].
    fn own_params(self) -> &'static [&'static str] {
        match self {
            Kind::Sgd => &["momentum"],
            Kind::Nag => &["momentum"],
            Kind::Adam => &["beta1", "beta2", "epsilon"],
            Kind::AdaGrad => &["eps"],
            Kind::RmsProp => &["gamma1", "gamma2", "epsilon", "centered", "clip_weights"],
            Kind::Signum => &["momentum", "wd_lh"],
            Kind::Adamax => &["beta1", "beta2"],
            Kind::AdaDelta => &["rho", "epsilon"],
            Kind::Ftml => &["beta1", "beta2", "epsilon"],
            Kind::Ftrl => &["lamda1", "beta"],
        }
    }

    fn takes(self, param: &str) -> bool {
        COMMON.contains(&param) || self.own_params().contains(&param)
    }
}

/// All hyper-parameters, with MXNet 1.9.1's defaults; each optimizer reads the ones it takes.
#[derive(Debug, Clone, PartialEq)]
struct Hyper {
    learning_rate: f64,
    wd: f64,
    rescale_grad: f64,
    /// `None` when absent or negative; `Some(0.0)` is kept (AdaGrad clips to zero).
    clip_gradient: Option<f64>,
    begin_num_update: u64,
    momentum: f64,
    beta1: f64,
    beta2: f64,
    /// `epsilon` of Adam, RMSProp, AdaDelta and FTML.
    epsilon: f64,
    /// AdaGrad's `eps`.
    eps: f64,
    gamma1: f64,
    gamma2: f64,
    /// AdaDelta's decay rate.
    rho: f64,
    centered: bool,
    /// `None` when absent, zero or negative (MXNet passes it to the kernel only when truthy).
    clip_weights: Option<f64>,
    wd_lh: f64,
    /// FTRL's L1 strength (MXNet spells it `lamda1`).
    lamda1: f64,
    /// FTRL's `beta`.
    beta: f64,
    /// How a round of a row-sparse key is applied: to the rows pushed only (true, MXNet's lazy
    /// update), or to every row, absent ones with a zero gradient. Dense keys ignore it.
    lazy_update: bool,
    /// Accepted for MXNet compatibility; float16 keys already update a float32 master copy.
    multi_precision: bool,
}

impl Hyper {
    fn defaults(kind: Kind) -> Hyper {
        let (learning_rate, momentum) = match kind {
            Kind::Sgd | Kind::Nag | Kind::AdaGrad | Kind::AdaDelta | Kind::Ftml => (0.01, 0.0),
            Kind::Ftrl => (0.1, 0.0),
            Kind::Adam | Kind::RmsProp => (0.001, 0.0),
            Kind::Signum => (0.01, 0.9),
            Kind::Adamax => (0.002, 0.0),
        };
        let beta1 = if kind == Kind::Ftml { 0.6 } else { 0.9 };
        let epsilon = if kind == Kind::AdaDelta { 1e-5 } else { 1e-8 };
        Hyper {
            learning_rate,
            wd: 0.0,
            rescale_grad: 1.0,
            clip_gradient: None,
            begin_num_update: 0,
            momentum,
            beta1,
            beta2: 0.999,
            epsilon,
            eps: 1e-7,
            gamma1: 0.9,
            gamma2: 0.9,
            rho: 0.9,
            centered: false,
            clip_weights: None,
            wd_lh: 0.0,
            lamda1: 0.01,
            beta: 1.0,
            lazy_update: true,
            multi_precision: false,
        }
    }

    /// Sets one hyper-parameter after checking that `kind` takes it and that the value is valid.
    fn set(&mut self, kind: Kind, name: &str, v: f64) -> Result<()> {
        let opt = kind.name();
        let unknown = || {
            let accepted: Vec<&str> = COMMON.iter().chain(kind.own_params()).copied().collect();
            PsError::Optimizer(format!(
                "optimizer '{opt}' does not take hyper-parameter '{name}'; it takes {}",
                accepted.join(", ")
            ))
        };
        if !kind.takes(name) {
            return Err(unknown());
        }
        let bad = |rule: &str| {
            PsError::Optimizer(format!(
                "optimizer '{opt}': {name} must be {rule}, got {v:?}"
            ))
        };
        if !v.is_finite() {
            return Err(bad("a finite number"));
        }
        let non_negative = || if v >= 0.0 { Ok(v) } else { Err(bad(">= 0")) };
        let positive = || if v > 0.0 { Ok(v) } else { Err(bad("> 0")) };
        let decay = || {
            if (0.0..1.0).contains(&v) {
                Ok(v)
            } else {
                Err(bad("in [0, 1)"))
            }
        };
        let flag = || {
            if v == 0.0 || v == 1.0 {
                Ok(v == 1.0)
            } else {
                Err(bad("0 or 1"))
            }
        };
        match name {
            "learning_rate" => self.learning_rate = non_negative()?,
            "wd" => self.wd = non_negative()?,
            "rescale_grad" => self.rescale_grad = positive()?,
            "clip_gradient" => self.clip_gradient = (v >= 0.0).then_some(v),
            "begin_num_update" => {
                if v < 0.0 || v.fract() != 0.0 || v > 9_007_199_254_740_992.0 {
                    return Err(bad("a whole number >= 0"));
                }
                self.begin_num_update = v as u64;
            }
            "multi_precision" => self.multi_precision = flag()?,
            "lazy_update" => self.lazy_update = flag()?,
            "centered" => self.centered = flag()?,
            "momentum" => self.momentum = decay()?,
            "beta1" => self.beta1 = decay()?,
            "beta2" => self.beta2 = decay()?,
            "gamma1" => self.gamma1 = decay()?,
            "gamma2" => self.gamma2 = decay()?,
            "rho" => self.rho = decay()?,
            "epsilon" => self.epsilon = positive()?,
            "eps" => self.eps = positive()?,
            "clip_weights" => self.clip_weights = (v > 0.0).then_some(v),
            "wd_lh" => self.wd_lh = non_negative()?,
            "lamda1" => self.lamda1 = non_negative()?,
            "beta" => self.beta = non_negative()?,
            _ => return Err(unknown()),
        }
        Ok(())
    }

    /// Bound the fused MXNet kernels clip to: `clip_gradient` when positive, else none
    /// (an infinite bound leaves every value, NaN included, as it is).
    fn kernel_clip(&self) -> f64 {
        match self.clip_gradient {
            Some(c) if c > 0.0 => c,
            _ => f64::INFINITY,
        }
    }

    /// Buffers per key for `kind` under these hyper-parameters.
    fn buffer_count(&self, kind: Kind) -> usize {
        match kind {
            Kind::Sgd | Kind::Nag | Kind::Signum => usize::from(self.momentum != 0.0),
            Kind::Adam | Kind::Adamax | Kind::AdaDelta | Kind::Ftrl => 2,
            Kind::Ftml => 3,
            Kind::AdaGrad => 1,
            Kind::RmsProp if self.centered => 3,
            Kind::RmsProp => 1,
        }
    }
}

/// The learning rate and weight decay of one update of one key, its multipliers applied, and
/// the key's update count `t` including this update.
#[derive(Debug, Clone, Copy)]
struct Step {
    lr: f64,
    wd: f64,
    t: u64,
}

/// The hyper-parameters of one SGD update of one array ([`sgd_update`]).
#[derive(Debug, Clone, Copy)]
pub struct SgdStep {
    /// The learning rate, its multiplier applied.
    pub lr: f64,
    /// The weight decay, its multiplier applied.
    pub wd: f64,
    /// The momentum (the `mom` buffer is MXNet's, in the negative direction).
    pub momentum: f64,
    pub rescale_grad: f64,
    /// `None` (or a bound that is not positive): no clipping.
    pub clip_gradient: Option<f64>,
}

/// MXNet's `sgd_update` (without `mom`) or `sgd_mom_update` on one array, in one pass, by the
/// same loops the servers run: for a worker that updates its own weights (the Python `SGD`).
///
/// Fails with [`PsError::ShapeMismatch`] when `grad` or `mom` does not have `weight`'s length.
pub fn sgd_update<T: Float>(
    step: SgdStep,
    weight: &mut [T],
    grad: &[T],
    mom: Option<&mut [T]>,
) -> Result<()> {
    let n = weight.len();
    let lens = (grad.len(), mom.as_ref().map_or(n, |m| m.len()));
    if lens != (n, n) {
        return Err(PsError::ShapeMismatch(format!(
            "an SGD update of {n} weights with {} gradients and {} momenta",
            lens.0, lens.1
        )));
    }
    let mut h = Hyper::defaults(Kind::Sgd);
    h.rescale_grad = step.rescale_grad;
    h.clip_gradient = step.clip_gradient;
    h.momentum = step.momentum;
    let s = Step {
        lr: step.lr,
        wd: step.wd,
        t: 0,
    };
    match mom {
        Some(mom) => sgd::momentum(&h, s, weight, grad, mom),
        None => sgd::plain(&h, s, weight, grad),
    }
    Ok(())
}

/// Clips `x` into `[-bound, bound]`; NaN passes through, as in MXNet's `clip` kernel.
#[inline(always)]
fn clip<T: Float>(x: T, bound: T) -> T {
    if x > bound {
        bound
    } else if x < -bound {
        -bound
    } else {
        x
    }
}

/// Sign of `x`: 1, −1, or 0 for zero and NaN (MXNet's `sign`, `(x > 0) - (x < 0)`).
#[inline(always)]
fn sign<T: Float>(x: T) -> T {
    if x > T::zero() {
        T::one()
    } else if x < T::zero() {
        -T::one()
    } else {
        T::zero()
    }
}

/// A state's buffers, sliced to the elements one kernel call updates.
type Buffers<'a, T> = SmallVec<[&'a mut [T]; 3]>;

/// An optimizer ready to run on a server: one of the update rules here with its
/// hyper-parameters and per-key multipliers, or a foreign optimizer run through the hook the
/// process registered ([`foreign`]).
#[derive(Debug, Clone)]
pub struct Updater {
    rule: Rule,
}

#[derive(Debug, Clone)]
enum Rule {
    Native(Native),
    Foreign(Foreign),
}

/// The element type a foreign optimizer sees for `T`.
fn dtype_of<T: Float>() -> DType {
    if size_of::<T>() == 8 {
        DType::F64
    } else {
        DType::F32
    }
}

impl Updater {
    /// Builds the updater `spec` names: a rule here, starting from MXNet's defaults, or a
    /// foreign optimizer built by the factory registered with [`set_foreign_factory`].
    ///
    /// Fails with [`PsError::Optimizer`] for an optimizer the servers do not run, a
    /// hyper-parameter it does not take or an invalid value, and for a foreign optimizer in a
    /// process without a factory (the `ps-server` binary: the message says how to run it);
    /// with the factory's error when it cannot build one.
    pub fn new(spec: &OptimizerSpec) -> Result<Updater> {
        Updater::with_factory(spec, foreign::registered_factory().as_deref())
    }

    /// [`Updater::new`] with `factory` for foreign optimizers.
    fn with_factory(spec: &OptimizerSpec, factory: Option<&ForeignFactory>) -> Result<Updater> {
        let rule = if foreign::is_foreign(&spec.name) {
            let f = Foreign::new(&spec.name, &spec.payload, factory)?;
            if !(spec.params.is_empty() && spec.key_mults.is_empty()) {
                f.hook().set_params(&spec.params, &spec.key_mults)?;
            }
            Rule::Foreign(f)
        } else {
            Rule::Native(Native::new(spec)?)
        };
        Ok(Updater { rule })
    }

    /// MXNet's lower-case name of the optimizer (a foreign one's spec name).
    pub fn name(&self) -> &str {
        match &self.rule {
            Rule::Native(n) => n.name(),
            Rule::Foreign(f) => f.name(),
        }
    }

    /// The foreign optimizer's hook, when this is one.
    pub fn foreign(&self) -> Option<&dyn ForeignUpdater> {
        match &self.rule {
            Rule::Native(_) => None,
            Rule::Foreign(f) => Some(f.hook()),
        }
    }

    /// Changes hyper-parameters (e.g. `("learning_rate", 0.05)`) and/or per-key multipliers,
    /// keeping all state; a multiplier entry replaces that key's pair, other keys keep theirs.
    /// Everything is validated first (a foreign optimizer's hook validates its own): on error
    /// nothing changes. Changing `momentum` between zero and non-zero, or RMSProp's
    /// `centered`, changes how many buffers a key needs; the next update starts the new ones
    /// from zero.
    pub fn set_params(
        &mut self,
        params: &[(String, f64)],
        key_mults: &[(u64, f64, f64)],
    ) -> Result<()> {
        match &mut self.rule {
            Rule::Native(n) => n.set_params(params, key_mults),
            Rule::Foreign(f) => f.hook().set_params(params, key_mults),
        }
    }

    /// The base learning rate (before any key's `lr_mult`); `None` for a foreign optimizer.
    pub fn learning_rate(&self) -> Option<f64> {
        match &self.rule {
            Rule::Native(n) => Some(n.learning_rate()),
            Rule::Foreign(_) => None,
        }
    }

    /// Fresh per-key state for an array slice of `len` elements: zeros, the right number of
    /// buffers for this optimizer, an update count starting at `begin_num_update` (as in
    /// MXNet). A foreign optimizer keeps its states itself: no buffers.
    pub fn new_state<T: Float>(&self, len: usize) -> State<T> {
        match &self.rule {
            Rule::Native(n) => n.new_state(len),
            Rule::Foreign(_) => State {
                steps: 0,
                buffers: Vec::new(),
            },
        }
    }

    /// One update of `weight`, piece `piece`, with (already summed over workers) gradient
    /// `grad`, in place; `state` is the piece's. `piece.key` selects lr_mult/wd_mult.
    ///
    /// `grad` must have `weight`'s length (only the common prefix is updated otherwise). A
    /// `state` whose buffers do not fit this optimizer and length gets zeroed buffers of the
    /// right shape. Only a foreign optimizer fails (with its error; its hook decides whether
    /// the weight changed).
    pub fn update<T: Float>(
        &self,
        piece: Piece,
        weight: &mut [T],
        grad: &[T],
        state: &mut State<T>,
    ) -> Result<()> {
        match &self.rule {
            Rule::Native(n) => {
                n.update(piece.key, weight, grad, state);
                Ok(())
            }
            Rule::Foreign(f) => f.hook().update(ForeignUpdate {
                piece,
                dtype: dtype_of::<T>(),
                weight: bytemuck::cast_slice_mut(weight),
                grad: ForeignGrad::Dense(bytemuck::cast_slice(grad)),
            }),
        }
    }

    /// Applies one round of a row-sparse key's pushes to `weight`, piece `piece` of whole rows
    /// of `row_len` elements: `rows` are the rows present (indices into the piece, increasing)
    /// and `grads` their summed gradients, `row_len` elements each, in the same order. The
    /// rules here update the rows present only (`lazy_update`, the default) or every row, the
    /// absent ones with a zero gradient; a foreign optimizer is given the rows as they are.
    ///
    /// Only a foreign optimizer fails (with its error; its hook decides whether the weight
    /// changed).
    pub fn update_rows<T: Float>(
        &self,
        piece: Piece,
        weight: &mut [T],
        row_len: usize,
        rows: &[usize],
        grads: &[T],
        state: &mut State<T>,
    ) -> Result<()> {
        match &self.rule {
            Rule::Native(n) => {
                n.update_rows(piece.key, weight, row_len, rows, grads, state);
                Ok(())
            }
            Rule::Foreign(f) => f.hook().update(ForeignUpdate {
                piece,
                dtype: dtype_of::<T>(),
                weight: bytemuck::cast_slice_mut(weight),
                grad: ForeignGrad::Rows {
                    row_len,
                    rows,
                    values: bytemuck::cast_slice(grads),
                },
            }),
        }
    }
}

/// One of the update rules here, ready to run: hyper-parameters and per-key multipliers.
#[derive(Debug, Clone)]
struct Native {
    kind: Kind,
    hyper: Hyper,
    /// key -> (lr_mult, wd_mult); keys not here use 1.0 for both.
    mults: FxHashMap<u64, (f64, f64)>,
}

impl Native {
    /// Builds the rule `spec` names, starting from MXNet's defaults.
    ///
    /// Fails with [`PsError::Optimizer`] for an optimizer the servers do not run, a
    /// hyper-parameter it does not take or an invalid value.
    fn new(spec: &OptimizerSpec) -> Result<Native> {
        let wanted = spec.name.to_ascii_lowercase();
        let Some(kind) = Kind::ALL.into_iter().find(|k| k.name() == wanted) else {
            let names: Vec<&str> = Kind::ALL.iter().map(|k| k.name()).collect();
            return Err(PsError::Optimizer(format!(
                "optimizer '{}' cannot run on the parameter servers (they run {}); \
                 use update_on_kvstore=False to update on the workers",
                spec.name,
                names.join(", ")
            )));
        };
        let mut native = Native {
            kind,
            hyper: Hyper::defaults(kind),
            mults: FxHashMap::default(),
        };
        native.set_params(&spec.params, &spec.key_mults)?;
        Ok(native)
    }

    /// MXNet's lower-case name of the optimizer.
    fn name(&self) -> &str {
        self.kind.name()
    }

    /// Changes hyper-parameters (e.g. `("learning_rate", 0.05)`) and/or per-key multipliers,
    /// keeping all state. A multiplier entry replaces that key's pair; other keys keep theirs.
    /// Validates everything first: on error nothing changes.
    ///
    /// Changing `momentum` between zero and non-zero, or RMSProp's `centered`, changes how many
    /// buffers a key needs; [`Native::update`] then starts the new buffers from zero.
    fn set_params(
        &mut self,
        params: &[(String, f64)],
        key_mults: &[(u64, f64, f64)],
    ) -> Result<()> {
        let mut hyper = self.hyper.clone();
        for (name, value) in params {
            hyper.set(self.kind, name, *value)?;
        }
        for &(key, lr_mult, wd_mult) in key_mults {
            for (what, v) in [("lr_mult", lr_mult), ("wd_mult", wd_mult)] {
                if !(v.is_finite() && v >= 0.0) {
                    return Err(PsError::Optimizer(format!(
                        "{what} of key {key} must be a finite number >= 0, got {v:?}"
                    )));
                }
            }
        }
        self.hyper = hyper;
        self.mults
            .extend(key_mults.iter().map(|&(key, lr, wd)| (key, (lr, wd))));
        Ok(())
    }

    /// The base learning rate (before any key's `lr_mult`).
    fn learning_rate(&self) -> f64 {
        self.hyper.learning_rate
    }

    /// Fresh per-key state for an array slice of `len` elements (zeros; right number of buffers
    /// for this optimizer). Its update count starts at `begin_num_update`, as in MXNet.
    fn new_state<T: Float>(&self, len: usize) -> State<T> {
        State {
            steps: self.hyper.begin_num_update,
            buffers: vec![vec![T::zero(); len]; self.hyper.buffer_count(self.kind)],
        }
    }

    /// One update of `weight` with (already summed over workers) gradient `grad`, in place.
    /// `key` selects lr_mult/wd_mult (default 1.0).
    ///
    /// `grad` must have `weight`'s length (only the common prefix is updated otherwise). A
    /// `state` whose buffers do not fit this optimizer and length (after `set_params` changed
    /// the layout, or one decoded for another optimizer) gets zeroed buffers of the right shape;
    /// that is the only case that allocates.
    fn update<T: Float>(&self, key: u64, weight: &mut [T], grad: &[T], state: &mut State<T>) {
        debug_assert_eq!(
            weight.len(),
            grad.len(),
            "gradient length differs from weight"
        );
        let n = weight.len().min(grad.len());
        let (weight, grad) = (&mut weight[..n], &grad[..n]);
        self.fit_state(state, n);
        let step = self.next_step(key, state);
        let mut buffers: Buffers<'_, T> = state.buffers.iter_mut().map(|b| &mut b[..n]).collect();
        self.kernel(&self.hyper, step, weight, grad, &mut buffers);
    }

    /// Counts one more update of `key` in `state` and returns its step.
    fn next_step<T: Float>(&self, key: u64, state: &mut State<T>) -> Step {
        state.steps = state.steps.saturating_add(1);
        let (lr_mult, wd_mult) = self.mults.get(&key).copied().unwrap_or((1.0, 1.0));
        Step {
            lr: self.hyper.learning_rate * lr_mult,
            wd: self.hyper.wd * wd_mult,
            t: state.steps,
        }
    }

    /// Runs this optimizer's rule under `h` on `weight` with `grad` and the state `buffers`
    /// (all slices of the same elements).
    fn kernel<T: Float>(
        &self,
        h: &Hyper,
        step: Step,
        weight: &mut [T],
        grad: &[T],
        buffers: &mut [&mut [T]],
    ) {
        match (self.kind, buffers) {
            (Kind::Sgd | Kind::Nag, []) => sgd::plain(h, step, weight, grad),
            (Kind::Sgd, [mom]) => sgd::momentum(h, step, weight, grad, mom),
            (Kind::Nag, [mom]) => nag::momentum(h, step, weight, grad, mom),
            (Kind::Adam, [mean, var]) => adam::update(h, step, weight, grad, mean, var),
            (Kind::AdaGrad, [history]) => adagrad::update(h, step, weight, grad, history),
            (Kind::RmsProp, [n]) => rmsprop::plain(h, step, weight, grad, n),
            (Kind::RmsProp, [n, g, delta]) => rmsprop::centered(h, step, weight, grad, n, g, delta),
            (Kind::Signum, []) => signum::sign_sgd(h, step, weight, grad),
            (Kind::Signum, [mom]) => signum::momentum(h, step, weight, grad, mom),
            (Kind::Adamax, [mean, u]) => adamax::update(h, step, weight, grad, mean, u),
            (Kind::AdaDelta, [acc_g, acc_d]) => {
                adadelta::update(h, step, weight, grad, acc_g, acc_d)
            }
            (Kind::Ftml, [d, v, z]) => ftml::update(h, step, weight, grad, d, v, z),
            (Kind::Ftrl, [z, n]) => ftrl::update(h, step, weight, grad, z, n),
            _ => debug_assert!(false, "fit_state gives every optimizer its buffers"),
        }
    }

    /// Gives `state` this optimizer's number of buffers, each of `len` elements.
    fn fit_state<T: Float>(&self, state: &mut State<T>, len: usize) {
        let want = self.hyper.buffer_count(self.kind);
        if state.buffers.len() != want {
            state.buffers.resize_with(want, Vec::new);
        }
        for buf in &mut state.buffers {
            if buf.len() != len {
                buf.clear();
                buf.resize(len, T::zero());
            }
        }
    }
}
