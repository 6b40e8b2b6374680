//! `Worker` and `Ticket`: a distributed KVStore's connection to its job, from Python.

use std::sync::Arc;

use numpy::PyUntypedArray;
use parking_lot::{Condvar, Mutex, MutexGuard};
use ps_core::node::JobWorker;
use ps_core::protocol::frame::Mode;
use ps_core::updater::OptimizerSpec;
use ps_core::{Config, PsError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use crate::arrays::ArrayInfo;
use crate::errors::{Failure, KVStoreError, to_py};
use crate::items::{
    check_lengths, check_rows, check_shapes, compression, destinations, lend, lend_ids, start_push,
};
use crate::runtime;

/// A worker of a parameter-server job, joined through the scheduler named by the `DMLC_*`
/// environment variables (`mode` is "sync" or "async").
#[pyclass(module = "mxrs._native", frozen)]
pub struct Worker {
    job: Arc<JobWorker>,
    pid: u32,
}

impl std::fmt::Debug for Worker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Worker")
            .field("job", &self.job)
            .field("pid", &self.pid)
            .finish()
    }
}

/// A pending push, pull or init; `wait()` blocks (without the GIL) until it is done.
#[pyclass(module = "mxrs._native", frozen)]
pub struct Ticket {
    state: Mutex<State>,
    /// Bytes the request sends and receives.
    nbytes: usize,
    /// Signalled when a wait in progress has ended.
    ended: Condvar,
}

impl std::fmt::Debug for Ticket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ticket")
            .field("nbytes", &self.nbytes)
            .finish_non_exhaustive()
    }
}

enum State {
    Pending(Pending),
    /// A thread is waiting for the outcome right now.
    Waiting,
    /// The outcome: `None` for success.
    Done(Option<Failure>),
}

struct Pending {
    ticket: ps_core::worker::Ticket,
    /// Destinations of pulled values, with references that keep them alive.
    outs: Vec<ArrayInfo>,
    _keep: Vec<Py<PyAny>>,
}

impl Worker {
    fn job(&self) -> PyResult<&JobWorker> {
        if runtime::is_owner(self.pid) {
            Ok(&self.job)
        } else {
            Err(KVStoreError::new_err(
                "this distributed KVStore belongs to the process that created it; a forked \
                 child (such as a DataLoader worker) cannot use it",
            ))
        }
    }

    fn ticket(
        t: ps_core::worker::Ticket,
        sent: usize,
        outs: Vec<ArrayInfo>,
        keep: Vec<Py<PyAny>>,
    ) -> Ticket {
        let nbytes = sent + outs.iter().map(ArrayInfo::len).sum::<usize>();
        Ticket {
            nbytes,
            state: Mutex::new(State::Pending(Pending {
                ticket: t,
                outs,
                _keep: keep,
            })),
            ended: Condvar::new(),
        }
    }

    /// Creates keys from `arrays` (`rows`: row-sparse keys, placed by rows); `what` names the
    /// call in errors.
    fn init_keys(
        &self,
        what: &str,
        keys: Vec<u64>,
        arrays: Vec<Bound<'_, PyUntypedArray>>,
        rows: bool,
    ) -> PyResult<Ticket> {
        check_lengths(what, keys.len(), arrays.len())?;
        let items: Vec<_> = lend(&keys, &arrays)?
            .into_iter()
            .map(|(key, info, bytes)| (key, info.dtype, info.shape, bytes))
            .collect();
        let sent = items.iter().map(|item| item.3.len()).sum();
        let worker = self.job()?.worker();
        let ticket = match rows {
            true => worker.init_rows(items),
            false => worker.init(items),
        };
        Ok(Self::ticket(ticket, sent, vec![], vec![]))
    }

    fn run<T: Send>(
        &self,
        py: Python<'_>,
        f: impl Future<Output = ps_core::Result<T>> + Send,
    ) -> PyResult<T> {
        py.detach(|| runtime::get().block_on(f)).map_err(to_py)
    }
}

#[pymethods]
impl Worker {
    #[new]
    fn new(py: Python<'_>, mode: &str) -> PyResult<Self> {
        let mode = match mode {
            "sync" => Mode::Sync,
            "async" => Mode::Async,
            other => {
                return Err(KVStoreError::new_err(format!(
                    "mode '{other}' is neither 'sync' nor 'async'"
                )));
            }
        };
        let cfg = Config::from_env().map_err(to_py)?;
        let job = py
            .detach(|| runtime::get().block_on(JobWorker::join(&cfg, mode)))
            .map_err(to_py)?;
        Ok(Worker {
            job: Arc::new(job),
            pid: std::process::id(),
        })
    }

    /// This worker's rank, 0..num_workers.
    #[getter]
    fn rank(&self) -> u32 {
        self.job.worker().rank()
    }

    /// Number of workers in the job.
    #[getter]
    fn num_workers(&self) -> u32 {
        self.job.worker().num_workers()
    }

    /// Number of servers in the job.
    #[getter]
    fn num_servers(&self) -> usize {
        self.job.worker().num_servers()
    }

    /// True in a restarted worker that took back a lost one's place in a running job.
    #[getter]
    fn rejoined(&self) -> bool {
        self.job.rejoined()
    }

    /// How many sync rounds of `key` this worker (and the process it replaces) has pushed.
    fn rounds(&self, key: u64) -> PyResult<u64> {
        self.job()?.worker().rounds(key).map_err(to_py)
    }

    /// Makes the next push of every key belong to round `round` (or an earlier one).
    fn resume_at(&self, round: u64) -> PyResult<()> {
        self.job()?.worker().resume_at(round);
        Ok(())
    }

    /// Creates keys from `arrays` (rank 0's values are stored); the ticket completes once every
    /// key exists on its servers.
    fn init(&self, keys: Vec<u64>, arrays: Vec<Bound<'_, PyUntypedArray>>) -> PyResult<Ticket> {
        self.init_keys("init", keys, arrays, false)
    }

    /// Pushes `arrays` to `keys`. The arrays must not be written until the ticket completes.
    /// `compression` is `(kind, threshold)` ("2bit", "fp16", "bf16") to encode float32 arrays
    /// with before they are sent (2bit updates each key's residual). The request is written
    /// after queued requests of other keys with a higher `priority`.
    #[pyo3(signature = (keys, arrays, compression = None, priority = 0))]
    fn push(
        &self,
        py: Python<'_>,
        keys: Vec<u64>,
        arrays: Vec<Bound<'_, PyUntypedArray>>,
        compression: Option<(String, f64)>,
        priority: i32,
    ) -> PyResult<Ticket> {
        check_lengths("push", keys.len(), arrays.len())?;
        let compression = self::compression(compression)?;
        let job = self.job()?;
        let lent = lend(&keys, &arrays)?;
        check_shapes(job, &lent)?;
        let sent = lent.iter().map(|(_, _, bytes)| bytes.len()).sum();
        let items = lent
            .into_iter()
            .map(|(key, info, bytes)| (key, info.dtype, bytes))
            .collect();
        let ticket = start_push(py, job, items, false, compression, priority);
        Ok(Self::ticket(ticket, sent, vec![], vec![]))
    }

    /// Pulls `keys` into `outs` (one C-contiguous array of the key's size each), `priority`
    /// as for `push`. With `compression` `fp16` or `bf16`, a value that is a sum of pushes (no
    /// optimizer on the servers) travels in that type.
    #[pyo3(signature = (keys, outs, priority = 0, compression = None))]
    fn pull(
        &self,
        keys: Vec<u64>,
        outs: Vec<Bound<'_, PyUntypedArray>>,
        priority: i32,
        compression: Option<(String, f64)>,
    ) -> PyResult<Ticket> {
        check_lengths("pull", keys.len(), outs.len())?;
        let compression = self::compression(compression)?;
        let (infos, keep) = destinations(&keys, &outs)?;
        Ok(Self::ticket(
            self.job()?
                .worker()
                .pull_request(&keys, priority, compression),
            0,
            infos,
            keep,
        ))
    }

    /// Pushes `arrays`, then pulls the value their round produces into `outs`, in one round
    /// trip (`compression` and `priority` as for `push`; with `fp16` or `bf16` the pulled sum
    /// of pushes travels in that type too, as for `pull`).
    #[pyo3(signature = (keys, arrays, outs, compression = None, priority = 0))]
    fn pushpull(
        &self,
        py: Python<'_>,
        keys: Vec<u64>,
        arrays: Vec<Bound<'_, PyUntypedArray>>,
        outs: Vec<Bound<'_, PyUntypedArray>>,
        compression: Option<(String, f64)>,
        priority: i32,
    ) -> PyResult<Ticket> {
        check_lengths("pushpull", keys.len(), arrays.len())?;
        check_lengths("pushpull", keys.len(), outs.len())?;
        let compression = self::compression(compression)?;
        let job = self.job()?;
        let lent = lend(&keys, &arrays)?;
        check_shapes(job, &lent)?;
        let sent = lent.iter().map(|(_, _, bytes)| bytes.len()).sum();
        let items = lent
            .into_iter()
            .map(|(key, info, bytes)| (key, info.dtype, bytes))
            .collect();
        let (infos, keep) = destinations(&keys, &outs)?;
        let ticket = start_push(py, job, items, true, compression, priority);
        Ok(Self::ticket(ticket, sent, infos, keep))
    }

    /// Creates row-sparse keys from `arrays`, their dense initial values (`shape[0]` rows of
    /// the other dims' product), placed by rows over the servers; rank 0's values are stored and
    /// the ticket completes once every key exists on its servers.
    fn init_rows(
        &self,
        keys: Vec<u64>,
        arrays: Vec<Bound<'_, PyUntypedArray>>,
    ) -> PyResult<Ticket> {
        self.init_keys("init_rows", keys, arrays, true)
    }

    /// Pushes some rows of row-sparse keys: `row_ids[i]` (1-D int64, strictly increasing, within
    /// the key's rows) and `values[i]` (C-contiguous, `(len(row_ids[i]), *row_shape)` in the
    /// key's dtype). Only those rows travel. `compression` is refused (dense pushes only);
    /// `priority` as for `push`.
    #[pyo3(signature = (keys, row_ids, values, priority = 0, compression = None))]
    fn push_rows(
        &self,
        keys: Vec<u64>,
        row_ids: Vec<Bound<'_, PyUntypedArray>>,
        values: Vec<Bound<'_, PyUntypedArray>>,
        priority: i32,
        compression: Option<(String, f64)>,
    ) -> PyResult<Ticket> {
        check_lengths("push_rows", keys.len(), row_ids.len())?;
        check_lengths("push_rows", keys.len(), values.len())?;
        let compression = self::compression(compression)?;
        let job = self.job()?;
        let ids = lend_ids(&keys, &row_ids)?;
        let lent = lend(&keys, &values)?;
        for ((key, info, _), ids) in lent.iter().zip(&ids) {
            check_rows(job, *key, ids.len() / 8, info)?;
        }
        let sent = ids.iter().chain(lent.iter().map(|l| &l.2)).map(|b| b.len());
        let sent = sent.sum();
        let items = lent
            .into_iter()
            .zip(ids)
            .map(|((key, info, values), ids)| (key, ids, info.dtype, values))
            .collect();
        let ticket = job.worker().push_rows(items, compression, priority);
        Ok(Self::ticket(ticket, sent, vec![], vec![]))
    }

    /// Pulls some rows of row-sparse keys into `outs`: `row_ids[i]` as for `push_rows`,
    /// `outs[i]` writable, C-contiguous, `(len(row_ids[i]), *row_shape)` in the key's dtype.
    /// Only those rows travel; in dist_sync they include this worker's earlier pushes.
    #[pyo3(signature = (keys, row_ids, outs, priority = 0))]
    fn pull_rows(
        &self,
        keys: Vec<u64>,
        row_ids: Vec<Bound<'_, PyUntypedArray>>,
        outs: Vec<Bound<'_, PyUntypedArray>>,
        priority: i32,
    ) -> PyResult<Ticket> {
        check_lengths("pull_rows", keys.len(), row_ids.len())?;
        check_lengths("pull_rows", keys.len(), outs.len())?;
        let job = self.job()?;
        let ids = lend_ids(&keys, &row_ids)?;
        let (infos, keep) = destinations(&keys, &outs)?;
        for ((key, info), ids) in keys.iter().zip(&infos).zip(&ids) {
            check_rows(job, *key, ids.len() / 8, info)?;
        }
        let sent = ids.iter().map(|b| b.len()).sum();
        let items = keys.into_iter().zip(ids).collect();
        let ticket = job.worker().pull_rows(items, priority);
        Ok(Self::ticket(ticket, sent, infos, keep))
    }

    /// Waits until every worker (`group="workers"`) or every node (`"all"`) got here.
    #[pyo3(signature = (group = "workers"))]
    fn barrier(&self, py: Python<'_>, group: &str) -> PyResult<()> {
        let job = self.job()?;
        match group {
            "workers" => self.run(py, job.barrier()),
            "all" => self.run(py, job.barrier_all()),
            other => Err(KVStoreError::new_err(format!(
                "barrier group '{other}' is neither 'workers' nor 'all'"
            ))),
        }
    }

    /// Tells the scheduler this worker is done; the job ends when every worker is.
    fn finish(&self, py: Python<'_>) -> PyResult<()> {
        self.run(py, self.job()?.finish())
    }

    /// Sends an optimizer (name, hyper-parameters, per-key lr/wd multipliers, and for a
    /// pickled Python optimizer its bytes) to every server.
    #[pyo3(signature = (name, params, key_mults = Vec::new(), payload = None))]
    fn set_optimizer(
        &self,
        py: Python<'_>,
        name: String,
        params: Vec<(String, f64)>,
        key_mults: Vec<(u64, f64, f64)>,
        payload: Option<Bound<'_, PyBytes>>,
    ) -> PyResult<()> {
        let spec = OptimizerSpec {
            name,
            params,
            key_mults,
            payload: payload.map(|p| p.as_bytes().to_vec()).unwrap_or_default(),
        };
        self.run(py, self.job()?.worker().set_optimizer(&spec))
    }

    /// Changes hyper-parameters of the servers' optimizer (such as `learning_rate`).
    #[pyo3(signature = (params, key_mults = Vec::new()))]
    fn set_params(
        &self,
        py: Python<'_>,
        params: Vec<(String, f64)>,
        key_mults: Vec<(u64, f64, f64)>,
    ) -> PyResult<()> {
        let change = OptimizerSpec {
            name: String::new(),
            params,
            key_mults,
            payload: Vec::new(),
        };
        self.run(py, self.job()?.worker().set_params(&change))
    }

    /// The servers' optimizer states, as one blob.
    fn save_states<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let blob = self.run(py, self.job()?.worker().save_states())?;
        Ok(PyBytes::new(py, &blob))
    }

    /// Restores optimizer states saved by `save_states`.
    fn load_states(&self, py: Python<'_>, blob: Vec<u8>) -> PyResult<()> {
        self.run(py, self.job()?.worker().load_states(&blob))
    }

    /// Under `fp16`/`bf16` compression, pull weights (and initial values) in 16 bits too, not
    /// only sums of pushes (`{'pull_weights': True}`); the servers keep float32.
    fn set_pull_weights(&self, on: bool) -> PyResult<()> {
        self.job()?.worker().set_pull_weights(on);
        Ok(())
    }

    /// What each server (by rank) has received in push and pushpull frames: a dict of
    /// `frames`, `entries`, `payload_bytes` (the pushed values as they crossed the wire) and
    /// `frame_bytes` (whole frames), and `pulled_bytes` (the values its pull and pushpull
    /// replies carried), counted since the server started.
    fn server_stats<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let stats = self.run(py, self.job()?.worker().server_stats())?;
        stats
            .iter()
            .map(|s| {
                let d = PyDict::new(py);
                d.set_item("frames", s.frames)?;
                d.set_item("entries", s.entries)?;
                d.set_item("payload_bytes", s.payload_bytes)?;
                d.set_item("frame_bytes", s.frame_bytes)?;
                d.set_item("pulled_bytes", s.pulled_bytes)?;
                Ok(d)
            })
            .collect()
    }
}

impl Ticket {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock()
    }

    /// Waits (without the GIL) for another thread's wait on this ticket to end.
    fn outcome_of_other(&self, py: Python<'_>) -> Option<Failure> {
        py.detach(|| {
            let mut state = self.state();
            loop {
                match &*state {
                    State::Waiting => self.ended.wait(&mut state),
                    State::Done(failure) => return failure.clone(),
                    State::Pending(_) => return None,
                }
            }
        })
    }
}

#[pymethods]
impl Ticket {
    /// Blocks until the request is done (releasing the GIL); raises the `MXNetError` subclass
    /// that names what went wrong. Waiting again gives the same outcome at once: a failed
    /// request stays failed.
    fn wait(&self, py: Python<'_>) -> PyResult<()> {
        let p = {
            let mut state = self.state();
            match std::mem::replace(&mut *state, State::Waiting) {
                State::Pending(p) => p,
                State::Waiting => {
                    drop(state);
                    return self.outcome_of_other(py).map_or(Ok(()), |f| Err(f.to_py()));
                }
                State::Done(failure) => {
                    *state = State::Done(failure.clone());
                    return failure.map_or(Ok(()), |f| Err(f.to_py()));
                }
            }
        };
        let Pending {
            ticket,
            outs,
            _keep,
        } = p;
        let r: Result<(), PsError> = py.detach(move || {
            runtime::get().block_on(async move {
                if outs.is_empty() {
                    ticket.wait().await.map(drop)
                } else {
                    // SAFETY: `_keep` holds every destination alive until this returns, and
                    // the KVStore layer does not touch them while the ticket is pending.
                    let mut views: Vec<&mut [u8]> =
                        outs.iter().map(|o| unsafe { o.bytes_mut() }).collect();
                    ticket.wait_into(&mut views).await
                }
            })
        });
        drop(_keep);
        let failure = r.err().map(Failure::from);
        *self.state() = State::Done(failure.clone());
        self.ended.notify_all();
        failure.map_or(Ok(()), |f| Err(f.to_py()))
    }

    /// Bytes the request sends (pushed values) and receives (pulled values).
    #[getter]
    fn nbytes(&self) -> usize {
        self.nbytes
    }

    /// Whether the request is done, so that `wait()` returns at once. Never blocks.
    #[getter]
    fn ready(&self) -> bool {
        match &mut *self.state() {
            State::Pending(p) => p.ticket.is_ready(),
            State::Waiting => false,
            State::Done(_) => true,
        }
    }
}
