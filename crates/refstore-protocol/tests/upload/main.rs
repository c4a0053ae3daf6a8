//! upload-pack served in this process, as `refstore upload-pack` serves
//! it: fed bad input directly, and reached by the real git client through
//! a relay for clones and fetches (an empty repository, objects missing
//! midway, history missing below the client's commits).

mod errors;
mod missing_history;
#[path = "../support/stdio.rs"]
mod stdio;
