#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| refstore_fuzz_targets::reftable::reftable_blocks(data));
