//! Objects: reading through gitoxide, durable loose-object and pack ingestion,
//! and connectivity checks.
#![deny(missing_docs, unsafe_code)]
