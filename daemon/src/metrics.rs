//! GetMetrics' Prometheus text: jobs by kind and how they ended, histograms of the engine's
//! phases (cuzk::timings), jobs pending and running, and from the engine's status the devices'
//! busy time, memory and health, and host memory held.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;
use std::time::Duration;

use cuzk::engine::{DeviceHealth, EngineStatus};
use cuzk::timings::Timings;

use crate::jobs::{End, Snapshot};
use crate::proto::ProofKind;

/// Upper bounds of the phase histograms' buckets, in seconds (a 2KiB phase to a 32GiB C2).
const BUCKETS: [f64; 14] = [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0];

#[derive(Default)]
struct Histogram {
    /// Observations at or below each bound of `BUCKETS`.
    counts: [u64; BUCKETS.len()],
    count: u64,
    sum: f64,
}

impl Histogram {
    fn observe(&mut self, seconds: f64) {
        for (bound, count) in BUCKETS.iter().zip(&mut self.counts) {
            if seconds <= *bound {
                *count += 1;
            }
        }
        self.count += 1;
        self.sum += seconds;
    }
}

#[derive(Default)]
struct Recorded {
    /// Jobs ended, by kind and end.
    jobs: BTreeMap<(&'static str, &'static str), u64>,
    /// Phase durations of completed jobs, by kind and phase.
    phases: BTreeMap<(&'static str, &'static str), Histogram>,
}

/// What the daemon counts as jobs end.
#[derive(Default)]
pub struct Metrics {
    recorded: Mutex<Recorded>,
}

impl Metrics {
    pub fn record(&self, kind: ProofKind, end: End, timings: &Timings) {
        let mut recorded = self.recorded.lock().unwrap_or_else(|p| p.into_inner());
        *recorded.jobs.entry((kind.as_str_name(), end.label())).or_default() += 1;
        if end == End::Completed {
            for (phase, ns) in timings.phases() {
                if ns > 0 {
                    recorded.phases.entry((kind.as_str_name(), phase)).or_default().observe(ns as f64 / 1e9);
                }
            }
        }
    }

    /// Jobs ended so far as `end`, all kinds.
    pub fn total(&self, end: End) -> u64 {
        let recorded = self.recorded.lock().unwrap_or_else(|p| p.into_inner());
        recorded.jobs.iter().filter(|((_, e), _)| *e == end.label()).map(|(_, n)| n).sum()
    }

    /// The Prometheus text exposition of the counters, with the jobs of `snapshot` and the
    /// engine's `status`.
    pub fn render(&self, snapshot: &Snapshot, status: &EngineStatus, uptime: Duration) -> String {
        let recorded = self.recorded.lock().unwrap_or_else(|p| p.into_inner());
        let mut out = String::new();

        let name = header(&mut out, "cuzk_proofs_total", "counter", "Jobs ended, by proof kind and status.");
        for ((kind, end), n) in &recorded.jobs {
            let _ = writeln!(out, "{name}{{kind=\"{kind}\",status=\"{end}\"}} {n}");
        }

        let name = header(
            &mut out,
            "cuzk_phase_seconds",
            "histogram",
            "Phase durations of completed jobs (cuzk timings), by proof kind and phase.",
        );
        for ((kind, phase), h) in &recorded.phases {
            let labels = format!("kind=\"{kind}\",phase=\"{phase}\"");
            for (bound, count) in BUCKETS.iter().zip(h.counts) {
                let _ = writeln!(out, "{name}_bucket{{{labels},le=\"{bound}\"}} {count}");
            }
            let _ = writeln!(out, "{name}_bucket{{{labels},le=\"+Inf\"}} {}", h.count);
            let _ = writeln!(out, "{name}_sum{{{labels}}} {}", h.sum);
            let _ = writeln!(out, "{name}_count{{{labels}}} {}", h.count);
        }

        for (name, help, running) in [
            ("cuzk_jobs_pending", "Jobs waiting at the sealing gate, by proof kind.", false),
            ("cuzk_jobs_running", "Jobs proving now, by proof kind.", true),
        ] {
            let name = header(&mut out, name, "gauge", help);
            for kind in [
                ProofKind::PorepSealCommit,
                ProofKind::SnapDealsUpdate,
                ProofKind::WindowPostPartition,
                ProofKind::WinningPost,
            ] {
                let counts = snapshot.queues.get(&kind).copied().unwrap_or_default();
                let value = if running { counts.running } else { counts.pending };
                let _ = writeln!(out, "{name}{{kind=\"{}\"}} {value}", kind.as_str_name());
            }
        }

        let gauges: [(&str, &str, u64); 4] = [
            ("cuzk_uptime_seconds", "Seconds since the daemon started.", uptime.as_secs()),
            (
                "cuzk_host_key_bytes",
                "Host memory of the proving keys the engine holds.",
                status.host_keys.iter().map(|k| k.bytes).sum(),
            ),
            (
                "cuzk_pipeline_memory_bytes",
                "Host memory of synthesized partitions waiting for or in proving.",
                status.pipeline_memory_in_use,
            ),
            (
                "cuzk_pipeline_memory_budget_bytes",
                "The budget bounding cuzk_pipeline_memory_bytes.",
                status.pipeline_memory_budget,
            ),
        ];
        for (name, help, value) in gauges {
            let name = header(&mut out, name, "gauge", help);
            let _ = writeln!(out, "{name} {value}");
        }

        type DeviceValue = fn(&cuzk::engine::DeviceStatus) -> f64;
        let per_device: [(&str, &str, &str, DeviceValue); 6] = [
            (
                "cuzk_gpu_busy_seconds_total",
                "counter",
                "Time calls have held the GPU (its turn).",
                |d| d.busy_ns as f64 / 1e9,
            ),
            ("cuzk_gpu_memory_total_bytes", "gauge", "The GPU's memory.", |d| d.memory_total as f64),
            ("cuzk_gpu_memory_free_bytes", "gauge", "The GPU's free memory.", |d| d.memory_free as f64),
            (
                "cuzk_gpu_memory_cuzk_bytes",
                "gauge",
                "GPU memory of resident keys, matrices and buffers.",
                |d| d.memory_used_by_cuzk as f64,
            ),
            (
                "cuzk_gpu_pinned_bytes",
                "gauge",
                "Pinned host staging memory allocated for the GPU.",
                |d| d.pinned_pool.allocated_bytes as f64,
            ),
            ("cuzk_gpu_faults_total", "counter", "Sticky CUDA faults seen on the GPU.", |d| {
                d.faults as f64
            }),
        ];
        for (name, kind, help, value) in per_device {
            let name = header(&mut out, name, kind, help);
            for device in &status.devices {
                let _ = writeln!(out, "{name}{{gpu=\"{}\"}} {}", device.ordinal, value(device));
            }
        }
        let name = header(
            &mut out,
            "cuzk_gpu_healthy",
            "gauge",
            "1 while the GPU takes calls, 0 once it is quarantined.",
        );
        for device in &status.devices {
            let _ = writeln!(
                out,
                "{name}{{gpu=\"{}\"}} {}",
                device.ordinal,
                u8::from(device.health == DeviceHealth::Healthy)
            );
        }
        out
    }
}

/// Writes the HELP and TYPE lines of metric `name`; returns the name.
fn header(out: &mut String, name: &'static str, kind: &str, help: &str) -> &'static str {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
    name
}
