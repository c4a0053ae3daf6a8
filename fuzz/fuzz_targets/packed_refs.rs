#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| refstore_fuzz_targets::files::packed_refs(data));
