//! Scheduling of the real-time thread: policy, memory locking, CPU affinity.
//!
//! [`apply`] is called once on the real-time thread before its loop starts. It tries the
//! configured policy and falls back along SCHED_DEADLINE → SCHED_FIFO → SCHED_OTHER; whatever it
//! could not do is collected into **one** warning string that the caller logs (the real-time
//! thread itself never logs). This mirrors ros2_control's `ros2_control_node`.

/// Preferred scheduling policy of the real-time thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PolicyKind {
    /// `SCHED_DEADLINE` with runtime / deadline / period (needs CAP_SYS_NICE and no CPU affinity
    /// restriction); falls back to FIFO.
    Deadline,
    /// `SCHED_FIFO` with [`SchedConfig::fifo_priority`]; falls back to normal scheduling.
    Fifo,
    /// Normal (`SCHED_OTHER`) scheduling; no warning.
    Other,
}

impl PolicyKind {
    /// Parses `deadline`, `fifo` or `other` (the ROS parameter values).
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "deadline" => Some(PolicyKind::Deadline),
            "fifo" => Some(PolicyKind::Fifo),
            "other" | "normal" => Some(PolicyKind::Other),
            _ => None,
        }
    }
    /// The parameter spelling.
    pub fn name(self) -> &'static str {
        match self {
            PolicyKind::Deadline => "deadline",
            PolicyKind::Fifo => "fifo",
            PolicyKind::Other => "other",
        }
    }
}

/// Scheduling configuration of the real-time thread.
#[derive(Clone, Debug, PartialEq)]
pub struct SchedConfig {
    /// Preferred policy.
    pub policy: PolicyKind,
    /// SCHED_FIFO priority (1..=99).
    pub fifo_priority: i32,
    /// SCHED_DEADLINE runtime budget per period (ns); 0 = 80 % of the period.
    pub deadline_runtime_ns: u64,
    /// SCHED_DEADLINE period (ns); 0 = the loop period.
    pub deadline_period_ns: u64,
    /// Lock all current and future memory (`mlockall`).
    pub lock_memory: bool,
    /// CPUs the thread may run on; empty = no restriction.
    pub cpu_affinity: Vec<usize>,
}

impl Default for SchedConfig {
    fn default() -> Self {
        SchedConfig { policy: PolicyKind::Deadline, fifo_priority: 80, deadline_runtime_ns: 0, deadline_period_ns: 0, lock_memory: true, cpu_affinity: Vec::new() }
    }
}

/// The policy actually in effect.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AppliedPolicy {
    /// SCHED_DEADLINE with these parameters (ns).
    Deadline {
        /// Runtime budget (ns).
        runtime_ns: u64,
        /// Relative deadline = period (ns).
        period_ns: u64,
    },
    /// SCHED_FIFO at this priority.
    Fifo {
        /// Priority.
        priority: i32,
    },
    /// Normal scheduling.
    Other,
}

/// What [`apply`] did.
#[derive(Clone, Debug)]
pub struct SchedReport {
    /// The policy in effect.
    pub policy: AppliedPolicy,
    /// Whether `mlockall` succeeded.
    pub memory_locked: bool,
    /// Whether the CPU affinity was applied (false when none was asked for).
    pub affinity_applied: bool,
    /// One human-readable warning when anything configured could not be applied.
    pub warning: Option<String>,
    /// Kernel thread id of the thread the policy was applied to.
    pub thread_id: i32,
}

impl AppliedPolicy {
    /// Short description for logs and diagnostics.
    pub fn describe(&self) -> String {
        match self {
            AppliedPolicy::Deadline { runtime_ns, period_ns } => format!("SCHED_DEADLINE runtime {} us / period {} us", runtime_ns / 1000, period_ns / 1000),
            AppliedPolicy::Fifo { priority } => format!("SCHED_FIFO priority {priority}"),
            AppliedPolicy::Other => "SCHED_OTHER (not real-time)".into(),
        }
    }
}

const SCHED_DEADLINE: u32 = 6;
const SCHED_FLAG_RESET_ON_FORK: u64 = 1;

#[repr(C)]
struct SchedAttr {
    size: u32,
    sched_policy: u32,
    sched_flags: u64,
    sched_nice: i32,
    sched_priority: u32,
    sched_runtime: u64,
    sched_deadline: u64,
    sched_period: u64,
}

fn errno_string() -> String {
    std::io::Error::last_os_error().to_string()
}

fn set_deadline(runtime_ns: u64, period_ns: u64) -> Result<(), String> {
    let attr = SchedAttr {
        size: std::mem::size_of::<SchedAttr>() as u32,
        sched_policy: SCHED_DEADLINE,
        sched_flags: SCHED_FLAG_RESET_ON_FORK,
        sched_nice: 0,
        sched_priority: 0,
        sched_runtime: runtime_ns,
        sched_deadline: period_ns,
        sched_period: period_ns,
    };
    // SAFETY: sched_setattr(pid 0 = calling thread, valid attr pointer, flags 0).
    let r = unsafe { libc::syscall(libc::SYS_sched_setattr, 0, &attr as *const SchedAttr, 0u32) };
    if r == 0 {
        Ok(())
    } else {
        Err(errno_string())
    }
}

fn set_fifo(priority: i32) -> Result<(), String> {
    let p = libc::sched_param { sched_priority: priority };
    // SAFETY: pid 0 = calling thread; `p` is valid.
    let r = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &p) };
    if r == 0 {
        Ok(())
    } else {
        Err(errno_string())
    }
}

fn set_affinity(cpus: &[usize]) -> Result<(), String> {
    // SAFETY: cpu_set_t is plain data; CPU_ZERO/CPU_SET write into it; pid 0 = calling thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_ZERO(&mut set);
        for &c in cpus {
            if c >= libc::CPU_SETSIZE as usize {
                return Err(format!("CPU {c} out of range"));
            }
            libc::CPU_SET(c, &mut set);
        }
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0 {
            Ok(())
        } else {
            Err(errno_string())
        }
    }
}

/// The calling thread's kernel thread id.
pub fn current_thread_id() -> i32 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::syscall(libc::SYS_gettid) as i32 }
}

/// Puts every thread of this process except `except_tid` under SCHED_FIFO at `priority`
/// (threads they create later inherit it). For the node's non-real-time threads (ROS executor,
/// publisher, DDS) so that a CPU-heavy neighbour does not delay commands and states by
/// milliseconds; `priority` should be below the real-time loop's. Returns the number of threads
/// changed, or the first error.
pub fn elevate_other_threads(priority: i32, except_tid: i32) -> Result<usize, String> {
    let p = libc::sched_param { sched_priority: priority.clamp(1, 99) };
    let mut n = 0;
    let dir = std::fs::read_dir("/proc/self/task").map_err(|e| e.to_string())?;
    for entry in dir.flatten() {
        let Some(tid) = entry.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else { continue };
        if tid == except_tid {
            continue;
        }
        // SAFETY: sched_setscheduler on a thread id of this process with a valid sched_param.
        if unsafe { libc::sched_setscheduler(tid, libc::SCHED_FIFO, &p) } != 0 {
            return Err(format!("thread {tid}: {}", errno_string()));
        }
        n += 1;
    }
    Ok(n)
}

/// Touches `bytes` of stack so that the pages are mapped (and locked) before the loop runs.
#[inline(never)]
fn prefault_stack() {
    let mut buf = [0u8; 128 * 1024];
    for i in (0..buf.len()).step_by(4096) {
        // SAFETY: in-bounds write through a valid pointer; volatile keeps it from being elided.
        unsafe { std::ptr::write_volatile(buf.as_mut_ptr().add(i), 1) };
    }
    std::hint::black_box(&buf);
}

/// Applies `cfg` to the **calling** thread, whose loop period is `loop_period_ns`.
///
/// Never fails: what cannot be applied is reported in [`SchedReport::warning`] (one message).
pub fn apply(cfg: &SchedConfig, loop_period_ns: u64) -> SchedReport {
    let mut problems: Vec<String> = Vec::new();
    let mut memory_locked = false;
    if cfg.lock_memory {
        // SAFETY: plain system call.
        if unsafe { libc::mlockall(libc::MCL_CURRENT | libc::MCL_FUTURE) } == 0 {
            memory_locked = true;
        } else {
            problems.push(format!("mlockall failed ({}): page faults may cause latency spikes", errno_string()));
        }
    }
    prefault_stack();
    let mut affinity_applied = false;
    if !cfg.cpu_affinity.is_empty() {
        match set_affinity(&cfg.cpu_affinity) {
            Ok(()) => affinity_applied = true,
            Err(e) => problems.push(format!("CPU affinity {:?} not applied ({e})", cfg.cpu_affinity)),
        }
    }
    let mut policy = AppliedPolicy::Other;
    let mut want_fifo = cfg.policy == PolicyKind::Fifo;
    if cfg.policy == PolicyKind::Deadline {
        let period = if cfg.deadline_period_ns > 0 { cfg.deadline_period_ns } else { loop_period_ns.max(1000) };
        let runtime = if cfg.deadline_runtime_ns > 0 { cfg.deadline_runtime_ns.min(period) } else { period * 4 / 5 };
        if affinity_applied {
            problems.push("SCHED_DEADLINE cannot be combined with a CPU affinity restriction".into());
            want_fifo = true;
        } else {
            match set_deadline(runtime, period) {
                Ok(()) => policy = AppliedPolicy::Deadline { runtime_ns: runtime, period_ns: period },
                Err(e) => {
                    problems.push(format!("SCHED_DEADLINE (runtime {} us, period {} us) not permitted ({e})", runtime / 1000, period / 1000));
                    want_fifo = true;
                }
            }
        }
    }
    if want_fifo {
        let prio = cfg.fifo_priority.clamp(1, 99);
        match set_fifo(prio) {
            Ok(()) => policy = AppliedPolicy::Fifo { priority: prio },
            Err(e) => problems.push(format!("SCHED_FIFO priority {prio} not permitted ({e})")),
        }
    }
    let warning = if problems.is_empty() {
        None
    } else {
        Some(format!(
            "real-time setup incomplete, running with {}: {}. Grant CAP_SYS_NICE / CAP_IPC_LOCK (or rtprio and memlock limits) for deterministic timing.",
            policy.describe(),
            problems.join("; ")
        ))
    };
    SchedReport { policy, memory_locked, affinity_applied, warning, thread_id: current_thread_id() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn other_policy_never_warns_without_extras() {
        let cfg = SchedConfig { policy: PolicyKind::Other, lock_memory: false, ..Default::default() };
        let r = std::thread::spawn(move || apply(&cfg, 1_000_000)).join().unwrap();
        assert_eq!(r.policy, AppliedPolicy::Other);
        assert!(r.warning.is_none());
    }

    #[test]
    fn fallback_yields_at_most_one_warning() {
        // Whatever this machine permits, the result is a policy plus zero or one warning; an
        // impossible affinity forces a warning that names it.
        let cfg = SchedConfig { policy: PolicyKind::Deadline, lock_memory: false, cpu_affinity: vec![100_000], ..Default::default() };
        let r = std::thread::spawn(move || apply(&cfg, 1_000_000)).join().unwrap();
        let w = r.warning.expect("a warning for the bad CPU");
        assert!(w.contains("CPU affinity"), "{w}");
        assert!(!r.affinity_applied);
    }

    #[test]
    fn policy_names_round_trip() {
        for p in [PolicyKind::Deadline, PolicyKind::Fifo, PolicyKind::Other] {
            assert_eq!(PolicyKind::parse(p.name()), Some(p));
        }
        assert_eq!(PolicyKind::parse("bogus"), None);
    }
}
