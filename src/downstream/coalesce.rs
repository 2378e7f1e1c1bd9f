//! Coalescing of repeated triggers: a server's `notifications/tools/list_changed` starts one
//! `tools/list` refresh; more of them while it runs ask for one more refresh after it, however
//! many arrive (20,000 notifications cost at most two refreshes at a time, not 20,000).

use std::sync::Mutex;

/// One task at a time, plus at most one more run requested while it works.
#[derive(Debug, Default)]
pub struct Coalescer {
    /// (a run is going on, another run was asked for meanwhile)
    state: Mutex<(bool, bool)>,
}

impl Coalescer {
    /// Asks for a run: `true` when the caller must start it (none is going on); `false` when
    /// the running one will run again.
    pub fn request(&self) -> bool {
        let mut state = self.state.lock().unwrap();
        if state.0 {
            state.1 = true;
            false
        } else {
            *state = (true, false);
            true
        }
    }

    /// Called by the runner after each run: `true` to run again (asked for meanwhile),
    /// `false` when it is done.
    pub fn finish(&self) -> bool {
        let mut state = self.state.lock().unwrap();
        if std::mem::take(&mut state.1) {
            true
        } else {
            state.0 = false;
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn many_requests_during_a_run_make_one_more_run() {
        let c = Coalescer::default();
        assert!(c.request());
        for _ in 0..20_000 {
            assert!(!c.request());
        }
        assert!(c.finish(), "one more run");
        assert!(!c.finish(), "then done");
        assert!(c.request(), "a later request starts a new run");
    }
}
