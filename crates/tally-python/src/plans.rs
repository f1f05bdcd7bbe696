//! Plans kept between calls. A plan (kernel looked up, policy resolved, its own small buffers
//! allocated) costs tens of microseconds to make, a large share of a call on a resident array;
//! a plan made for one device view (the legacy default stream's or tally's own stream's, see
//! `device.rs`), element type, spec and length is kept and launched again by the next call that
//! matches. A call takes its plan out while it runs, so two threads never share one, and puts it
//! back after; the work it queued stays ordered before the next call's on the same stream.
//! Device sets keep their own (`multi.rs`), in a [`KeptPlans`] of their own.

use std::any::Any;
use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Mutex, OnceLock};

/// Plans kept at most: enough for the shapes of a pipeline; past that the cache starts over.
const MAX_PLANS: usize = 64;

/// What identifies a plan: the device view (its address: two per device, kept for the process),
/// the primitive with its element types and options, and the length.
pub type Key = (usize, String, usize);

/// Plans of any type by key, at most `max` of them (past that the cache starts over).
pub struct KeptPlans<K> {
    plans: HashMap<K, Box<dyn Any + Send>>,
    max: usize,
    /// Takes that found their plan kept (tests).
    reused: u64,
}

impl<K: Hash + Eq> KeptPlans<K> {
    pub fn new(max: usize) -> Self {
        KeptPlans { plans: HashMap::new(), max, reused: 0 }
    }

    /// The plan kept for `key`, taken out of the cache.
    pub fn take<P: 'static>(&mut self, key: &K) -> Option<P> {
        let plan = self.plans.remove(key).and_then(|p| p.downcast::<P>().ok()).map(|p| *p);
        self.reused += plan.is_some() as u64;
        plan
    }

    /// Keeps `plan` for the next call with `key`.
    pub fn keep<P: Send + 'static>(&mut self, key: K, plan: P) {
        if self.plans.len() >= self.max {
            self.plans.clear();
        }
        self.plans.insert(key, Box::new(plan));
    }

    /// Plans kept, and takes that found theirs.
    pub fn counts(&self) -> (usize, u64) {
        (self.plans.len(), self.reused)
    }
}

fn plans() -> std::sync::MutexGuard<'static, KeptPlans<Key>> {
    static PLANS: OnceLock<Mutex<KeptPlans<Key>>> = OnceLock::new();
    PLANS.get_or_init(|| Mutex::new(KeptPlans::new(MAX_PLANS))).lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The kept plan for `key`, taken out of the cache; or a new one from `make`.
pub fn take<P: Send + 'static, E>(key: &Key, make: impl FnOnce() -> Result<P, E>) -> Result<P, E> {
    let kept = plans().take::<P>(key);
    match kept {
        Some(plan) => Ok(plan),
        None => make(),
    }
}

/// Keeps `plan` for the next call with `key`.
pub fn keep<P: Send + 'static>(key: Key, plan: P) {
    plans().keep(key, plan);
}
