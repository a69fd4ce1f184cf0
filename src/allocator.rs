//! The process's Rust allocator. With the `jemalloc` feature (on by default) it is jemalloc,
//! told never to hand freed pages back to the OS on its own, so that a partition's buffers (a
//! 32GiB PoRep witness is 4.2 GB) reuse the pages an earlier partition freed. The engine hands
//! them back when it goes idle ([`return_free_memory`]: after each idle period's last call, and
//! in `Engine::release_memory`), and during calls when more is kept ([`kept_free_bytes`]) than
//! the next partitions reuse (`pipeline::bound_kept_free_memory`): pages freed in one arena and
//! never asked for again add up otherwise, ≈ 0.5 GB a 32GiB partition.
//!
//! Why: glibc serves allocations above 32 MiB with mmap and unmaps them when freed, so every
//! partition faulted its buffers in anew and the kernel zeroed each page again, at about 1 GB/s
//! a core on the virtual machines measured (docs/PERFORMANCE.md, "Freed memory kept").

#[cfg(feature = "jemalloc")]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc's options, read at its first allocation: no decay, so freed pages stay until
/// purged. That holds for the arena of allocations above 8 MiB too, which jemalloc purges at
/// once only when the default decay is positive. `_rjem_` is tikv-jemalloc-sys's prefix for
/// jemalloc's symbols (`malloc_conf` here), which keeps them apart from the C allocator's.
#[cfg(feature = "jemalloc")]
#[used]
#[export_name = "_rjem_malloc_conf"]
static JEMALLOC_OPTIONS: ConfString = ConfString(c"dirty_decay_ms:-1,muzzy_decay_ms:-1".as_ptr());

/// A C string constant as a static of pointer type (what jemalloc's `malloc_conf` is).
#[cfg(feature = "jemalloc")]
#[repr(transparent)]
struct ConfString(*const std::ffi::c_char);

// SAFETY: it points at a 'static, immutable string.
#[cfg(feature = "jemalloc")]
unsafe impl Sync for ConfString {}

/// Hands the allocators' free pages back to the OS: jemalloc's (every arena's), and glibc's
/// (the C and CUDA side's allocations, and Rust's without the `jemalloc` feature).
pub fn return_free_memory() {
    #[cfg(feature = "jemalloc")]
    // SAFETY: "arena.<MALLCTL_ARENAS_ALL>.purge" (4096 in jemalloc 5) takes and returns nothing.
    {
        let status = unsafe {
            tikv_jemalloc_sys::mallctl(
                c"arena.4096.purge".as_ptr(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                0,
            )
        };
        if status != 0 {
            log::warn!("jemalloc kept its free pages: arena purge failed with error {status}");
        }
    }
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks the allocator's own free lists, under its locks.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// The allocators' view of the heap, in bytes: jemalloc's and glibc's together (glibc serves
/// the C and CUDA side's allocations, and Rust's without the `jemalloc` feature).
#[cfg(any(test, feature = "internals"))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HeapStats {
    /// Live allocations: jemalloc's `stats.allocated`; glibc's small blocks in use and mmapped
    /// chunks over all arenas.
    pub live_bytes: u64,
    /// Freed memory the allocators keep for reuse: jemalloc's dirty and muzzy pages over all
    /// arenas (none go back to the OS before [`return_free_memory`]); glibc's free blocks in
    /// its arenas. Anonymous memory above live + kept is fragmentation, or neither
    /// allocator's (pinned host buffers, the CUDA driver's, thread stacks).
    pub kept_free_bytes: u64,
}

/// The allocators' statistics now, jemalloc's refreshed first (`cuzk::internals`: the memory
/// tests, the soak and the benchmarks' records).
#[cfg(any(test, feature = "internals"))]
pub fn heap_stats() -> HeapStats {
    let (live_bytes, kept_free_bytes) = heap_counts();
    HeapStats { live_bytes, kept_free_bytes }
}

/// Freed memory the allocators keep for reuse, in bytes (`HeapStats::kept_free_bytes`):
/// what [`return_free_memory`] would hand back.
pub(crate) fn kept_free_bytes() -> u64 {
    heap_counts().1
}

/// Live and kept-free bytes over jemalloc and glibc (`HeapStats`'s two fields).
fn heap_counts() -> (u64, u64) {
    let (mut live, mut kept) = (0u64, 0u64);
    #[cfg(feature = "jemalloc")]
    {
        let mut epoch = 1u64;
        // SAFETY: writing "epoch" (a u64) refreshes the statistics the reads below return.
        unsafe {
            tikv_jemalloc_sys::mallctl(
                c"epoch".as_ptr(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                (&raw mut epoch).cast(),
                std::mem::size_of::<u64>(),
            );
        }
        let read = |name: &std::ffi::CStr| -> u64 {
            let (mut value, mut len) = (0usize, std::mem::size_of::<usize>());
            // SAFETY: the values read here are size_t, written into `value` (len checked).
            let status = unsafe { tikv_jemalloc_sys::mallctl(name.as_ptr(), (&raw mut value).cast(), &mut len, std::ptr::null_mut(), 0) };
            if status == 0 && len == std::mem::size_of::<usize>() {
                value as u64
            } else {
                0
            }
        };
        live += read(c"stats.allocated");
        // Arena 4096 is MALLCTL_ARENAS_ALL: the pages counted over every arena.
        let pages = read(c"stats.arenas.4096.pdirty") + read(c"stats.arenas.4096.pmuzzy");
        kept += pages * read(c"arenas.page");
    }
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: mallinfo2 only reads the allocator's statistics.
        let info = unsafe { libc::mallinfo2() };
        live += (info.uordblks + info.hblkhd) as u64;
        kept += info.fordblks as u64;
    }
    (live, kept)
}

/// Bytes of live allocations ([`HeapStats::live_bytes`]).
#[cfg(any(test, feature = "internals"))]
pub fn live_heap_bytes() -> u64 {
    heap_stats().live_bytes
}

#[cfg(all(test, feature = "jemalloc"))]
mod tests {
    use std::ffi::CStr;

    /// One of jemalloc's signed options, read through mallctl.
    fn option(name: &CStr) -> isize {
        let (mut value, mut len) = (0isize, std::mem::size_of::<isize>());
        // SAFETY: the opt.*_decay_ms options are ssize_t, written into `value` (len checked).
        let status = unsafe { tikv_jemalloc_sys::mallctl(name.as_ptr(), (&raw mut value).cast(), &mut len, std::ptr::null_mut(), 0) };
        assert_eq!((status, len), (0, std::mem::size_of::<isize>()), "{name:?}");
        value
    }

    /// How many of the pages holding `len` bytes at `address` are in memory (0 when unmapped).
    fn resident_pages(address: usize, len: usize) -> usize {
        let page = 4096;
        let start = address / page * page;
        let len = address + len - start;
        let mut resident = vec![0u8; len.div_ceil(page)];
        // SAFETY: mincore only reads the page tables of the range; `resident` has a byte per page.
        let status = unsafe { libc::mincore(start as *mut libc::c_void, len, resident.as_mut_ptr()) };
        match status {
            0 => resident.iter().filter(|&&r| r & 1 == 1).count(),
            _ => 0,
        }
    }

    #[test]
    fn freed_pages_stay_until_returned() {
        assert_eq!(option(c"opt.dirty_decay_ms"), -1, "jemalloc did not read our options");
        assert_eq!(option(c"opt.muzzy_decay_ms"), -1);
        let len = 256 << 20;
        let buffer = vec![1u8; len];
        let address = std::hint::black_box(buffer.as_ptr()) as usize;
        let pages = resident_pages(address, len);
        assert!(pages >= len / 4096, "only {pages} pages of a written buffer are in memory");
        let stats = super::heap_stats();
        assert!(stats.live_bytes >= len as u64, "the live heap misses a 256 MiB buffer: {stats:?}");
        drop(buffer);
        assert_eq!(resident_pages(address, len), pages, "a freed buffer's pages were handed back");
        // Its pages count as kept (other tests allocate meanwhile, but not a quarter of them).
        let kept = super::heap_stats();
        assert!(kept.kept_free_bytes >= (len - len / 4) as u64, "the freed buffer's kept pages: {kept:?}");
        super::return_free_memory();
        // Other tests allocate meanwhile, but not a quarter of these pages.
        let left = resident_pages(address, len);
        assert!(left < pages / 4, "{left} of {pages} pages still in memory after the purge");
    }
}
