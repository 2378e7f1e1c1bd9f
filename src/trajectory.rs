//! Placeholder until the trajectory module lands (replaced by branch `traj`).
#![allow(missing_docs)]
use crate::transcript::CallRecord;
pub struct RenderOptions {
    pub budget: Option<usize>,
}
pub fn render(_records: &[CallRecord], _opts: &RenderOptions) -> String {
    String::new()
}
