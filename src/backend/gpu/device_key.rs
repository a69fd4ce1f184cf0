//! Proving keys resident in device memory (cuda/device_key.cuh): a key's upload and free, the
//! device's budgeted cache of them, and where one MSM's points are read from, the resident
//! copy or host memory (a key larger than the budget is streamed per call). A key whose H
//! query has at most 2^22 points keeps its H table beside it (cuda/h_table.cuh), part of its
//! device memory.

use std::ffi::c_int;

use bellperson::groth16::Parameters;
use blstrs::{Bls12, G1Affine, G2Affine};
use rayon::ThreadPool;

use super::context::{Context, ContextObject};
use super::sys::{self, call};
use crate::error::{Error, Result};
use crate::groth16::{ProvingKey, QuerySizes};

/// A proving key's points in device memory (cuda/device_key.cuh).
pub(super) struct DeviceKey(ContextObject<sys::Key>);

// SAFETY: immutable device memory, read by one call at a time.
unsafe impl Send for DeviceKey {}
unsafe impl Sync for DeviceKey {}

/// A key is copied to the device in parts of at most this many bytes (0.1–0.15 s each over
/// PCIe), and its holder lets waiting calls of higher classes prove between two parts: a
/// 32GiB PoRep key is 45 GB, 2–3 s of copying.
const UPLOAD_PART_BYTES: usize = 2 << 30;

/// Host memory an upload from the parameter file takes: two parts read at a time (a query
/// smaller than a part is one part).
pub(super) fn upload_host_bytes(sizes: &QuerySizes) -> u64 {
    let largest_query = [sizes.h, sizes.l, sizes.a, sizes.b_g1].into_iter().max().unwrap_or(0) * QuerySizes::G1_BYTES;
    let largest_part = largest_query.max(sizes.b_g2 * QuerySizes::G2_BYTES).min(UPLOAD_PART_BYTES as u64);
    2 * largest_part
}

/// Device memory of a resident key's H table (cuda/h_table.cuh) besides the H query itself: a
/// copy of the query for every window but the first, 0 where its H query gets none (more than
/// 2^22 points).
pub(super) fn h_table_bytes(sizes: &QuerySizes) -> u64 {
    let mut windows = 0;
    // SAFETY: a pure function of its argument; the out-pointer is a local.
    let bits = unsafe { sys::cuzk_gpu_h_table_bits(sizes.h as usize, &mut windows) };
    match bits {
        0 => 0,
        _ => u64::from(windows - 1) * sizes.h * QuerySizes::G1_BYTES,
    }
}

/// One part of a query as it is copied: where its points start and how many.
#[derive(Clone, Copy)]
struct Part {
    query: usize,
    first: usize,
    count: usize,
}

impl Part {
    fn bytes(&self) -> usize {
        self.count * QuerySizes::point_bytes(self.query) as usize
    }

    /// The part's points as the parameter file holds them, read into `buffer` (reused when it
    /// is large enough; a new one is zeroed lazily by the system) on the current rayon pool.
    fn read(&self, key: &ProvingKey, mut buffer: Vec<u8>) -> Result<Vec<u8>> {
        if buffer.len() < self.bytes() {
            buffer = vec![0; self.bytes()];
        }
        key.read_file_points(self.query, self.first, &mut buffer[..self.bytes()])?;
        Ok(buffer)
    }
}

impl DeviceKey {
    /// The key's points copied to the device, in parts; `between` runs between two parts (the
    /// caller making way). From host memory when the host holds them; else each part is read
    /// from the parameter file as it holds them on `pool` while the part before it is copied
    /// and decoded on the device (cuda/key_decode.cuh: the host's decode of a 32GiB PoRep key
    /// took 15.9 s on 16 cores), so that the host never holds more than two parts, and the part
    /// after it is read ahead into the page cache meanwhile, so that the disk never waits.
    /// With `h_table` (its H query taking one: `h_table_bytes`), the H table is made on the
    /// device once the points are there.
    pub(super) fn upload(
        ctx: &Context,
        key: &ProvingKey,
        h_table: bool,
        pool: &ThreadPool,
        staging: &sys::Staging,
        between: &mut dyn FnMut() -> Result<()>,
    ) -> Result<Self> {
        let counts = key.query_sizes().counts().map(|n| n as usize);
        let (copy, ctx) = Self::alloc(ctx, &counts, h_table)?;
        let point_bytes = |query: usize| QuerySizes::point_bytes(query) as usize;
        let parts: Vec<Part> = (0..5)
            .flat_map(|query| {
                let per_part = (UPLOAD_PART_BYTES / point_bytes(query)).max(1);
                (0..counts[query]).step_by(per_part).map(move |first| Part {
                    query,
                    first,
                    count: per_part.min(counts[query] - first),
                })
            })
            .collect();
        let send = |part: Part, host: *const u8| {
            // SAFETY: `host` holds the part's `count` points (blst affine points, the device's
            // layout) and outlives the synchronous call; the copy has room for the query's
            // points; the staging halves belong to this call.
            call("uploading the proving key", |msg| unsafe {
                sys::cuzk_gpu_key_upload(ctx, copy.0.ptr(), part.query as u32, part.first, part.count, host.cast(), staging, msg)
            })
        };
        let build_h_table = |copy: DeviceKey| -> Result<DeviceKey> {
            if h_table {
                copy.build_h_table(ctx)?;
            }
            Ok(copy)
        };
        if let Some(host) = key.held_host_points() {
            for (i, &part) in parts.iter().enumerate() {
                if i > 0 {
                    between()?;
                }
                send(part, host_query(&host, part.query).wrapping_add(part.first * point_bytes(part.query)))?;
            }
            return build_h_table(copy);
        }
        let send_file_points = |part: Part, file_bytes: &[u8]| {
            let mut first_bad = usize::MAX;
            // SAFETY: `file_bytes` holds the part's `count` points as the file encodes them and
            // outlives the synchronous call; the copy has room for the query's points; the
            // staging halves belong to this call.
            call("uploading the proving key", |msg| unsafe {
                sys::cuzk_gpu_key_upload_file_points(
                    ctx,
                    copy.0.ptr(),
                    part.query as u32,
                    part.first,
                    part.count,
                    file_bytes.as_ptr().cast(),
                    staging,
                    &mut first_bad,
                    msg,
                )
            })?;
            match first_bad {
                usize::MAX => Ok(()),
                i => Err(key.bad_point(part.query, part.first + i)),
            }
        };
        std::thread::scope(|scope| -> Result<()> {
            let read = |buffer: Vec<u8>, part: Part| scope.spawn(move || pool.install(|| part.read(key, buffer)));
            let read_ahead = |part: Option<&Part>| {
                if let Some(&Part { query, first, count }) = part {
                    scope.spawn(move || key.prefetch_points(query, first, count));
                }
            };
            read_ahead(parts.get(1));
            let mut spare = Some(Vec::new());
            let mut reading = parts.first().map(|&part| read(Vec::new(), part));
            for (i, &part) in parts.iter().enumerate() {
                let file_bytes = reading
                    .take()
                    .expect("each part is read before it is sent")
                    .join()
                    .unwrap_or_else(|_| Err(Error::internal("reading a part of the proving key panicked")))?;
                if let Some(&next) = parts.get(i + 1) {
                    reading = Some(read(spare.take().expect("two buffers take turns"), next));
                    read_ahead(parts.get(i + 2));
                }
                if i > 0 {
                    between()?;
                }
                send_file_points(part, &file_bytes[..part.bytes()])?;
                spare = Some(file_bytes);
            }
            Ok(())
        })?;
        build_h_table(copy)
    }

    /// Device memory for a key of `counts` points a query in `ctx`'s current context, with room
    /// for its H table when `h_table`; and that context, where it is to be filled.
    fn alloc(ctx: &Context, counts: &[usize; 5], h_table: bool) -> Result<(Self, *mut sys::Context)> {
        let (ctx, life) = ctx.current()?;
        let mut out = std::ptr::null_mut();
        // SAFETY: out-pointer to a local; the counts are the query lengths.
        call("allocating device memory for the proving key", |msg| unsafe {
            sys::cuzk_gpu_key_alloc(ctx, counts, c_int::from(h_table), &mut out, msg)
        })?;
        // SAFETY: made by cuzk_gpu_key_alloc in this context, owned here.
        let key = DeviceKey(unsafe { ContextObject::new(out, life, sys::cuzk_gpu_key_free, "device key")? });
        Ok((key, ctx))
    }

    /// Makes the H table of a key allocated with room for it (`alloc`) in `ctx`, its H query
    /// uploaded whole.
    fn build_h_table(&self, ctx: *mut sys::Context) -> Result<()> {
        // SAFETY: the key was made in `ctx`; the C side refuses a key without room for a table.
        call("making the key's H table on the device", |msg| unsafe {
            sys::cuzk_gpu_key_build_h_table(ctx, self.0.ptr(), msg)
        })
    }
}

#[cfg(feature = "internals")]
impl DeviceKey {
    /// A key of `points` as its H query alone (the other queries empty), with its H table, for
    /// the tests and benchmarks of H's MSM over the table (`GpuBackend::msm_g1_over_h_table`).
    pub(super) fn h_query_only(ctx: &Context, points: &[G1Affine]) -> Result<Self> {
        let mut counts = [0usize; 5];
        counts[sys::QUERY_H as usize] = points.len();
        let (key, ctx) = Self::alloc(ctx, &counts, true)?;
        // SAFETY: `points` holds the query's points (blst affine, the device's layout) for the
        // synchronous calls; no staging (a pageable copy); the table is built once they are in.
        call("uploading an H query", |msg| unsafe {
            sys::cuzk_gpu_key_upload(
                ctx,
                key.ptr(),
                sys::QUERY_H,
                0,
                points.len(),
                points.as_ptr().cast(),
                std::ptr::null(),
                msg,
            )
        })?;
        key.build_h_table(ctx)?;
        Ok(key)
    }

    /// The key as the C side takes it.
    pub(super) fn ptr(&self) -> *mut sys::Key {
        self.0.ptr()
    }
}

/// Where query `query`'s points start in host memory.
fn host_query(host: &Parameters<Bls12>, query: usize) -> *const u8 {
    match query {
        0 => host.h.as_ptr().cast(),
        1 => host.l.as_ptr().cast(),
        2 => host.a.as_ptr().cast(),
        3 => host.b_g1.as_ptr().cast(),
        _ => host.b_g2.as_ptr().cast(),
    }
}

/// Where one MSM's points are for the device: the resident copy's query, or host memory (a
/// streamed key's points, or a tail the host gathered from them).
pub(super) struct PointSource<'a> {
    resident: Option<&'a DeviceKey>,
    host: Option<&'a Parameters<Bls12>>,
    sizes: QuerySizes,
}

impl<'a> PointSource<'a> {
    /// The key's points: on the device when `resident`, else in `host`.
    pub(super) fn new(resident: Option<&'a DeviceKey>, host: Option<&'a Parameters<Bls12>>, sizes: QuerySizes) -> Result<Self> {
        if resident.is_none() && host.is_none() {
            return Err(Error::internal("a streamed proving key without its points in host memory"));
        }
        Ok(PointSource { resident, host, sizes })
    }

    /// Query `query`'s points, all of them.
    pub(super) fn points(&self, query: u32) -> sys::Points {
        let n = self.sizes.counts()[query as usize] as usize;
        match (self.resident, self.host) {
            (Some(key), _) => sys::Points {
                key: key.0.ptr(),
                query,
                host: std::ptr::null(),
                n,
            },
            (None, Some(host)) => sys::Points {
                key: std::ptr::null(),
                query,
                host: host_query(host, query as usize).cast(),
                n,
            },
            (None, None) => unreachable!("PointSource::new refuses a source without points"),
        }
    }

    /// Points the host gathered for query `query`.
    pub(super) fn gathered<P>(&self, query: u32, points: &[P]) -> sys::Points {
        sys::Points {
            key: std::ptr::null(),
            query,
            host: points.as_ptr().cast(),
            n: points.len(),
        }
    }

    /// The host's copy of G1 query `query` when the key is streamed (None when resident).
    pub(super) fn streamed_g1(&self, query: u32) -> Option<&'a [G1Affine]> {
        let host = self.host.filter(|_| self.resident.is_none())?;
        Some(match query {
            sys::QUERY_H => &host.h[..],
            sys::QUERY_L => &host.l[..],
            sys::QUERY_A => &host.a[..],
            _ => &host.b_g1[..],
        })
    }

    /// The host's copy of B_G2 when the key is streamed (None when resident).
    /// Whether every query's points are in the device's copy of the key.
    pub(super) fn is_resident(&self) -> bool {
        self.resident.is_some()
    }

    pub(super) fn streamed_g2(&self) -> Option<&'a [G2Affine]> {
        self.host.filter(|_| self.resident.is_none()).map(|host| &host.b_g2[..])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_h(h: u64) -> QuerySizes {
        QuerySizes {
            ic: 2,
            h,
            l: 10,
            a: 10,
            b_g1: 10,
            b_g2: 10,
        }
    }

    /// The H table's width takes the least work with one set of buckets: a 2KiB PoRep's H
    /// query (2^22 − 1 points) gets 20-bit digits, 13 windows, 12 copies besides the query.
    #[test]
    fn h_table_bytes_by_the_h_query() {
        let porep_2k = (1 << 22) - 1;
        assert_eq!(h_table_bytes(&with_h(porep_2k)), 12 * porep_2k * QuerySizes::G1_BYTES);
        // Past 2^22 points, or none: no table.
        assert_eq!(h_table_bytes(&with_h((1 << 22) + 1)), 0);
        assert_eq!(h_table_bytes(&with_h(1 << 27)), 0);
        assert_eq!(h_table_bytes(&with_h(0)), 0);
        // A larger query, wider digits (fewer windows): its copies never grow with its size,
        // from 31 at one point (8-bit digits, 32 windows).
        let mut copies_before = u64::MAX;
        for log in 0..=22 {
            let h = 1u64 << log;
            let bytes = h_table_bytes(&with_h(h));
            assert!(bytes > 0 && bytes % (h * QuerySizes::G1_BYTES) == 0, "2^{log}: {bytes}");
            let copies = bytes / (h * QuerySizes::G1_BYTES);
            assert!(copies <= copies_before && copies <= 31, "2^{log}: {copies} copies after {copies_before}");
            copies_before = copies;
        }
        assert_eq!(h_table_bytes(&with_h(1)), 31 * QuerySizes::G1_BYTES);
    }
}
