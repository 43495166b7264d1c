//! Ctrl-C (and SIGTERM) ask a run to stop between batches.

use std::sync::atomic::{AtomicBool, Ordering};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// The first Ctrl-C or SIGTERM sets the flag that runners poll between
/// batches; a second one exits at once (the kernel releases every fd; the
/// kernel settings a comparison changed are put back and running guests
/// killed first).
pub fn install_handler() {
    let _ = ctrlc::set_handler(|| {
        if INTERRUPTED.swap(true, Ordering::SeqCst) {
            super::sysctl::restore_now();
            super::guest::kill_running();
            std::process::exit(130);
        }
    });
}

/// The process-wide stop flag the handler sets.
pub fn flag() -> &'static AtomicBool {
    &INTERRUPTED
}

pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::Relaxed)
}
