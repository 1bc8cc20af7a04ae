//! SIGINT / SIGTERM as a flag: the CLI's run loop and the node poll it, so that a run stops
//! cleanly (bags closed, summaries written) instead of dying mid-write.

use std::sync::atomic::{AtomicBool, Ordering};

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_stop_signal(_sig: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

/// Installs the handler for SIGINT and SIGTERM (idempotent) and returns the flag it sets.
/// Interrupted system calls restart (`SA_RESTART`).
pub fn install() -> &'static AtomicBool {
    // SAFETY: installs an async-signal-safe handler (one atomic store) for SIGINT and SIGTERM.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_stop_signal as extern "C" fn(libc::c_int) as usize;
        sa.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut sa.sa_mask);
        libc::sigaction(libc::SIGINT, &sa, std::ptr::null_mut());
        libc::sigaction(libc::SIGTERM, &sa, std::ptr::null_mut());
    }
    &STOP
}

/// Whether a stop signal has arrived.
pub fn requested() -> bool {
    STOP.load(Ordering::SeqCst)
}

/// Asks the kernel to send this process SIGTERM when its parent dies (Linux
/// `PR_SET_PDEATHSIG`), so that a node started by `ros2 launch` stops (and closes its bag) when
/// launch is killed instead of running on orphaned. If the parent is already gone, stops now.
/// Call after [`install`].
pub fn stop_with_parent() {
    #[cfg(target_os = "linux")]
    // SAFETY: prctl with PR_SET_PDEATHSIG and a signal number has no memory effects; getppid and
    // raise are async-signal-safe.
    unsafe {
        let parent = libc::getppid();
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM as libc::c_ulong);
        // the parent may have died before the prctl: then we were re-parented already
        if libc::getppid() != parent {
            libc::raise(libc::SIGTERM);
        }
    }
}
