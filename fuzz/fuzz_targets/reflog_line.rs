#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| refstore_fuzz_targets::files::reflog_line(data));
