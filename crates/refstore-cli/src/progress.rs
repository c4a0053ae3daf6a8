//! Progress bars for long jobs, on standard error and only when it is a
//! terminal (indicatif draws nothing otherwise, so scripts and logs stay
//! clean).

use refstore_refs::reftable::migrate::Progress;

/// A bar counting refs.
pub struct ProgressBar(indicatif::ProgressBar);

impl ProgressBar {
    /// A bar labelled `message`; its length is set when the job starts.
    pub fn new(message: &'static str) -> Self {
        let bar =
            indicatif::ProgressBar::with_draw_target(None, indicatif::ProgressDrawTarget::stderr());
        bar.set_style(
            indicatif::ProgressStyle::with_template("{msg}: [{bar:40}] {pos}/{len} ({eta})")
                .expect("a valid template")
                .progress_chars("=> "),
        );
        bar.set_message(message);
        ProgressBar(bar)
    }

    /// Removes the bar.
    pub fn finish(&self) {
        self.0.finish_and_clear();
    }
}

impl Progress for ProgressBar {
    fn start(&self, total: u64) {
        self.0.set_length(total);
    }

    fn advance(&self, n: u64) {
        self.0.inc(n);
    }
}
