//! Every `/proc` read of the benchmarks: a process's resident set (current and
//! peak, the peak's reset), its `smaps_rollup` fields, and the machine's load
//! average, CPU model and memory. Linux only; on another system, or for a
//! process that has gone, each probe answers `None` (a reset does nothing).

/// The process a probe reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Process {
    /// This process (`/proc/self`).
    Current,
    /// Another process, by id (`/proc/PID`).
    Id(u32),
}

impl Process {
    fn file(self, name: &str) -> String {
        match self {
            Process::Current => format!("/proc/self/{name}"),
            Process::Id(pid) => format!("/proc/{pid}/{name}"),
        }
    }
}

/// The value of the first `field` line (`VmHWM:`, `MemTotal:`, ...) of a
/// `/proc` text whose values are kibibytes, in bytes.
fn kib_field(text: &str, field: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with(field))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

fn status_bytes(process: Process, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(process.file("status")).ok()?;
    kib_field(&status, field)
}

/// A process's peak resident set (`VmHWM` of its `status`), bytes: the peak
/// since it started, or since its last [`reset_peak_rss`].
pub(crate) fn peak_rss(process: Process) -> Option<u64> {
    status_bytes(process, "VmHWM:")
}

/// A process's resident set now (`VmRSS` of its `status`), bytes.
pub(crate) fn current_rss(process: Process) -> Option<u64> {
    status_bytes(process, "VmRSS:")
}

/// A process's anonymous resident memory now (`RssAnon` of its `status`):
/// its resident set less file-backed and shared pages, bytes.
pub(crate) fn anon_rss(process: Process) -> Option<u64> {
    status_bytes(process, "RssAnon:")
}

/// Resets a process's peak resident set to its current one (writes 5 to its
/// `clear_refs`), so the next [`peak_rss`] is the peak since now. Best effort:
/// a process of another user, or a kernel without it, keeps its old peak.
pub(crate) fn reset_peak_rss(process: Process) {
    let _ = std::fs::write(process.file("clear_refs"), "5");
}

/// A field of a process's `smaps_rollup` (`AnonHugePages:`, `Anonymous:`,
/// ...), bytes.
pub(crate) fn smaps_rollup_bytes(process: Process, field: &str) -> Option<u64> {
    let text = std::fs::read_to_string(process.file("smaps_rollup")).ok()?;
    kib_field(&text, field)
}

/// The 1, 5 and 15 minute load averages (`/proc/loadavg`).
pub(crate) fn load_average() -> Option<[f64; 3]> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    let mut parts = text.split_whitespace().map(|p| p.parse::<f64>().ok());
    Some([parts.next()??, parts.next()??, parts.next()??])
}

/// The first CPU's model name (`model name` of `/proc/cpuinfo`).
pub(crate) fn cpu_model() -> Option<String> {
    let text = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    text.lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, name)| name.trim().to_owned())
}

/// A field of `/proc/meminfo` (`MemTotal:`, `SwapFree:`, ...), bytes.
pub(crate) fn meminfo_bytes(field: &str) -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    kib_field(&text, field)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_kibibytes_read_by_name() {
        let status = "Name:\tcell\nVmPeak:\t  900 kB\nVmHWM:\t  512 kB\nVmRSS:\t  256 kB\n";
        assert_eq!(kib_field(status, "VmHWM:"), Some(512 * 1024));
        assert_eq!(kib_field(status, "VmRSS:"), Some(256 * 1024));
        assert_eq!(kib_field(status, "VmSwap:"), None);
        assert_eq!(Process::Id(42).file("status"), "/proc/42/status");
        assert_eq!(Process::Current.file("status"), "/proc/self/status");
    }

    #[test]
    fn this_process_is_probed_on_linux() {
        if !cfg!(target_os = "linux") {
            return;
        }
        // Both are positive; their order is not checked, the kernel updating
        // the peak lazily while the test's other threads allocate.
        assert!(peak_rss(Process::Current).is_some_and(|b| b > 0));
        assert!(current_rss(Process::Current).is_some_and(|b| b > 0));
        assert!(anon_rss(Process::Current).is_some_and(|b| b > 0));
        assert!(meminfo_bytes("MemTotal:").is_some_and(|b| b > 0));
        assert!(load_average().is_some());
    }
}
