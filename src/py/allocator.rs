//! The extension's memory as the OS sees it: freed memory handed back after
//! evictions. (The allocator is built without asking for transparent huge pages:
//! see the `no_thp` feature in Cargo.toml.)

use std::sync::atomic::{AtomicUsize, Ordering};

/// Bytes of evicted conversations not yet handed back to the OS.
static FREED: AtomicUsize = AtomicUsize::new(0);
/// How much eviction frees before the allocator is asked to return it: returning
/// walks the allocator's pages, which costs too much to do on every eviction.
const RETURN_EVERY: usize = 64 << 20;

/// Note `bytes` freed by evictions; once they add up, return freed memory to the OS.
pub(super) fn freed(bytes: usize) {
    if bytes > 0 && FREED.fetch_add(bytes, Ordering::Relaxed) + bytes >= RETURN_EVERY {
        return_freed_memory();
    }
}

/// Ask the allocator to return the memory it holds free to the OS.
pub(super) fn return_freed_memory() {
    FREED.store(0, Ordering::Relaxed);
    // SAFETY: mi_collect has no preconditions: it may be called at any time from any
    // thread, and only frees pages that hold no live allocation.
    unsafe { libmimalloc_sys::mi_collect(true) };
}
