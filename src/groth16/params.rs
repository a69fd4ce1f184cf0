//! Proving keys: bellperson's parameters, and an identity that device copies of the points are
//! keyed by. A key read from a params file keeps only its verifying key and its queries' sizes
//! in memory; its points are decoded from the file on all cores when a call needs them: part by
//! part as they are copied to a device, or whole into host memory for the CPU backend and for a
//! key streamed to the device. So a key resident on the GPU is not also held in host RAM.

use std::fs::File;
use std::io::{self, BufReader, ErrorKind, Read, Seek};
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::SystemTime;

use bellperson::groth16::{prepare_verifying_key, Parameters, PreparedVerifyingKey, VerifyingKey};
use blstrs::{Bls12, G1Affine, G2Affine};
use group::prime::PrimeCurveAffine;
use group::UncompressedEncoding;
use once_cell::sync::OnceCell;
use rayon::prelude::*;
use rayon::ThreadPool;

use crate::error::{Error, Result, Status};

/// The queries of a proving key, in the params file's order (and cuda/cuzk_gpu.h's numbering).
const QUERY_NAMES: [&str; 5] = ["h", "l", "a", "b_g1", "b_g2"];

/// A point of a proving key's query as the file stores it (uncompressed) and memory holds it.
pub(crate) trait KeyPoint: UncompressedEncoding + PrimeCurveAffine + Send + Sync {
    /// The pool of a repeating key that queries of this group repeat.
    #[cfg(feature = "internals")]
    fn pool(pools: &RepeatedPoints) -> &[Self];
}

impl KeyPoint for G1Affine {
    #[cfg(feature = "internals")]
    fn pool(pools: &RepeatedPoints) -> &[Self] {
        &pools.g1
    }
}

impl KeyPoint for G2Affine {
    #[cfg(feature = "internals")]
    fn pool(pools: &RepeatedPoints) -> &[Self] {
        &pools.g2
    }
}

/// A Groth16 proving key, with an identity that device-side copies of its points are keyed by.
pub struct ProvingKey {
    pub vk: VerifyingKey<Bls12>,
    sizes: QuerySizes,
    /// Where the points are read from; None for a key made in memory, whose host points are
    /// always held.
    source: Option<PointSource>,
    /// The points decoded in host memory, while held ([`HostCopyHandle`] reaches it too).
    host: Arc<HostSlot>,
    /// `vk` prepared for verification, once a proof made with the key has been verified.
    prepared_vk: OnceCell<PreparedVerifyingKey<Bls12>>,
    id: u64,
    label: String,
    /// Copies of this key elsewhere (device memory) hold a `Weak` of it: once the key is gone
    /// they are stale and are dropped.
    alive: Arc<()>,
}

/// A key's points in host memory, while held.
type HostSlot = Mutex<Option<Arc<Parameters<Bls12>>>>;

/// A handle on a key's host copy of its points that does not keep the key alive: what a policy
/// over every key's host copy (`backend::host_copies`) releases to make room for another's.
#[derive(Clone)]
pub struct HostCopyHandle {
    slot: Weak<HostSlot>,
    bytes: u64,
    label: String,
    /// False for a key made in memory, whose points have no other copy.
    releasable: bool,
}

impl HostCopyHandle {
    pub fn is_of(&self, key: &ProvingKey) -> bool {
        std::ptr::eq(self.slot.as_ptr(), Arc::as_ptr(&key.host))
    }

    /// Whether its key still exists.
    pub fn is_alive(&self) -> bool {
        self.slot.strong_count() > 0
    }

    pub fn label(&self) -> &str {
        &self.label
    }

    /// Drops the host copy when it is held and no call uses it (a call holds its own `Arc` of
    /// the points until it ends); returns the bytes that go with it, 0 when none do. A copy
    /// being decoded (its lock held for tens of seconds) is not waited for: it is in use.
    pub fn release_if_idle(&self) -> u64 {
        let Some(slot) = self.slot.upgrade().filter(|_| self.releasable) else {
            return 0;
        };
        let mut held = match slot.try_lock() {
            Ok(held) => held,
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return 0,
        };
        match &*held {
            Some(points) if Arc::strong_count(points) == 1 => {
                held.take();
                self.bytes
            }
            _ => 0,
        }
    }
}

/// Where the points of a key are read from when they are not held in host memory.
enum PointSource {
    File(KeyFile),
    #[cfg(feature = "internals")]
    Repeated(RepeatedPoints),
}

/// The pools of a repeating key ([`ProvingKey::repeating`]).
#[cfg(feature = "internals")]
pub struct RepeatedPoints {
    g1: Vec<G1Affine>,
    g2: Vec<G2Affine>,
    /// The pools as a params file holds them, for [`ProvingKey::read_file_points`].
    g1_file: Vec<u8>,
    g2_file: Vec<u8>,
}

/// An open params file: where each query's points start, and the file's length and
/// modification time when it was opened (a file changed since is refused, not decoded).
struct KeyFile {
    file: File,
    starts: [u64; 5],
    len: u64,
    modified: Option<SystemTime>,
}

/// Points decoded per task: one read from the file and one pass over them (6 MiB of G1).
const DECODE_CHUNK_POINTS: usize = 1 << 16;

/// Bytes of one read of [`KeyFile::read_bytes`].
const READ_CHUNK_BYTES: usize = 4 << 20;

/// Bytes of one read of [`read_into_page_cache`].
const READ_AHEAD_BLOCK: usize = 16 << 20;

/// Reads `len` bytes of `file` from `start` in sequential blocks, dropping them: the page cache
/// keeps them. `POSIX_FADV_WILLNEED` would not do: Linux reads only the device's read-ahead
/// window (`read_ahead_kb`, 128 KiB by default) of the range it is given, so the rest of a
/// part was still read by the decode's own reads (docs/PERFORMANCE.md).
fn read_into_page_cache(file: &File, start: u64, len: u64) -> io::Result<()> {
    let mut block = vec![0u8; READ_AHEAD_BLOCK.min(len as usize)];
    let mut at = start;
    while at < start + len {
        let want = (start + len - at).min(block.len() as u64) as usize;
        match file.read_at(&mut block[..want], at)? {
            0 => return Err(io::Error::new(ErrorKind::UnexpectedEof, format!("the file ends at {at}"))),
            n => at += n as u64,
        }
    }
    Ok(())
}

fn next_id() -> u64 {
    static NEXT_ID: AtomicU64 = AtomicU64::new(1);
    NEXT_ID.fetch_add(1, Ordering::Relaxed)
}

impl ProvingKey {
    /// Wraps parameters made in memory (their points stay held); `label` names the key in logs
    /// and the engine status. Every call gives a new identity.
    pub fn new(params: Parameters<Bls12>, label: impl Into<String>) -> Self {
        let sizes = QuerySizes::of(&params);
        let vk = params.vk.clone();
        Self::with_points(vk, sizes, None, Some(Arc::new(params)), label.into())
    }

    /// A key of a new identity whose points are read from `source` (None: held in `host`).
    fn with_points(
        vk: VerifyingKey<Bls12>,
        sizes: QuerySizes,
        source: Option<PointSource>,
        host: Option<Arc<Parameters<Bls12>>>,
        label: String,
    ) -> Self {
        ProvingKey {
            vk,
            sizes,
            source,
            host: Arc::new(Mutex::new(host)),
            prepared_vk: OnceCell::new(),
            id: next_id(),
            label,
            alive: Arc::new(()),
        }
    }

    /// A key read from the params file `file` (bellperson's format, `Parameters::write`: the
    /// verifying key, then h, l, a, b_g1 as a big-endian u32 count and uncompressed G1 points,
    /// b_g2 the same in G2):
    /// its verifying key and query sizes now (a few small reads), its points when a call needs
    /// them. `label` names it (the path).
    pub fn open(file: File, label: impl Into<String>) -> io::Result<Self> {
        let meta = file.metadata()?;
        // From the start, wherever the handle is (a digest check may have read it to the end).
        let mut reader = BufReader::new(&file);
        reader.seek(io::SeekFrom::Start(0))?;
        let (vk, sizes, starts) = read_layout(&mut reader)?;
        let file = KeyFile {
            file,
            starts,
            len: meta.len(),
            modified: meta.modified().ok(),
        };
        Ok(Self::with_points(vk, sizes, Some(PointSource::File(file)), None, label.into()))
    }

    /// A key of `sizes` whose G1 queries repeat the pool `g1` and whose B_G2 query repeats
    /// `g2` (point i of a query is the pool's point i modulo its length). For benchmarks: a
    /// synthetic key of a 32GiB circuit's sizes whose host memory is its pools (its points are
    /// made only for a call that needs them there, and copied to a device part by part like a
    /// file's), so that the keys of several proof kinds can be in use at once. Its proofs cannot
    /// verify.
    #[cfg(feature = "internals")]
    pub fn repeating(vk: VerifyingKey<Bls12>, sizes: QuerySizes, g1: Vec<G1Affine>, g2: Vec<G2Affine>, label: impl Into<String>) -> Result<Self> {
        let [h, l, a, b_g1, b_g2] = sizes.counts();
        if (g1.is_empty() && h + l + a + b_g1 > 0) || (g2.is_empty() && b_g2 > 0) || vk.ic.len() as u64 != sizes.ic {
            return Err(Error::invalid(
                "a repeating key needs points in each pool its queries use, and ic of the inputs' count",
            ));
        }
        let g1_file = g1.iter().flat_map(|p| p.to_uncompressed()).collect();
        let g2_file = g2.iter().flat_map(|p| p.to_uncompressed()).collect();
        let pools = PointSource::Repeated(RepeatedPoints { g1, g2, g1_file, g2_file });
        Ok(Self::with_points(vk, sizes, Some(pools), None, label.into()))
    }

    pub fn id(&self) -> u64 {
        self.id
    }

    pub fn label(&self) -> &str {
        &self.label
    }

    pub fn liveness(&self) -> Weak<()> {
        Arc::downgrade(&self.alive)
    }

    pub fn host_copy_handle(&self) -> HostCopyHandle {
        HostCopyHandle {
            slot: Arc::downgrade(&self.host),
            bytes: self.points_bytes(),
            label: self.label.clone(),
            releasable: self.source.is_some(),
        }
    }

    /// Bytes of the points of the five queries in affine form (what a device copy holds, and
    /// the host copy when held).
    pub fn points_bytes(&self) -> u64 {
        self.sizes.points_bytes()
    }

    pub fn query_sizes(&self) -> QuerySizes {
        self.sizes
    }

    fn held(&self) -> std::sync::MutexGuard<'_, Option<Arc<Parameters<Bls12>>>> {
        self.host.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The points in host memory, when held (none are decoded here).
    pub fn held_host_points(&self) -> Option<Arc<Parameters<Bls12>>> {
        self.held().clone()
    }

    /// Bytes of points held in host memory.
    pub fn host_bytes(&self) -> u64 {
        if self.held().is_some() {
            self.points_bytes()
        } else {
            0
        }
    }

    /// The points in host memory, decoded from the file on `pool` and then held when they are
    /// not; `decode_ns` gets the time spent decoding. Concurrent callers decode once: they wait
    /// for it on their own threads, never on one of `pool`'s workers (one waiting there could
    /// be the worker the decoding needs: rayon runs queued jobs on a worker that waits), so a
    /// call from one is an error. Calls ask through `backend::host_copies::host_points`, which
    /// makes room for the copy first.
    pub fn host_points(&self, pool: &ThreadPool, decode_ns: &mut u64) -> Result<Arc<Parameters<Bls12>>> {
        if pool.current_thread_index().is_some() {
            return Err(Error::internal(format!(
                "the points of {} were asked for on one of the engine's workers (it may wait for a decoding that needs that worker)",
                self.label
            )));
        }
        let mut held = self.held();
        if let Some(points) = &*held {
            return Ok(Arc::clone(points));
        }
        let start = std::time::Instant::now();
        let points = pool.install(|| -> Result<_> {
            Ok(Arc::new(Parameters {
                vk: self.vk.clone(),
                h: Arc::new(self.read_query::<G1Affine>(0)?),
                l: Arc::new(self.read_query::<G1Affine>(1)?),
                a: Arc::new(self.read_query::<G1Affine>(2)?),
                b_g1: Arc::new(self.read_query::<G1Affine>(3)?),
                b_g2: Arc::new(self.read_query::<G2Affine>(4)?),
            }))
        })?;
        *decode_ns += crate::timings::nanos(start.elapsed());
        log::info!("decoded {} into host memory in {:.2?}", self.label, start.elapsed());
        *held = Some(Arc::clone(&points));
        Ok(points)
    }

    /// The verifying key prepared for verification (bellperson's `prepare_verifying_key`: a
    /// pairing and a table of 255 multiples per public input, whose affine conversions took
    /// 18 ms for a 2KiB PoRep key's 39 inputs, most of a warm 2KiB proof's self-verification),
    /// made by the first verification and kept with the key
    /// ([`QuerySizes::prepared_verifying_key_bytes`]).
    pub fn prepared_verifying_key(&self) -> &PreparedVerifyingKey<Bls12> {
        self.prepared_vk.get_or_init(|| prepare_verifying_key(&self.vk))
    }

    /// Drops the host copy of the points of a key read from a file or repeating a pool (calls
    /// using it keep it until they end): the next call that needs them decodes them again.
    /// Returns the bytes it held; 0 for a key made in memory, which has no other copy.
    pub fn release_host_points(&self) -> u64 {
        if self.source.is_none() {
            return 0;
        }
        match self.held().take() {
            Some(_) => self.points_bytes(),
            None => 0,
        }
    }

    /// Points `first..first + out.len()` of query `query` decoded from the file (or taken from
    /// the pool) into `out`, on the current rayon pool. Not for a key made in memory.
    pub(crate) fn read_points<P: KeyPoint>(&self, query: usize, first: usize, out: &mut [P]) -> Result<()> {
        match &self.source {
            None => Err(self.made_in_memory()),
            Some(PointSource::File(key_file)) => key_file
                .read_points(query, first, out)
                .map_err(|e| Error::new(Status::ParametersInvalid, format!("corrupt parameter file {}: {e}", self.label))),
            #[cfg(feature = "internals")]
            Some(PointSource::Repeated(pools)) => {
                let pool = P::pool(pools);
                out.par_chunks_mut(DECODE_CHUNK_POINTS).enumerate().for_each(|(c, chunk)| {
                    let start = first + c * DECODE_CHUNK_POINTS;
                    for (i, point) in chunk.iter_mut().enumerate() {
                        *point = pool[(start + i) % pool.len()];
                    }
                });
                Ok(())
            }
        }
    }

    /// Points `first..first + n` of query `query` as the params file holds them (uncompressed,
    /// big-endian: `n` is `out`'s length over the query's point bytes) read into `out` on the
    /// current rayon pool, not decoded: the device decodes them (cuda/key_decode.cuh) and
    /// names a bad one with [`Self::bad_point`]. A repeating key's are its pools' encoded.
    /// Not for a key made in memory.
    pub fn read_file_points(&self, query: usize, first: usize, out: &mut [u8]) -> Result<()> {
        let point_bytes = QuerySizes::point_bytes(query) as usize;
        if out.len() % point_bytes != 0 || first + out.len() / point_bytes > self.sizes.counts()[query] as usize {
            return Err(Error::internal(format!(
                "{}: {} bytes from point {first} are not whole points of query {}",
                self.label,
                out.len(),
                QUERY_NAMES[query]
            )));
        }
        match &self.source {
            None => Err(self.made_in_memory()),
            Some(PointSource::File(key_file)) => key_file
                .read_bytes(key_file.starts[query] + (first * point_bytes) as u64, out)
                .map_err(|e| Error::new(Status::ParametersInvalid, format!("reading parameter file {}: {e}", self.label))),
            #[cfg(feature = "internals")]
            Some(PointSource::Repeated(pools)) => {
                let pool = match query == QUERY_NAMES.len() - 1 {
                    true => &pools.g2_file,
                    false => &pools.g1_file,
                };
                let points = pool.len() / point_bytes;
                out.par_chunks_mut(DECODE_CHUNK_POINTS * point_bytes).enumerate().for_each(|(c, chunk)| {
                    let start = first + c * DECODE_CHUNK_POINTS;
                    for (i, point) in chunk.chunks_exact_mut(point_bytes).enumerate() {
                        let at = (start + i) % points * point_bytes;
                        point.copy_from_slice(&pool[at..at + point_bytes]);
                    }
                });
                Ok(())
            }
        }
    }

    /// The error of reading points of a key made in memory, which has no file to read them from.
    fn made_in_memory(&self) -> Error {
        Error::internal(format!("{} was made in memory: it has no file to read points from", self.label))
    }

    /// The error of point `index` of query `query` refused where it was decoded, as the host's
    /// reader words it.
    pub fn bad_point(&self, query: usize, index: usize) -> Error {
        let e = bad_point(index, QUERY_NAMES[query]);
        Error::new(Status::ParametersInvalid, format!("corrupt parameter file {}: {e}", self.label))
    }

    /// Reads points `first..first + count` of query `query` from the file into the page cache,
    /// so that decoding them later does not wait for the disk: the key's upload reads the part
    /// after the one it decodes. A key made in memory reads nothing; a failed read is left to
    /// the decode, which reads the same bytes and reports it.
    pub fn prefetch_points(&self, query: usize, first: usize, count: usize) {
        let Some(PointSource::File(key_file)) = &self.source else {
            return;
        };
        let point_bytes = QuerySizes::point_bytes(query);
        let start = key_file.starts[query] + first as u64 * point_bytes;
        if let Err(e) = read_into_page_cache(&key_file.file, start, count as u64 * point_bytes) {
            log::debug!("{}: read-ahead stopped ({e})", self.label);
        }
    }

    /// The whole of query `query` from the file.
    fn read_query<P: KeyPoint>(&self, query: usize) -> Result<Vec<P>> {
        let mut points = vec![P::identity(); self.sizes.counts()[query] as usize];
        self.read_points(query, 0, &mut points)?;
        Ok(points)
    }
}

impl KeyFile {
    /// Points `first..first + out.len()` of query `query` into `out`, in chunks read and
    /// decoded on the current rayon pool; the first bad point is named by query and index.
    fn read_points<P: KeyPoint>(&self, query: usize, first: usize, out: &mut [P]) -> io::Result<()> {
        self.check_unchanged()?;
        let point_bytes = P::Uncompressed::default().as_ref().len();
        let start = self.starts[query] + (first * point_bytes) as u64;
        let first_bad = AtomicUsize::new(usize::MAX);
        out.par_chunks_mut(DECODE_CHUNK_POINTS).enumerate().try_for_each(|(c, chunk)| {
            let mut raw = vec![0u8; chunk.len() * point_bytes];
            self.file
                .read_exact_at(&mut raw, start + (c * DECODE_CHUNK_POINTS * point_bytes) as u64)?;
            if let Err(i) = decode_points(&raw, chunk) {
                first_bad.fetch_min(first + c * DECODE_CHUNK_POINTS + i, Ordering::Relaxed);
            }
            io::Result::Ok(())
        })?;
        match first_bad.into_inner() {
            usize::MAX => Ok(()),
            i => Err(bad_point(i, QUERY_NAMES[query])),
        }
    }

    /// `out.len()` bytes from `start`, read in chunks on the current rayon pool.
    fn read_bytes(&self, start: u64, out: &mut [u8]) -> io::Result<()> {
        self.check_unchanged()?;
        out.par_chunks_mut(READ_CHUNK_BYTES)
            .enumerate()
            .try_for_each(|(c, chunk)| self.file.read_exact_at(chunk, start + (c * READ_CHUNK_BYTES) as u64))
    }

    fn check_unchanged(&self) -> io::Result<()> {
        let meta = self.file.metadata()?;
        if meta.len() != self.len || meta.modified().ok() != self.modified {
            return Err(io::Error::new(
                ErrorKind::InvalidData,
                "the parameter file changed on disk since it was opened (its next use reads it again)",
            ));
        }
        Ok(())
    }
}

/// How many points each query of a proving key holds: what sizes a proof's buffers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QuerySizes {
    /// The verifying key's input points: the circuit's public inputs (1 included).
    pub ic: u64,
    /// The domain's size minus one.
    pub h: u64,
    /// The circuit's private (aux) variables.
    pub l: u64,
    pub a: u64,
    pub b_g1: u64,
    pub b_g2: u64,
}

impl QuerySizes {
    /// Affine bytes of a G1 and of a G2 point.
    pub const G1_BYTES: u64 = 96;
    pub const G2_BYTES: u64 = 192;

    fn of(p: &Parameters<Bls12>) -> Self {
        QuerySizes {
            ic: p.vk.ic.len() as u64,
            h: p.h.len() as u64,
            l: p.l.len() as u64,
            a: p.a.len() as u64,
            b_g1: p.b_g1.len() as u64,
            b_g2: p.b_g2.len() as u64,
        }
    }

    /// Bytes of one point of query `query` (in `QUERY_NAMES`' order: B_G2, the last, is G2).
    pub fn point_bytes(query: usize) -> u64 {
        if query == QUERY_NAMES.len() - 1 {
            Self::G2_BYTES
        } else {
            Self::G1_BYTES
        }
    }

    /// The points of each query, in `QUERY_NAMES`' order.
    pub fn counts(&self) -> [u64; 5] {
        [self.h, self.l, self.a, self.b_g1, self.b_g2]
    }

    pub fn points_bytes(&self) -> u64 {
        Self::G1_BYTES * (self.h + self.l + self.a + self.b_g1) + Self::G2_BYTES * self.b_g2
    }

    /// Host bytes of the key's prepared verifying key (`ProvingKey::prepared_verifying_key`):
    /// per public input its table of 255 affine multiples, and its point twice (affine and
    /// projective). 1 MB for a 2KiB PoRep key; 0.6 GB for a 32GiB WindowPoSt partition's 25.8k
    /// inputs.
    pub fn prepared_verifying_key_bytes(&self) -> u64 {
        self.ic * (255 * Self::G1_BYTES + Self::G1_BYTES + 144)
    }

    /// The evaluation domain's size.
    pub fn domain(&self) -> u64 {
        self.h + 1
    }

    /// Variables of the assignment: public inputs and aux.
    pub fn variables(&self) -> u64 {
        self.ic + self.l
    }

    /// Reads the counts of a params file (bellperson's format, see `ProvingKey::open`)
    /// without decoding its points: a few small reads, whatever the key's size.
    pub fn read(file: &mut (impl Read + Seek)) -> io::Result<Self> {
        read_layout(file).map(|(_, sizes, _)| sizes)
    }
}

/// The verifying key of a params file, its queries' sizes and where each query's points start.
fn read_layout(file: &mut (impl Read + Seek)) -> io::Result<(VerifyingKey<Bls12>, QuerySizes, [u64; 5])> {
    let vk = VerifyingKey::<Bls12>::read(&mut *file)?;
    let mut starts = [0; 5];
    let mut counts = [0; 5];
    for (q, name) in QUERY_NAMES.iter().enumerate() {
        let truncated = || io::Error::new(ErrorKind::UnexpectedEof, format!("parameter file is truncated in query {name}"));
        let mut count = [0u8; 4];
        file.read_exact(&mut count).map_err(|e| match e.kind() {
            ErrorKind::UnexpectedEof => truncated(),
            _ => e,
        })?;
        counts[q] = u64::from(u32::from_be_bytes(count));
        starts[q] = file.stream_position()?;
        let end = starts[q] + counts[q] * QuerySizes::point_bytes(q);
        // A seek past the end succeeds: the file must be long enough for the query.
        if file.seek(io::SeekFrom::End(0))? < end {
            return Err(truncated());
        }
        file.seek(io::SeekFrom::Start(end))?;
    }
    let [h, l, a, b_g1, b_g2] = counts;
    let sizes = QuerySizes {
        ic: vk.ic.len() as u64,
        h,
        l,
        a,
        b_g1,
        b_g2,
    };
    Ok((vk, sizes, starts))
}

/// Decodes the uncompressed points `raw` into `out` (as many); Err(i): point i is refused (the
/// first such): a flag bit set in its first byte (blst would take a compressed point's first
/// half, or the point at infinity), a coordinate not below p, off its curve, or (0, ±2) on G1.
/// The device's decode (cuda/key_decode.cuh) refuses the same points.
fn decode_points<P: KeyPoint>(raw: &[u8], out: &mut [P]) -> std::result::Result<(), usize> {
    let point_bytes = P::Uncompressed::default().as_ref().len();
    let mut first_bad = None;
    for (i, (chunk, point)) in raw.chunks_exact(point_bytes).zip(out.iter_mut()).enumerate() {
        let mut repr = P::Uncompressed::default();
        repr.as_mut().copy_from_slice(chunk);
        match Option::<P>::from(P::from_uncompressed_unchecked(&repr)) {
            Some(decoded) if chunk[0] & 0xe0 == 0 => *point = decoded,
            _ => {
                first_bad.get_or_insert(i);
            }
        }
    }
    first_bad.map_or(Ok(()), Err)
}

fn bad_point(i: usize, name: &str) -> io::Error {
    io::Error::new(
        ErrorKind::InvalidData,
        format!("point {i} of query {name} is not an uncompressed point on its curve (a flag bit set, a coordinate not below p, or off the curve)"),
    )
}

/// A key whose points repeat one G1 and one G2 point, with `h` points in H's query and a few in
/// the others (tests of policies over keys: it holds nothing until its points are asked for).
#[cfg(all(test, feature = "internals"))]
pub(crate) fn repeating_test_key(label: &str, h: u64) -> ProvingKey {
    let (g1, g2) = (G1Affine::generator(), G2Affine::generator());
    let vk = VerifyingKey::<Bls12> {
        alpha_g1: g1,
        beta_g1: g1,
        beta_g2: g2,
        gamma_g2: g2,
        delta_g1: g1,
        delta_g2: g2,
        ic: vec![g1; 2],
    };
    let sizes = QuerySizes {
        ic: 2,
        h,
        l: 5,
        a: 4,
        b_g1: 3,
        b_g2: 3,
    };
    ProvingKey::repeating(vk, sizes, vec![g1], vec![g2], label).expect("a repeating key")
}

#[cfg(test)]
mod tests {
    use super::*;
    use blstrs::{G1Projective, G2Projective, Scalar};
    use ff::Field;
    use group::{Curve, Group};
    use rand::SeedableRng;

    /// How many of the pages of `file` in `[start, start + len)` are in the page cache, of how
    /// many (mincore over a mapping of the file).
    fn cached_pages(file: &File, start: u64, len: u64) -> (usize, usize) {
        use std::os::fd::AsRawFd;
        // SAFETY: sysconf reads a constant of the system.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as u64;
        let (first, end) = (start / page * page, (start + len).div_ceil(page) * page);
        let pages = ((end - first) / page) as usize;
        let mut resident = vec![0u8; pages];
        // SAFETY: a read-only shared mapping of an open file's existing bytes, only inspected by
        // mincore (never read through) and unmapped before returning.
        unsafe {
            let map = libc::mmap(
                std::ptr::null_mut(),
                (end - first) as usize,
                libc::PROT_READ,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                first as libc::off_t,
            );
            assert_ne!(map, libc::MAP_FAILED, "mmap: {}", io::Error::last_os_error());
            assert_eq!(
                libc::mincore(map, (end - first) as usize, resident.as_mut_ptr()),
                0,
                "mincore: {}",
                io::Error::last_os_error()
            );
            libc::munmap(map, (end - first) as usize);
        }
        (resident.iter().filter(|&&r| r & 1 == 1).count(), pages)
    }

    #[test]
    fn read_ahead_leaves_the_whole_range_in_the_page_cache() {
        use std::io::Write;
        use std::os::fd::AsRawFd;
        let path = std::env::temp_dir().join(format!("cuzk-read-ahead-{}", std::process::id()));
        let mut out = File::create(&path).unwrap();
        out.write_all(&vec![7u8; 48 << 20]).unwrap();
        out.sync_all().unwrap();
        drop(out);
        let file = File::open(&path).unwrap();
        // Its pages, clean once synced, out of the page cache first.
        // SAFETY: a hint on an open descriptor; no memory is passed.
        unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        let (start, len) = (4u64 << 20, 40u64 << 20);
        let (before, pages) = cached_pages(&file, start, len);
        assert!(
            before < pages / 2,
            "{before} of {pages} pages stayed cached after POSIX_FADV_DONTNEED: this file system cannot show a read-ahead"
        );
        read_into_page_cache(&file, start, len).unwrap();
        assert_eq!(cached_pages(&file, start, len).0, pages, "pages of the range not read ahead");
        // A range past the file's end is an error, not a loop.
        assert!(read_into_page_cache(&file, 40 << 20, 16 << 20).is_err());
        std::fs::remove_file(&path).unwrap();
    }

    fn g1s(n: usize, rng: &mut impl rand::RngCore) -> Vec<G1Affine> {
        (0..n)
            .map(|_| (G1Projective::generator() * Scalar::random(&mut *rng)).to_affine())
            .collect()
    }

    fn g2s(n: usize, rng: &mut impl rand::RngCore) -> Vec<G2Affine> {
        (0..n)
            .map(|_| (G2Projective::generator() * Scalar::random(&mut *rng)).to_affine())
            .collect()
    }

    /// Small parameters in bellperson's format, and where the l query's points start.
    fn written_parameters() -> (Parameters<Bls12>, Vec<u8>, usize) {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let g2 = g2s(3, &mut rng);
        let g1 = g1s(3, &mut rng);
        let vk = VerifyingKey::<Bls12> {
            alpha_g1: g1[0],
            beta_g1: g1[1],
            beta_g2: g2[0],
            gamma_g2: g2[1],
            delta_g1: g1[2],
            delta_g2: g2[2],
            ic: g1s(2, &mut rng),
        };
        let params = Parameters {
            vk,
            h: Arc::new(g1s(7, &mut rng)),
            l: Arc::new(g1s(5, &mut rng)),
            a: Arc::new(g1s(4, &mut rng)),
            b_g1: Arc::new(g1s(3, &mut rng)),
            b_g2: Arc::new(g2s(3, &mut rng)),
        };
        let mut bytes = Vec::new();
        params.write(&mut bytes).unwrap();
        let mut vk_bytes = Vec::new();
        params.vk.write(&mut vk_bytes).unwrap();
        let l_start = vk_bytes.len() + 4 + 7 * 96 + 4;
        (params, bytes, l_start)
    }

    fn pool() -> ThreadPool {
        rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap()
    }

    /// A repeating key's queries are its pools repeated, read at any offset, decoded whole
    /// into host memory on demand and released again; pools its queries need are required.
    #[cfg(feature = "internals")]
    #[test]
    fn a_repeating_key_repeats_its_pools() {
        let (params, _, _) = written_parameters();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(9);
        let (g1, g2) = (g1s(3, &mut rng), g2s(2, &mut rng));
        let sizes = QuerySizes {
            ic: 2,
            h: 7,
            l: 5,
            a: 4,
            b_g1: 3,
            b_g2: 3,
        };
        let key = ProvingKey::repeating(params.vk.clone(), sizes, g1.clone(), g2.clone(), "repeating").unwrap();
        assert_eq!(key.host_bytes(), 0);
        let mut l = vec![G1Affine::identity(); 4];
        key.read_points(1, 2, &mut l).unwrap();
        assert_eq!(l, vec![g1[2], g1[0], g1[1], g1[2]]);
        let points = key.host_points(&pool(), &mut 0).unwrap();
        assert_eq!(*points.h, (0..7).map(|i| g1[i % 3]).collect::<Vec<_>>());
        assert_eq!(*points.b_g2, vec![g2[0], g2[1], g2[0]]);
        assert_eq!(key.release_host_points(), key.points_bytes());
        assert_eq!(key.host_bytes(), 0);
        assert!(ProvingKey::repeating(params.vk.clone(), sizes, g1, Vec::new(), "no G2 pool").is_err());
        assert!(ProvingKey::repeating(params.vk, QuerySizes { ic: 3, ..sizes }, g1s(1, &mut rng), g2, "ic").is_err());
    }

    /// A handle releases an idle copy, never one a call holds or one being decoded (its lock
    /// held), and nothing of a key made in memory or gone.
    #[cfg(feature = "internals")]
    #[test]
    fn a_handle_releases_only_an_idle_copy() {
        let key = repeating_test_key("k", 7);
        let handle = key.host_copy_handle();
        assert!(handle.is_of(&key) && !handle.is_of(&repeating_test_key("other", 7)));
        assert_eq!(handle.release_if_idle(), 0, "no copy held yet");
        let in_use = key.host_points(&pool(), &mut 0).unwrap();
        assert_eq!(handle.release_if_idle(), 0, "a call holds it");
        drop(in_use);
        {
            let _decoding = key.held();
            assert_eq!(handle.release_if_idle(), 0, "being decoded");
        }
        assert_eq!(handle.release_if_idle(), key.points_bytes());
        assert_eq!(key.host_bytes(), 0);
        let (params, _, _) = written_parameters();
        let in_memory = ProvingKey::new(params, "in memory");
        assert_eq!(in_memory.host_copy_handle().release_if_idle(), 0, "its only copy");
        drop(key);
        assert!(!handle.is_alive());
        assert_eq!(handle.release_if_idle(), 0);
    }

    fn key_file(bytes: &[u8], name: &str) -> (std::path::PathBuf, File) {
        let path = std::env::temp_dir().join(format!("cuzk-params-{name}-{}", std::process::id()));
        std::fs::write(&path, bytes).unwrap();
        let file = File::open(&path).unwrap();
        (path, file)
    }

    #[test]
    fn a_key_read_from_a_file_decodes_its_points_when_asked_and_releases_them() {
        let (params, bytes, _) = written_parameters();
        let (path, mut file) = key_file(&bytes, "open");
        // Read to its end first, as a digest check does: opening reads from the start.
        std::io::copy(&mut file, &mut std::io::sink()).unwrap();
        let key = ProvingKey::open(file, "k").unwrap();
        assert!(key.vk == params.vk);
        assert_eq!(key.query_sizes(), QuerySizes::of(&params));
        assert_eq!(key.host_bytes(), 0, "opening reads no point");
        assert!(key.held_host_points().is_none());
        // A part of one query, as a device upload reads it.
        let mut part = vec![G1Affine::identity(); 3];
        key.read_points(2, 1, &mut part).unwrap();
        assert_eq!(part, params.a[1..4]);
        let mut part = vec![G2Affine::identity(); 2];
        key.read_points(4, 1, &mut part).unwrap();
        assert_eq!(part, params.b_g2[1..]);
        // The whole key into host memory, held until released.
        let mut decode_ns = 0;
        let host = key.host_points(&pool(), &mut decode_ns).unwrap();
        assert!(decode_ns > 0);
        assert_eq!(
            (&host.h, &host.l, &host.a, &host.b_g1, &host.b_g2),
            (&params.h, &params.l, &params.a, &params.b_g1, &params.b_g2)
        );
        assert_eq!(key.host_bytes(), key.points_bytes());
        let mut again_ns = 0;
        assert!(Arc::ptr_eq(&host, &key.host_points(&pool(), &mut again_ns).unwrap()));
        assert_eq!(again_ns, 0, "held points are not decoded again");
        assert_eq!(key.release_host_points(), key.points_bytes());
        assert_eq!(key.host_bytes(), 0);
        assert_eq!(
            key.host_points(&pool(), &mut again_ns).unwrap().l,
            params.l,
            "decoded again after the release"
        );
        // A key made in memory has nothing else to read its points from: never released.
        let in_memory = ProvingKey::new(params.clone(), "m");
        assert_eq!(in_memory.release_host_points(), 0);
        assert_eq!(in_memory.host_bytes(), in_memory.points_bytes());
        assert!(in_memory.read_points(0, 0, &mut [G1Affine::identity()]).is_err());
        std::fs::remove_file(path).unwrap();
    }

    #[test]
    fn a_bad_point_is_named_when_read_and_a_changed_file_is_refused() {
        // Point 1 of l the point at infinity (uncompressed: the infinity flag, all else zero).
        let (_, mut bytes, l_start) = written_parameters();
        bytes[l_start + 96..l_start + 2 * 96].fill(0);
        bytes[l_start + 96] = 0x40;
        let (path, file) = key_file(&bytes, "infinity");
        let e = ProvingKey::open(file, "k").unwrap().host_points(&pool(), &mut 0).err().unwrap();
        assert_eq!(
            e.message,
            "corrupt parameter file k: point 1 of query l is not an uncompressed point on its curve (a flag bit set, a coordinate not below p, or off the curve)"
        );
        std::fs::remove_file(path).unwrap();
        // Point 4 of l off its curve: its y changed.
        let (_, mut bytes, l_start) = written_parameters();
        bytes[l_start + 4 * 96 + 95] ^= 1;
        let (path, file) = key_file(&bytes, "bad");
        let key = ProvingKey::open(file, "k").unwrap();
        let mut part = vec![G1Affine::identity(); 3];
        key.read_points(1, 0, &mut part).unwrap();
        let e = key.read_points(1, 2, &mut part).unwrap_err();
        assert_eq!(e.status, Status::ParametersInvalid);
        assert_eq!(
            e.message,
            "corrupt parameter file k: point 4 of query l is not an uncompressed point on its curve (a flag bit set, a coordinate not below p, or off the curve)"
        );
        assert!(key.host_points(&pool(), &mut 0).is_err());
        assert_eq!(key.host_bytes(), 0, "a failed decode holds nothing");
        // Rewritten in place (longer): refused instead of decoded.
        let mut longer = bytes.clone();
        longer.push(0);
        std::fs::write(&path, &longer).unwrap();
        let e = key.read_points(1, 0, &mut part).unwrap_err();
        assert!(e.message.contains("changed on disk"), "{}", e.message);
        // Cut inside b_g2: refused when opened.
        std::fs::write(&path, &bytes[..bytes.len() - 10]).unwrap();
        let e = ProvingKey::open(File::open(&path).unwrap(), "k").err().unwrap();
        assert_eq!(e.to_string(), "parameter file is truncated in query b_g2");
        std::fs::remove_file(path).unwrap();
    }
}
