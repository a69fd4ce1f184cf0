//! `cuzk_config.malloc_arena_max`: an engine started with it caps glibc's malloc arenas, so
//! that threads contending for the allocator afterwards share at most that many heaps (glibc's
//! own cap is 8 per core). One test: the allocator's setting is the process's.
#![cfg(all(target_os = "linux", target_env = "gnu"))]

use std::ffi::CString;
use std::io::{Read, Seek, SeekFrom};
use std::os::fd::IntoRawFd;
use std::ptr::null_mut;
use std::sync::Barrier;

use cuzk::error::Status;
use cuzk::ffi::*;

/// The heaps (arenas) glibc's allocator has, as `malloc_info` lists them.
fn malloc_heaps() -> usize {
    let path = std::env::temp_dir().join(format!("cuzk-malloc-info-{}.xml", std::process::id()));
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(true)
        .read(true)
        .write(true)
        .open(&path)
        .unwrap();
    std::fs::remove_file(&path).unwrap();
    let mut reader = file.try_clone().unwrap();
    // SAFETY: fdopen takes the descriptor (fclose closes it); malloc_info writes to the stream.
    unsafe {
        let stream = libc::fdopen(file.into_raw_fd(), c"w".as_ptr());
        assert!(!stream.is_null());
        assert_eq!(libc::malloc_info(0, stream), 0);
        assert_eq!(libc::fclose(stream), 0);
    }
    let mut xml = String::new();
    reader.seek(SeekFrom::Start(0)).unwrap();
    reader.read_to_string(&mut xml).unwrap();
    xml.matches("<heap nr=").count()
}

/// Threads that all allocate at once, each keeping its memory until all have allocated, so
/// each contends for an arena.
fn contend_for_the_allocator(threads: usize) {
    let barrier = Barrier::new(threads);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                barrier.wait();
                let blocks: Vec<Vec<u8>> = (0..64).map(|i| vec![i as u8; 4096]).collect();
                barrier.wait();
                drop(blocks);
            });
        }
    });
}

#[test]
fn an_engine_with_malloc_arena_max_caps_the_arenas_of_later_threads() {
    let params = std::env::temp_dir().join("cuzk-malloc-arenas-no-parameters");
    std::fs::create_dir_all(&params).unwrap();
    let params = CString::new(params.to_str().unwrap()).unwrap();
    // SAFETY: all-zero is a valid cuzk_config (NULL directory, zero numbers).
    let mut config: cuzk_config = unsafe { std::mem::zeroed() };
    config.struct_size = size_of::<cuzk_config>() as u32;
    assert_eq!(cuzk_config_default(&mut config, null_mut()), Status::Ok);
    assert_eq!(config.malloc_arena_max, 0, "the default leaves the host's allocator alone");
    config.cpu_only = true;
    config.num_threads = 1;
    config.param_cache_dir = params.as_ptr();
    config.malloc_arena_max = 2;
    let before = malloc_heaps();
    assert!(before <= 2, "{before} heaps before the engine: this test's process must start small");
    let mut engine = null_mut();
    let mut err = null_mut();
    let status = cuzk_engine_new(&config, &mut engine, &mut err);
    assert_eq!(status, Status::Ok, "cuzk_engine_new failed");
    contend_for_the_allocator(32);
    let after = malloc_heaps();
    assert!(after <= 2, "{after} malloc heaps after 32 contending threads with malloc_arena_max = 2");
    cuzk_engine_free(engine);
}
