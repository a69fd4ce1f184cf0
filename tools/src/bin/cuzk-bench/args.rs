//! The command line, parsed once into typed values, and the engine configuration it asks for.

use std::path::PathBuf;

use anyhow::{anyhow, bail, Context, Result};
use cuzk::engine::{EngineConfig, PostKind, SplitPolicy};
use filecoin_proofs_api::RegisteredSealProof;

const USAGE: &str = "usage: cuzk-bench c2 --system cuzk|cuzk-streamed|cuzk-cpu|bellperson --fixture DIR --params DIR [--repeat N]\n       cuzk-bench circuit --system cuzk|cuzk-streamed|cuzk-cpu|bellperson --log-constraints K [--witness porep|uniform|sha] [--setup-key] [--write-key FILE] [--repeat N]\n       cuzk-bench porep-partition --system cuzk|cuzk-streamed|cuzk-cpu --sector-size 2KiB|8MiB|512MiB|32GiB|64GiB [--check-shape] [--compare-spmv] [--compare-prep] [--compare-h-chunks] [--repeat N]\n       cuzk-bench porep-sector --system cuzk|cuzk-cpu --sector-size 2KiB|8MiB|512MiB|32GiB|64GiB [--sectors N,N..] [--partitions P] [--lanes L] [--write-key FILE] [--repeat N]\n       cuzk-bench post --system cuzk|cuzk-cpu --sector-size 2KiB|8MiB|512MiB|32GiB|64GiB [--post window|winning|both] [--partition-sectors N] [--during-batch SECTORS] [--repeat N]\n       cuzk-bench post --system cuzk|cuzk-cpu|bellperson --fixture DIR --params DIR [--repeat N]\n       cuzk-bench update --system cuzk|cuzk-cpu|bellperson --fixture DIR --params DIR [--repeat N]\n       cuzk-bench update --system cuzk|cuzk-cpu --sector-size 2KiB|8MiB|512MiB|32GiB|64GiB [--partitions P] [--repeat N]\n       cuzk-bench soak --system cuzk|cuzk-cpu --fixture DIR --params DIR --repeat CALLS\n       cuzk-bench pressure --system cuzk --fixture DIR --params DIR --hog PROGRAM [--repeat CALLS]\n       cuzk-bench msm --system cuzk --log-points K,K.. [--curve g1|g2|both] [--digit-bits C,C..] [--repeat N]\n       cuzk systems also take --malloc-arena-max N (glibc malloc arenas; default: glibc's own)";

/// The entry of `choices` (names and what they stand for) named `text`.
fn choose<T: Copy>(what: &str, text: &str, choices: &[(&'static str, T)]) -> Result<T> {
    match choices.iter().find(|(name, _)| *name == text) {
        Some(&(_, value)) => Ok(value),
        None => {
            let names: Vec<&str> = choices.iter().map(|(name, _)| *name).collect();
            bail!("unknown {what} {text:?} (one of: {})", names.join(", "))
        }
    }
}

/// A choice named on the command line, by the name the records and labels carry.
pub trait Named: Copy + PartialEq + 'static {
    /// The flag that names it.
    const FLAG: &'static str;
    const NAMES: &'static [(&'static str, Self)];

    fn parse(text: &str) -> Result<Self> {
        choose(Self::FLAG, text, Self::NAMES)
    }

    fn name(self) -> &'static str {
        Self::NAMES.iter().find(|(_, value)| *value == self).map_or("", |(name, _)| name)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workload {
    C2,
    Circuit,
    PorepPartition,
    PorepSector,
    Post,
    Update,
    Keys,
    Soak,
    Pressure,
    Msm,
}

impl Named for Workload {
    const FLAG: &'static str = "workload";
    const NAMES: &'static [(&'static str, Self)] = &[
        ("c2", Workload::C2),
        ("circuit", Workload::Circuit),
        ("porep-partition", Workload::PorepPartition),
        ("porep-sector", Workload::PorepSector),
        ("post", Workload::Post),
        ("update", Workload::Update),
        ("keys", Workload::Keys),
        ("soak", Workload::Soak),
        ("pressure", Workload::Pressure),
        ("msm", Workload::Msm),
    ];
}

/// What proves (`--system`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum System {
    /// The engine: the GPU when one is usable (else the CPU), the key resident in device memory.
    Cuzk,
    /// The engine on the GPU with a key budget of one byte: the key's points streamed from
    /// host memory on every call.
    CuzkStreamed,
    /// The engine's CPU backend.
    CuzkCpu,
    /// bellperson's CPU prover (filecoin-proofs-api's `seal_commit_phase2` for c2).
    Bellperson,
}

impl Named for System {
    const FLAG: &'static str = "--system";
    const NAMES: &'static [(&'static str, Self)] = &[
        ("cuzk", System::Cuzk),
        ("cuzk-streamed", System::CuzkStreamed),
        ("cuzk-cpu", System::CuzkCpu),
        ("bellperson", System::Bellperson),
    ];
}

impl System {
    /// Proves with cuzk's engine.
    pub fn is_cuzk(self) -> bool {
        self != System::Bellperson
    }

    /// Proves with cuzk's engine on the GPU when one is usable.
    pub fn prefers_gpu(self) -> bool {
        matches!(self, System::Cuzk | System::CuzkStreamed)
    }
}

/// The circuit workload's circuit (`--witness`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Witness {
    /// A random circuit whose witness is mostly 0/1, as PoRep's is.
    Porep,
    /// A random circuit with a uniform witness.
    Uniform,
    /// The SHA-256 chain that the peers under bench/peers/ prove too.
    Sha,
}

impl Named for Witness {
    const FLAG: &'static str = "--witness";
    const NAMES: &'static [(&'static str, Self)] = &[("porep", Witness::Porep), ("uniform", Witness::Uniform), ("sha", Witness::Sha)];
}

/// The msm workload's curves (`--curve`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MsmCurve {
    G1,
    G2,
}

/// A PoRep sector size (`--sector-size`): its proof kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SectorSize(pub RegisteredSealProof);

impl Named for SectorSize {
    const FLAG: &'static str = "--sector-size";
    const NAMES: &'static [(&'static str, Self)] = &[
        ("2KiB", SectorSize(RegisteredSealProof::StackedDrg2KiBV1_1)),
        ("8MiB", SectorSize(RegisteredSealProof::StackedDrg8MiBV1_1)),
        ("512MiB", SectorSize(RegisteredSealProof::StackedDrg512MiBV1_1)),
        ("32GiB", SectorSize(RegisteredSealProof::StackedDrg32GiBV1_1)),
        ("64GiB", SectorSize(RegisteredSealProof::StackedDrg64GiBV1_1)),
    ];
}

impl SectorSize {
    /// The size in workload labels: "2k", "32g".
    pub fn short(self) -> String {
        self.name().to_lowercase().trim_end_matches("ib").to_string()
    }
}

pub struct Args {
    pub workload: Workload,
    pub system: System,
    pub fixture: Option<PathBuf>,
    pub params: Option<PathBuf>,
    pub log_constraints: u32,
    pub witness: Witness,
    /// circuit: the key written there (bellperson's format). porep-sector: the synthetic key
    /// written there unless the file exists, and proved with as read from it.
    pub write_key: Option<PathBuf>,
    pub repeat: usize,
    pub sector_size: SectorSize,
    pub check_shape: bool,
    /// Prove with a key from a random setup (`--setup-key`, `cuzk_tools::setup`) and verify
    /// every proof.
    pub setup_key: bool,
    /// porep-partition: alternate runs with a, b, c on the device and on the host.
    pub compare_spmv: bool,
    /// porep-partition: odd runs find the scalars' classes on the host (the GPU's even runs
    /// find them on the device).
    pub compare_prep: bool,
    /// porep-partition: every run proves its circuit again with H's MSM whole (one chunk), and
    /// the two proofs must be the same bytes.
    pub compare_h_chunks: bool,
    /// porep-sector: sectors per call, one call per entry and run (`--sectors 1,2,4`).
    pub sectors: Vec<usize>,
    /// porep-sector, update (made-up): partitions per sector (default: the proof kind's).
    pub partitions: Option<usize>,
    /// porep-sector: the engine's proving lanes (`EngineConfig::proving_lanes`; 0: automatic).
    pub lanes: usize,
    /// post: which PoSts (`--post window|winning|both`).
    pub post_kinds: Vec<PostKind>,
    /// post: sectors in the WindowPoSt partition (default: a full partition).
    pub partition_sectors: Option<usize>,
    /// post: WinningPoSts during a call of this many made-up PoRep sectors (0: none).
    pub during_batch: usize,
    /// pressure: the program that holds the device's memory (tools/cuda/gpu_hog.cu).
    pub hog: Option<PathBuf>,
    /// cuzk systems: glibc malloc arenas (`EngineConfig::malloc_arena_max`; 0: glibc's own).
    pub malloc_arena_max: u32,
    /// msm: sizes, as log2 of the points (`--log-points 16,20,27`).
    pub log_points: Vec<u32>,
    /// msm: curves (`--curve g1|g2|both`).
    pub curves: Vec<MsmCurve>,
    /// msm: digit widths to try besides cuzk's own choice (`--digit-bits 16,20`).
    pub digit_bits: Vec<u32>,
}

impl Args {
    /// The command line; an error ends with the usage.
    pub fn parse() -> Result<Args> {
        Self::parse_argv().map_err(|e| anyhow!("{e:#}\n{USAGE}"))
    }

    fn parse_argv() -> Result<Args> {
        let mut argv = std::env::args().skip(1);
        let workload = match argv.next() {
            Some(name) => Workload::parse(&name)?,
            None => bail!("no workload"),
        };
        let mut system = None;
        let mut args = Args {
            workload,
            system: System::Cuzk,
            fixture: None,
            params: None,
            log_constraints: 20,
            witness: Witness::Porep,
            write_key: None,
            repeat: 1,
            sector_size: SectorSize(RegisteredSealProof::StackedDrg32GiBV1_1),
            check_shape: false,
            setup_key: false,
            compare_spmv: false,
            compare_prep: false,
            compare_h_chunks: false,
            sectors: vec![1],
            partitions: None,
            lanes: 0,
            post_kinds: vec![PostKind::Window, PostKind::Winning],
            partition_sectors: None,
            during_batch: 0,
            hog: None,
            malloc_arena_max: 0,
            log_points: Vec::new(),
            curves: vec![MsmCurve::G1],
            digit_bits: Vec::new(),
        };
        while let Some(flag) = argv.next() {
            match flag.as_str() {
                "--check-shape" => args.check_shape = true,
                "--setup-key" => args.setup_key = true,
                "--compare-spmv" => args.compare_spmv = true,
                "--compare-prep" => args.compare_prep = true,
                "--compare-h-chunks" => args.compare_h_chunks = true,
                _ => {
                    let value = argv.next().with_context(|| format!("{flag} needs a value"))?;
                    match flag.as_str() {
                        "--system" => system = Some(System::parse(&value)?),
                        "--fixture" => args.fixture = Some(PathBuf::from(value)),
                        "--params" => args.params = Some(PathBuf::from(value)),
                        "--log-constraints" => args.log_constraints = value.parse().context("--log-constraints")?,
                        "--witness" => args.witness = Witness::parse(&value)?,
                        "--write-key" => args.write_key = Some(PathBuf::from(value)),
                        "--repeat" => args.repeat = value.parse().context("--repeat")?,
                        "--sector-size" => args.sector_size = SectorSize::parse(&value)?,
                        "--sectors" => args.sectors = value.split(',').map(|n| n.parse().context("--sectors")).collect::<Result<_>>()?,
                        "--partitions" => args.partitions = Some(value.parse().context("--partitions")?),
                        "--lanes" => args.lanes = value.parse().context("--lanes")?,
                        "--post" => {
                            args.post_kinds = match value.as_str() {
                                "window" => vec![PostKind::Window],
                                "winning" => vec![PostKind::Winning],
                                "both" => vec![PostKind::Window, PostKind::Winning],
                                other => bail!("unknown --post {other:?} (window, winning, both)"),
                            }
                        }
                        "--partition-sectors" => args.partition_sectors = Some(value.parse().context("--partition-sectors")?),
                        "--during-batch" => args.during_batch = value.parse().context("--during-batch")?,
                        "--hog" => args.hog = Some(PathBuf::from(value)),
                        "--malloc-arena-max" => args.malloc_arena_max = value.parse().context("--malloc-arena-max")?,
                        "--log-points" => args.log_points = numbers(&value, "--log-points", 1..=30)?,
                        "--curve" => {
                            args.curves = match value.as_str() {
                                "g1" => vec![MsmCurve::G1],
                                "g2" => vec![MsmCurve::G2],
                                "both" => vec![MsmCurve::G1, MsmCurve::G2],
                                other => bail!("unknown --curve {other:?} (g1, g2, both)"),
                            }
                        }
                        "--digit-bits" => args.digit_bits = numbers(&value, "--digit-bits", 8..=22)?,
                        _ => bail!("unknown flag {flag}"),
                    }
                }
            }
        }
        if args.setup_key && args.log_constraints > 24 {
            bail!("--setup-key: a random setup above 2^24 constraints takes too long; use the synthetic key");
        }
        args.system = system.context("--system is required")?;
        let real_post = matches!(args.workload, Workload::Post | Workload::Update) && args.fixture.is_some();
        if matches!(
            args.workload,
            Workload::PorepPartition
                | Workload::PorepSector
                | Workload::Post
                | Workload::Update
                | Workload::Keys
                | Workload::Soak
                | Workload::Pressure
        ) && !args.system.is_cuzk()
            && !real_post
        {
            bail!("--system {} cannot run {}", args.system.name(), args.workload.name());
        }
        if args.workload == Workload::Msm && args.system != System::Cuzk {
            bail!("--system {} cannot run msm (cuzk's MSM and sppark's, on the GPU)", args.system.name());
        }
        Ok(args)
    }

    /// The engine configuration of `--system`, with the environment's overrides applied
    /// (`EngineConfig::with_environment`, as the engine applies them when it starts): what it
    /// says is what the engine runs with, and the bench asks it for the records' system names
    /// and for the circuit workload's own synthesis path.
    pub fn engine_config(&self) -> Result<EngineConfig> {
        let config = EngineConfig {
            param_cache_dir: self.params.clone(),
            cpu_only: self.system == System::CuzkCpu,
            gpu_key_memory_budget: if self.system == System::CuzkStreamed { 1 } else { 0 },
            proving_lanes: self.lanes,
            malloc_arena_max: self.malloc_arena_max,
            ..Default::default()
        };
        Ok(config.with_environment()?)
    }
}

/// A comma list of numbers, each in `range` (`flag` names it in errors).
fn numbers(value: &str, flag: &str, range: std::ops::RangeInclusive<u32>) -> Result<Vec<u32>> {
    value
        .split(',')
        .map(|n| {
            let n: u32 = n.parse().with_context(|| format!("{flag}: {n:?} is not a number"))?;
            if !range.contains(&n) {
                bail!("{flag}: {n} is not in {}..={}", range.start(), range.end());
            }
            Ok(n)
        })
        .collect()
}

/// CUZK_GPU_SPLIT's values.
const SPLIT_POLICIES: [(&str, SplitPolicy); 3] = [
    ("auto", SplitPolicy::CostModel),
    ("always", SplitPolicy::Always),
    ("never", SplitPolicy::Never),
];

/// The name of a 0/1 split the configuration forces ("always", "never"); None for the GPU's
/// own choice by its cost model.
pub fn forced_split(policy: SplitPolicy) -> Option<&'static str> {
    match policy {
        SplitPolicy::CostModel => None,
        forced => SPLIT_POLICIES.iter().find(|(_, p)| *p == forced).map(|(name, _)| *name),
    }
}
