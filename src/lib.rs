//! fastcompact's core: reading conversations, counting tokens, choosing cutoffs.
//!
//! Everything here is plain Rust and testable with `cargo test`; the Python bindings
//! (`py/`) are compiled only with the `python` feature.

pub mod bounded_cache;
pub mod calibration;
pub mod compaction;
pub mod config;
pub mod conversation;
pub mod cutoff;
pub mod economics;
pub mod memory;
pub mod message;
pub mod passes;
pub mod plan;
pub mod printable;
pub mod pyrepr;
pub mod render;
pub mod search;
pub mod tally;
pub mod tokens;

// Each turn's plan allocates and frees vectors sized by the conversation; the system
// allocator hands large ones back to the kernel and page-faults them in again the next
// turn (about 150 faults a turn at 10,000 messages), mimalloc keeps them. Thread-local
// storage is the dynamic kind, as a library loaded with dlopen needs.
#[cfg(feature = "python")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[cfg(feature = "python")]
mod py;
