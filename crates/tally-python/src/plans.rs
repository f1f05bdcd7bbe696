//! Plans kept between calls. A plan (kernel looked up, policy resolved, its own small buffers
//! allocated) costs tens of microseconds to make, a large share of a call on a resident array;
//! a plan made for one device view (the legacy default stream's or tally's own stream's, see
//! `device.rs`), element type, spec and length is kept and launched again by the next call that
//! matches. A call takes its plan out while it runs, so two threads never share one, and puts it
//! back after; the work it queued stays ordered before the next call's on the same stream.

use std::any::Any;
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

/// Plans kept at most: enough for the shapes of a pipeline; past that the cache starts over.
const MAX_PLANS: usize = 64;

/// What identifies a plan: the device view (its address: two per device, kept for the process),
/// the primitive with its element types and options, and the length.
pub type Key = (usize, String, usize);

type Plans = Mutex<HashMap<Key, Box<dyn Any + Send>>>;

fn plans() -> &'static Plans {
    static PLANS: OnceLock<Plans> = OnceLock::new();
    PLANS.get_or_init(Plans::default)
}

/// The kept plan for `key`, taken out of the cache; or a new one from `make`.
pub fn take<P: Send + 'static, E>(key: &Key, make: impl FnOnce() -> Result<P, E>) -> Result<P, E> {
    let kept = plans().lock().unwrap_or_else(|poisoned| poisoned.into_inner()).remove(key);
    match kept.and_then(|p| p.downcast::<P>().ok()) {
        Some(plan) => Ok(*plan),
        None => make(),
    }
}

/// Keeps `plan` for the next call with `key`.
pub fn keep<P: Send + 'static>(key: Key, plan: P) {
    let mut map = plans().lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if map.len() >= MAX_PLANS {
        map.clear();
    }
    map.insert(key, Box::new(plan));
}
