//! The test binary's global allocator (installed by `engine.rs`): it counts, per thread,
//! the heap allocations (and reallocations), the live bytes and the peak of the live
//! bytes. The engine runs a scenario on the calling thread, so an allocation test
//! (`hot_loop_alloc.rs`, `web_alloc.rs`, `web_stream.rs`) measures its own runs while the
//! other tests run beside it on their own threads.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

pub struct Counting;

#[derive(Clone, Copy)]
struct Counts {
    allocations: u64,
    live: i64,
    peak: i64,
}

thread_local! {
    // A const-initialised `Cell` of a `Copy` type: no lazy initialisation, no destructor,
    // so the allocator can use it at any point of a thread's life without allocating.
    static COUNTS: Cell<Counts> = const { Cell::new(Counts { allocations: 0, live: 0, peak: 0 }) };
}

fn count(allocations: u64, bytes: i64) {
    let _ = COUNTS.try_with(|c| {
        let mut k = c.get();
        k.allocations += allocations;
        k.live += bytes;
        k.peak = k.peak.max(k.live);
        c.set(k);
    });
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(1, layout.size() as i64);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        count(0, -(layout.size() as i64));
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(1, new_size as i64 - layout.size() as i64);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

fn counts() -> Counts {
    COUNTS.with(Cell::get)
}

/// Heap allocations (and reallocations) made so far by this thread.
pub fn allocations_so_far() -> u64 {
    counts().allocations
}

/// Starts a new peak at this thread's live bytes, and returns them.
pub fn reset_peak() -> i64 {
    COUNTS.with(|c| {
        let mut k = c.get();
        k.peak = k.live;
        c.set(k);
        k.live
    })
}

/// The highest live bytes of this thread since the last `reset_peak`.
pub fn peak_bytes() -> i64 {
    counts().peak
}
