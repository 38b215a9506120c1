//! `catch_panic`: an engine bug becomes an `Err` with one line, never an abort.
//!
//! The binding runs every engine call through it, so a panic deep in the simulator
//! reaches Python as an `EngineError` instead of a Rust backtrace and exit 134.
//!
//! `try_vec`: the run's large buffers (the per-bin series, the sojourn trace, the
//! capture's records and file) are reserved with `Vec::try_reserve_exact`, so a
//! failed allocation is an `Err` with one line naming the buffer and its size. Any
//! other allocation failing (the many small ones of a flow's state) reaches the
//! global allocator of the binding (`crates/l4slab-py`), which prints one line and
//! exits; it asks [`allocation_may_fail`] first, so the reservations here still get
//! their `Err`.

use std::cell::Cell;
use std::sync::Once;

thread_local! {
    /// Set while this thread is inside `catch_panic`: the panic hook stays quiet.
    static QUIET: Cell<bool> = const { Cell::new(false) };
    /// Set while this thread makes an allocation whose failure it handles (`try_vec`).
    static FALLIBLE: Cell<bool> = const { Cell::new(false) };
}

/// An allocation failure where no `Result` can carry it (an observer's callback):
/// unwinds to [`catch_panic`], which returns `message` as its one-line `Err` (not as
/// an internal error).
pub fn out_of_memory(message: &str) -> ! {
    std::panic::panic_any(OutOfMemory(message.to_string()))
}

/// The payload of [`out_of_memory`]'s unwinding.
struct OutOfMemory(String);

/// Whether the allocation this thread is making now is one whose failure the caller
/// handles (a `try_vec` reservation): a global allocator returns null for it instead of
/// ending the process. Never allocates (a const thread-local `Cell`).
pub fn allocation_may_fail() -> bool {
    FALLIBLE.try_with(Cell::get).unwrap_or(false)
}

/// An empty vector with room for `n` values, or one line naming `what` and the bytes
/// that could not be allocated.
pub fn try_vec<T>(n: usize, what: &str) -> Result<Vec<T>, String> {
    let mut v = Vec::new();
    try_grow(&mut v, n, what)?;
    Ok(v)
}

/// Make room in `v` for `additional` more values (exactly), or one line naming `what`.
pub fn try_grow<T>(v: &mut Vec<T>, additional: usize, what: &str) -> Result<(), String> {
    let was = FALLIBLE.with(|f| f.replace(true));
    let reserved = v.try_reserve_exact(additional);
    FALLIBLE.with(|f| f.set(was));
    reserved.map_err(|_| {
        let bytes = (v.len() as u128 + additional as u128) * std::mem::size_of::<T>() as u128;
        format!(
            "out of memory: {what}: {:.1} MB could not be allocated; record less (wider bins, a shorter \
             run, no trace or capture) or see `l4slab run --max-memory`",
            bytes as f64 / 1e6
        )
    })
}

/// Runs `f`, turning a panic into `Err` whose message is the panic's, on one line.
///
/// The default panic hook (the message and the backtrace hint on stderr) is silenced
/// for panics of this call only and is back after it: the hook installed once wraps the
/// previous one and skips it while the calling thread is inside `catch_panic`, so
/// concurrent runs on other threads (Dask worker threads) neither wait on each other
/// nor lose their own panic messages.
pub fn catch_panic<T>(f: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !QUIET.with(Cell::get) {
                previous(info);
            }
        }));
    });
    let was_quiet = QUIET.with(|q| q.replace(true));
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    QUIET.with(|q| q.set(was_quiet));
    result.unwrap_or_else(|payload| {
        if let Some(OutOfMemory(message)) = payload.downcast_ref::<OutOfMemory>() {
            return Err(message.clone());
        }
        let msg = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".to_string());
        let msg = msg.split_whitespace().collect::<Vec<_>>().join(" ");
        Err(format!("internal error (a bug; please report it with the scenario): {msg}"))
    })
}

/// Whether a panic on this thread would be silenced now (for tests).
pub fn is_quiet() -> bool {
    QUIET.with(Cell::get)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_a_one_line_error_and_quiet_ends_with_the_call() {
        let e = catch_panic::<()>(|| panic!("index out of bounds:\n  the len is 3")).unwrap_err();
        assert_eq!(e, "internal error (a bug; please report it with the scenario): index out of bounds: the len is 3");
        assert!(!is_quiet(), "the hook is restored after a panic");
        let e = catch_panic::<()>(|| panic!("{}", String::from("formatted"))).unwrap_err();
        assert!(e.ends_with(": formatted"), "{e}");
        let e = catch_panic::<()>(|| std::panic::panic_any(42u8)).unwrap_err();
        assert!(e.ends_with(": unknown panic"), "{e}");
        assert_eq!(catch_panic(|| Ok(7)), Ok(7));
        assert_eq!(catch_panic::<()>(|| Err("no".into())), Err("no".to_string()));
        assert!(catch_panic(|| Ok(is_quiet())).unwrap(), "quiet inside the call");
        assert!(!is_quiet());
        // Nested calls keep the outer call quiet.
        let inner_then_outer = catch_panic(|| {
            let _ = catch_panic::<()>(|| panic!("inner"));
            Ok(is_quiet())
        });
        assert_eq!(inner_then_outer, Ok(true));
    }
}
