#![no_main]
libfuzzer_sys::fuzz_target!(
    |data: &[u8]| refstore_fuzz_targets::update_ref::update_ref_stdin(data)
);
