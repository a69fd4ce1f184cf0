//! What the host's memory is and what it can still give: the engine's default budget is a share
//! of the first, and a key's host copy (tens of GB for a 32GiB proof kind) is refused when the
//! second cannot hold it, instead of the process being killed for memory part way through.

/// The machine's memory in bytes (0 when it cannot be read).
pub fn physical_memory() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let (pages, page_size) = unsafe { (libc::sysconf(libc::_SC_PHYS_PAGES), libc::sysconf(libc::_SC_PAGE_SIZE)) };
    (pages.max(0) as u64).saturating_mul(page_size.max(0) as u64)
}

/// Bytes a large allocation can still get: the kernel's estimate of what it can hand out
/// without the OOM killer (`MemAvailable` + `SwapFree` in /proc/meminfo), bounded by the
/// process's memory cgroup limit where it has one (a container's: /proc/meminfo shows the whole
/// host's there). None when neither can be read (not Linux).
pub fn available() -> Option<u64> {
    let host = std::fs::read_to_string("/proc/meminfo").ok().and_then(|text| meminfo_available(&text));
    match (host, cgroup_room()) {
        (Some(host), Some(cgroup)) => Some(host.min(cgroup)),
        (host, cgroup) => host.or(cgroup),
    }
}

/// `MemAvailable` + `SwapFree` of /proc/meminfo's text, in bytes.
fn meminfo_available(meminfo: &str) -> Option<u64> {
    let field = |name: &str| -> Option<u64> {
        let line = meminfo.lines().find_map(|line| line.strip_prefix(name)?.strip_prefix(':'))?;
        let kib = line.trim().strip_suffix("kB")?.trim().parse::<u64>().ok()?;
        Some(kib.saturating_mul(1024))
    };
    Some(field("MemAvailable")? + field("SwapFree").unwrap_or(0))
}

/// Room left under this process's memory cgroup limit: cgroup v2 (`memory.max`, anonymous
/// memory `anon` in `memory.stat`), else v1's memory controller (`memory.limit_in_bytes`,
/// `total_rss`). A container sees its own cgroup at the hierarchy's root, where the path
/// /proc/self/cgroup names does not exist.
fn cgroup_room() -> Option<u64> {
    let cgroups = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let read = |dir: &std::path::Path, limit: &str, anon: &str| -> Option<u64> {
        let limit_text = std::fs::read_to_string(dir.join(limit)).ok()?;
        let stat = std::fs::read_to_string(dir.join("memory.stat")).ok()?;
        cgroup_headroom(&limit_text, &stat, anon)
    };
    let own_or_root = |root: &str, path: &str| {
        let own = std::path::Path::new(root).join(path.trim_start_matches('/'));
        if own.is_dir() {
            own
        } else {
            std::path::PathBuf::from(root)
        }
    };
    for line in cgroups.lines() {
        let mut fields = line.splitn(3, ':');
        let (_, controllers, path) = (fields.next()?, fields.next()?, fields.next()?);
        if line.starts_with("0::") {
            if let Some(room) = read(&own_or_root("/sys/fs/cgroup", path), "memory.max", "anon") {
                return Some(room);
            }
        } else if controllers.split(',').any(|c| c == "memory") {
            return read(&own_or_root("/sys/fs/cgroup/memory", path), "memory.limit_in_bytes", "total_rss");
        }
    }
    None
}

/// A cgroup's room for more anonymous memory: its limit (v2's "max": none) less its anonymous
/// memory (`anon_key`'s value in `memory.stat`). Its page cache, which the kernel reclaims
/// before it kills for memory, is not counted against it (a key file read through the cache is).
fn cgroup_headroom(limit: &str, stat: &str, anon_key: &str) -> Option<u64> {
    let limit = limit.trim().parse::<u64>().ok()?;
    let anon = stat.lines().find_map(|line| {
        let (key, value) = line.split_once(' ')?;
        (key == anon_key).then(|| value.trim().parse::<u64>().ok())?
    })?;
    Some(limit.saturating_sub(anon))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meminfo_gives_available_and_free_swap_in_bytes() {
        let text = "MemTotal:       131072000 kB\nMemFree:         1000 kB\nMemAvailable:   65536000 kB\nSwapTotal: 0 kB\nSwapFree:        2048 kB\n";
        assert_eq!(meminfo_available(text), Some((65_536_000 + 2048) * 1024));
        let no_swap = "MemAvailable:   100 kB\n";
        assert_eq!(meminfo_available(no_swap), Some(100 * 1024));
        assert_eq!(meminfo_available("MemTotal: 100 kB\n"), None, "without MemAvailable it is unknown");
        assert_eq!(meminfo_available("MemAvailable: lots\n"), None);
    }

    #[test]
    fn a_cgroup_limit_bounds_the_room_and_no_limit_gives_none() {
        let v2 = "anon 3000\nfile 900000\nanon_thp 100\n";
        assert_eq!(cgroup_headroom("10000\n", v2, "anon"), Some(7000), "page cache is not counted");
        assert_eq!(cgroup_headroom("2000\n", v2, "anon"), Some(0), "over the limit: no room");
        assert_eq!(cgroup_headroom("max\n", v2, "anon"), None);
        assert_eq!(cgroup_headroom("10000\n", "file 5\n", "anon"), None, "without anon it is unknown");
        let v1 = "cache 900000\nrss 10\ntotal_cache 900000\ntotal_rss 4000\n";
        assert_eq!(cgroup_headroom("9223372036854771712\n", v1, "total_rss"), Some(9223372036854767712));
        assert_eq!(cgroup_headroom("5000\n", v1, "total_rss"), Some(1000));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn this_machine_reads_as_having_memory_available() {
        let available = available().expect("Linux has /proc/meminfo");
        assert!(available > 0 && physical_memory() > 0, "{available} bytes available");
    }
}
