//! Every `/proc` read of the benchmarks: a process's resident set (current and
//! peak, the peak's reset), its CPU time, its `smaps_rollup` fields, and the
//! machine's load average, CPU model and memory. Linux only; on another
//! system, or for a process that has gone, each probe answers `None` (a reset
//! does nothing).

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

/// The CPU time a process has used, all its threads (the living and the
/// ended), in seconds: `utime + stime` of its `stat`.
pub(crate) fn cpu_seconds(process: Process) -> Option<f64> {
    let stat = std::fs::read_to_string(process.file("stat")).ok()?;
    cpu_seconds_of(&stat)
}

/// `utime + stime` of a `stat` line, in seconds. The times are in `USER_HZ`
/// ticks, which Linux fixes at 100 a second on x86-64 and aarch64 (what
/// `sysconf(_SC_CLK_TCK)` returns there; asking would need this crate's
/// second `unsafe` block). The command name (field 2) is in parentheses and
/// may hold spaces or parentheses itself, so the fields are counted from its
/// last `)`: utime and stime are fields 14 and 15, the 12th and 13th after it.
fn cpu_seconds_of(stat: &str) -> Option<f64> {
    const USER_HZ: f64 = 100.0;
    let mut fields = stat
        .get(stat.rfind(')')? + 1..)?
        .split_whitespace()
        .skip(11);
    let user: u64 = fields.next()?.parse().ok()?;
    let system: u64 = fields.next()?.parse().ok()?;
    Some((user + system) as f64 / USER_HZ)
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
    fn cpu_time_is_user_and_system_after_the_name() {
        // A name with a space and a parenthesis; utime 250 and stime 50 ticks.
        let stat = "4242 (http (x) 1) S 1 4242 4242 0 -1 4194560 900 0 0 0 250 50 0 0 20 0 9 0 \
                    100 1000 200 18446744073709551615";
        assert_eq!(cpu_seconds_of(stat), Some(3.0));
        assert_eq!(cpu_seconds_of("4242 (cut short) S 1 2"), None);
        assert_eq!(cpu_seconds_of("no name at all"), None);
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
        assert!(cpu_seconds(Process::Current).is_some_and(|s| s >= 0.0));
    }
}
