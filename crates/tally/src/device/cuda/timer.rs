//! Timing on the device: two CUDA events around work queued on a stream (the benches' clock).

use super::Stream;
use crate::error::{driver, Error, Result};
use cudarc::driver::sys::CUevent_flags;

impl Stream {
    /// Two events around work on this stream.
    pub fn timer(&self) -> Result<EventTimer<'_>> {
        let ctx = self.inner.context();
        let ev = || ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT)).map_err(driver("cuEventCreate"));
        Ok(EventTimer { start: ev()?, stop: ev()?, stream: self })
    }
}

/// Two CUDA events around work on a stream.
pub struct EventTimer<'s> {
    start: cudarc::driver::CudaEvent,
    stop: cudarc::driver::CudaEvent,
    stream: &'s Stream,
}

impl EventTimer<'_> {
    /// Milliseconds of one run of `work`, measured on the device.
    pub fn time_ms(&self, work: impl FnOnce() -> Result<()>) -> Result<f64> {
        self.start.record(&self.stream.inner).map_err(driver("cuEventRecord"))?;
        work()?;
        self.stop.record(&self.stream.inner).map_err(driver("cuEventRecord"))?;
        self.stop
            .synchronize()
            .map_err(|source| Error::Cuda { call: "cuEventSynchronize after timed work".into(), source })?;
        Ok(self.start.elapsed_ms(&self.stop).map_err(driver("cuEventElapsedTime"))? as f64)
    }

    /// Median over `reps` runs after three warm-ups.
    pub fn median_ms(&self, reps: usize, mut work: impl FnMut() -> Result<()>) -> Result<f64> {
        for _ in 0..3 {
            work()?;
        }
        let mut t = Vec::with_capacity(reps.max(1));
        for _ in 0..reps.max(1) {
            t.push(self.time_ms(&mut work)?);
        }
        t.sort_by(|a, b| a.total_cmp(b));
        Ok(t[t.len() / 2])
    }
}
