//! Multi-round-trip requests across the protocol eras: the pure rules of
//! [`envelope_core::mrtr`], plus [`new_state`], which draws the random bits of a `requestState`
//! from the operating system.

pub use envelope_core::mrtr::*;

/// A fresh `requestState` of ours: [`STATE_PREFIX`] and 128 random bits from the operating
/// system's generator (getrandom(2)) in hex ([`state_from`]), unguessable, meaningful only as a
/// key of our table.
///
/// # Panics
/// When getrandom(2) fails (it does not, for 16 bytes, once the system's pool is ready).
pub fn new_state() -> String {
    let mut bytes = [0u8; 16];
    // SAFETY: getrandom(2) writes at most `len` bytes into the buffer we own.
    let n = unsafe { libc::getrandom(bytes.as_mut_ptr().cast(), bytes.len(), 0) };
    assert_eq!(n, bytes.len() as isize, "getrandom failed");
    state_from(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_are_ours_and_unique() {
        let (a, b) = (new_state(), new_state());
        assert_ne!(a, b);
        assert!(is_ours(&a) && a.len() == STATE_PREFIX.len() + 32);
    }
}
