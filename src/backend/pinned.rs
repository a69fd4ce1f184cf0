//! A pool of page-locked (pinned) host buffers: allocated on first need up to a size limit,
//! then reused by every call; a buffer goes back to the pool when its guard drops, on every
//! path, errors included. Never pinned per call: page-locking host memory is slow, and
//! registering a proof's multi-GiB host arrays each time would cost seconds per proof.

use std::ptr::NonNull;
use std::sync::{Condvar, Mutex};
use std::time::Instant;

use crate::error::{Error, Result, Status};
use crate::timings::nanos;

/// Where the pool's memory comes from (CUDA's page-locked allocator; plain memory in tests).
pub trait PinnedMemory: Send + Sync {
    fn alloc(&self, bytes: usize) -> Result<NonNull<u8>>;
    /// # Safety
    /// `ptr` came from `alloc(bytes)` of this allocator and is not used afterwards.
    unsafe fn free(&self, ptr: NonNull<u8>, bytes: usize);
}

/// How much of the pool is allocated and in use (engine status).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct PoolUsage {
    pub buffer_bytes: u64,
    pub limit_bytes: u64,
    pub allocated_bytes: u64,
    pub in_use_bytes: u64,
    /// Buffers handed out so far, and how many of those had to be allocated first.
    pub acquisitions: u64,
    pub allocations: u64,
}

struct State {
    free: Vec<NonNull<u8>>,
    allocated: usize,
    in_use: usize,
    acquisitions: u64,
}

// SAFETY: the pointers are plain memory owned by the pool; handing them between threads is
// what the pool is for.
unsafe impl Send for State {}

pub struct BufferPool<M: PinnedMemory> {
    memory: M,
    buffer_bytes: usize,
    max_buffers: usize,
    state: Mutex<State>,
    returned: Condvar,
}

/// A buffer of the pool, back in it when dropped.
pub struct PooledBuffer<'a, M: PinnedMemory> {
    pool: &'a BufferPool<M>,
    ptr: NonNull<u8>,
}

impl<M: PinnedMemory> PooledBuffer<'_, M> {
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    pub fn len(&self) -> usize {
        self.pool.buffer_bytes
    }
}

impl<M: PinnedMemory> Drop for PooledBuffer<'_, M> {
    fn drop(&mut self) {
        let mut state = self.pool.lock();
        state.free.push(self.ptr);
        state.in_use -= 1;
        drop(state);
        self.pool.returned.notify_one();
    }
}

impl<M: PinnedMemory> BufferPool<M> {
    /// A pool of buffers of `buffer_bytes`, at most `limit_bytes` of them in all (at least one
    /// buffer).
    pub fn new(memory: M, buffer_bytes: usize, limit_bytes: usize) -> Self {
        let max_buffers = (limit_bytes / buffer_bytes.max(1)).max(1);
        BufferPool {
            memory,
            buffer_bytes,
            max_buffers,
            state: Mutex::new(State {
                free: Vec::new(),
                allocated: 0,
                in_use: 0,
                acquisitions: 0,
            }),
            returned: Condvar::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A buffer: a free one, else a new one while under the limit, else the next one
    /// returned. Time spent allocating (pinning) is added to `pin_ns`.
    pub fn acquire(&self, pin_ns: &mut u64) -> Result<PooledBuffer<'_, M>> {
        let mut state = self.lock();
        loop {
            if let Some(ptr) = state.free.pop() {
                state.in_use += 1;
                state.acquisitions += 1;
                return Ok(PooledBuffer { pool: self, ptr });
            }
            if state.allocated < self.max_buffers {
                state.allocated += 1;
                drop(state);
                let start = Instant::now();
                let allocated = self.memory.alloc(self.buffer_bytes);
                *pin_ns += nanos(start.elapsed());
                let mut state = self.lock();
                return match allocated {
                    Ok(ptr) => {
                        state.in_use += 1;
                        state.acquisitions += 1;
                        Ok(PooledBuffer { pool: self, ptr })
                    }
                    Err(e) => {
                        state.allocated -= 1;
                        Err(Error::new(
                            Status::OutOfMemory,
                            format!("pinned host buffer of {} MiB: {}", self.buffer_bytes >> 20, e.message),
                        ))
                    }
                };
            }
            state = self.returned.wait(state).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// Frees the buffers nobody holds (all of them when none is in use); how many.
    pub fn free_idle(&self) -> usize {
        let mut state = self.lock();
        let idle: Vec<_> = state.free.drain(..).collect();
        state.allocated -= idle.len();
        drop(state);
        for ptr in &idle {
            // SAFETY: allocated by `memory` with this size and no longer in the pool.
            unsafe { self.memory.free(*ptr, self.buffer_bytes) };
        }
        idle.len()
    }

    pub fn usage(&self) -> PoolUsage {
        let state = self.lock();
        let bytes = self.buffer_bytes as u64;
        PoolUsage {
            buffer_bytes: bytes,
            limit_bytes: bytes * self.max_buffers as u64,
            allocated_bytes: bytes * state.allocated as u64,
            in_use_bytes: bytes * state.in_use as u64,
            acquisitions: state.acquisitions,
            allocations: state.allocated as u64,
        }
    }
}

impl<M: PinnedMemory> Drop for BufferPool<M> {
    fn drop(&mut self) {
        let state = self.state.get_mut().unwrap_or_else(|p| p.into_inner());
        for ptr in state.free.drain(..) {
            // SAFETY: allocated by `memory` with this size; no guard outlives the pool.
            unsafe { self.memory.free(ptr, self.buffer_bytes) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::alloc::Layout;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    /// Heap memory that counts allocations and frees, and fails when told to.
    #[derive(Default)]
    struct CountingMemory {
        allocs: Arc<AtomicUsize>,
        frees: Arc<AtomicUsize>,
        fail: bool,
    }

    impl PinnedMemory for CountingMemory {
        fn alloc(&self, bytes: usize) -> Result<NonNull<u8>> {
            if self.fail {
                return Err(Error::internal("no pinned memory"));
            }
            self.allocs.fetch_add(1, Ordering::SeqCst);
            // SAFETY: non-zero size.
            NonNull::new(unsafe { std::alloc::alloc(Layout::from_size_align(bytes, 64).unwrap()) }).ok_or_else(|| Error::internal("oom"))
        }

        unsafe fn free(&self, ptr: NonNull<u8>, bytes: usize) {
            self.frees.fetch_add(1, Ordering::SeqCst);
            std::alloc::dealloc(ptr.as_ptr(), Layout::from_size_align(bytes, 64).unwrap());
        }
    }

    fn failing_call(pool: &BufferPool<CountingMemory>) -> Result<()> {
        let mut pin_ns = 0;
        let _staging = pool.acquire(&mut pin_ns)?;
        Err(Error::new(Status::GpuError, "the kernel failed"))
    }

    #[test]
    fn buffers_are_allocated_once_and_reused() {
        let memory = CountingMemory::default();
        let (allocs, frees) = (memory.allocs.clone(), memory.frees.clone());
        let pool = BufferPool::new(memory, 4096, 2 * 4096);
        let mut pin_ns = 0;
        let first = pool.acquire(&mut pin_ns).unwrap().as_ptr();
        assert!(pin_ns > 0, "the first call pins");
        for _ in 0..10 {
            let mut pin_ns = 0;
            let buffer = pool.acquire(&mut pin_ns).unwrap();
            assert_eq!(buffer.as_ptr(), first, "the same buffer comes back");
            assert_eq!(pin_ns, 0, "warm calls pin nothing");
        }
        assert_eq!(allocs.load(Ordering::SeqCst), 1);
        let usage = pool.usage();
        assert_eq!(
            (usage.allocated_bytes, usage.in_use_bytes, usage.acquisitions, usage.limit_bytes),
            (4096, 0, 11, 8192)
        );
        drop(pool);
        assert_eq!(frees.load(Ordering::SeqCst), 1, "the pool frees what it allocated");
    }

    #[test]
    fn buffers_return_on_errors_and_waiters_get_them() {
        let pool = BufferPool::new(CountingMemory::default(), 1024, 1024);
        assert!(failing_call(&pool).is_err());
        assert_eq!(pool.usage().in_use_bytes, 0, "returned on the error path");
        let mut pin_ns = 0;
        let held = pool.acquire(&mut pin_ns).unwrap();
        std::thread::scope(|s| {
            let waiter = s.spawn(|| pool.acquire(&mut 0).map(|b| b.as_ptr() as usize));
            std::thread::sleep(std::time::Duration::from_millis(50));
            assert!(!waiter.is_finished(), "the pool is at its limit: the second caller waits");
            let ptr = held.as_ptr() as usize;
            drop(held);
            assert_eq!(waiter.join().unwrap().unwrap(), ptr);
        });
        assert_eq!(pool.usage().allocations, 1);
    }

    #[test]
    fn idle_buffers_are_freed_on_request_and_held_ones_kept() {
        let memory = CountingMemory::default();
        let (allocs, frees) = (memory.allocs.clone(), memory.frees.clone());
        let pool = BufferPool::new(memory, 1024, 3 * 1024);
        let held = pool.acquire(&mut 0).unwrap();
        drop((pool.acquire(&mut 0).unwrap(), pool.acquire(&mut 0).unwrap()));
        assert_eq!(pool.free_idle(), 2, "the two returned buffers");
        assert_eq!(frees.load(Ordering::SeqCst), 2);
        assert_eq!((pool.usage().allocated_bytes, pool.usage().in_use_bytes), (1024, 1024));
        drop(held);
        assert_eq!(pool.free_idle(), 1);
        assert_eq!(pool.usage().allocated_bytes, 0);
        let _again = pool.acquire(&mut 0).unwrap();
        assert_eq!(allocs.load(Ordering::SeqCst), 4, "a new buffer after the pool was emptied");
    }

    #[test]
    fn allocation_failure_is_an_error_and_leaks_no_slot() {
        let pool = BufferPool::new(
            CountingMemory {
                fail: true,
                ..Default::default()
            },
            1024,
            1024,
        );
        for _ in 0..3 {
            assert_eq!(pool.acquire(&mut 0).err().unwrap().status, Status::OutOfMemory);
        }
        assert_eq!(pool.usage().allocated_bytes, 0);
    }
}
