//! The cheap passes: each reads the current view and returns edits, never new or
//! fewer messages. `plan.rs` runs them in order.
//!
//! Cache-aware batching without hidden state: a pass that acts on "older" material
//! commits only whole batches, and a batch boundary depends on nothing but the messages
//! before it. Appending messages can add boundaries after the last one, never move an
//! earlier one, so between batch points the model view of one turn starts with the
//! model view of the turn before.

pub mod budget;
pub mod clearing;
pub mod collapse;
pub mod dedupe;
pub mod time_gap;
pub mod tool_kinds;
pub mod truncate_args;

mod batches;
mod edit;
mod links;
mod memo;
mod placeholders;
#[cfg(test)]
mod tests;
mod view;

pub use batches::*;
pub use edit::*;
pub use links::*;
pub use memo::*;
pub use placeholders::*;
pub use view::*;
