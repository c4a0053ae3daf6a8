#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| refstore_fuzz_targets::config::config(data));
