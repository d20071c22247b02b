//! `cargo xtask devices`: the emulated disks checked in a guest against
//! their models. The guest runs `ironlift_devmodel::jobs::JOBS` with fio
//! under `none` (`qemu/guest/devices.sh`); the host predicts each job for
//! the export's size with the same model (by default every export is the
//! model's whole capacity, so the predictions are the calibration
//! figures), and the table gives target, model, guest, their ratio, and
//! whether the guest is within the models' calibration tolerance, beside
//! each server's lag.
//!
//! Each job also runs on the `null` model behind the same path (the
//! `nbd-null-*` device of the disk's bus): what the guest gets with no
//! device time at all. A job whose model is faster than that less the
//! tolerance is beyond what the guest's path carries, and is shown but
//! not judged. The run fails on a job that failed, a judged job off its
//! model, or a device with no judged job ([`judge`]): a device the guest
//! cannot show has not been checked, whatever its rows say.

use crate::devices::{self, Device, ModelDisk};
use crate::flags::DevicesCmd;
use crate::suite::fio::parse_fio;
use crate::util::{self, note, step};
use crate::{blkserve, guest, qemu};
use anyhow::{bail, Context, Result};
use ironlift_devmodel::jobs::{self, Job, Metric, Rw, JOBS, RAMP, RUNTIME, TARGETS, TOLERANCE};
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;
use std::time::Duration;

/// Requests QEMU's NBD client keeps in flight per connection: a deeper
/// guest queue reaches the model at this depth.
pub const NBD_IN_FLIGHT: u32 = 16;

/// The jobs run on a model: Androbench's on the eMMC, the whole-device
/// ones on the others.
pub fn jobs_for(model: &str) -> Vec<&'static Job> {
    JOBS.iter()
        .filter(|j| (model == "emmc") == j.name.starts_with("androbench"))
        .collect()
}

/// fio's arguments for `job` (the device comes with `--filename`):
/// direct I/O, the job's pattern, size and depth, `RAMP` then `RUNTIME`
/// as the model's measurement, random offsets drawn with replacement as
/// the model draws them.
pub fn fio_args(job: &Job) -> String {
    let mut a = format!(
        "--name={} --direct=1 --ioengine=libaio --rw={} --bs={} --iodepth={} \
         --numjobs={} --group_reporting --time_based --ramp_time={}ms --runtime={}ms \
         --norandommap --randrepeat=0",
        job.name,
        job.rw.fio(),
        job.bs,
        job.iodepth,
        job.numjobs,
        RAMP / 1_000_000,
        RUNTIME / 1_000_000
    );
    if job.region > 0 {
        a.push_str(&format!(" --size={}", job.region));
    }
    a
}

/// The figure a job is judged by: MB/s for sequential jobs, IOPS for
/// random ones.
pub fn metric(job: &Job) -> Metric {
    match job.rw {
        Rw::Read | Rw::Write => Metric::MbS,
        Rw::RandRead | Rw::RandWrite => Metric::Iops,
    }
}

/// The model's figure for `job` on an export of `m`: over the export's
/// size (a whole-device job) and at most [`NBD_IN_FLIGHT`] deep.
pub fn predict(m: &ModelDisk, job: &Job) -> Option<f64> {
    let mut dev = ironlift_devmodel::by_name(&m.device, m.ncq.map(|n| n as usize))?;
    let seen = Job {
        iodepth: job.iodepth.min(NBD_IN_FLIGHT),
        ..*job
    };
    let region = (job.region == 0).then_some(m.size_mb << 20);
    Some(jobs::run(dev.as_mut(), &seen, region).get(metric(job)))
}

/// One line of the table.
#[derive(Debug, Clone)]
pub struct Row {
    pub device: String,
    pub job: String,
    pub metric: Metric,
    /// The calibration target, where the export is the whole device and
    /// the model has one for the job.
    pub target: Option<f64>,
    pub model: f64,
    /// The guest's figure, or why there is none.
    pub guest: Result<f64, String>,
    /// The guest's figure for the job on the path alone (the `null` model
    /// behind the same attachment), or why there is none.
    pub path: Result<f64, String>,
}

/// How a row comes out.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// The guest measured the model within the tolerance.
    Within,
    /// The guest is off the model by more than the tolerance.
    Outside,
    /// The model is faster than the guest's path less the tolerance: the
    /// guest cannot show it, so the row is not judged.
    BeyondPath,
    /// The guest's job (or its path job) failed.
    Failed(String),
}

impl Row {
    /// Guest over model.
    pub fn ratio(&self) -> Option<f64> {
        self.guest.as_ref().ok().map(|g| g / self.model)
    }

    /// The row's verdict.
    pub fn verdict(&self) -> Verdict {
        let path = match &self.path {
            Ok(p) => *p,
            Err(e) => return Verdict::Failed(format!("path job: {e}")),
        };
        let guest = match &self.guest {
            Ok(g) => *g,
            Err(e) => return Verdict::Failed(e.clone()),
        };
        if self.model > path * (1.0 - TOLERANCE) {
            Verdict::BeyondPath
        } else if jobs::within(guest, self.model) {
            Verdict::Within
        } else {
            Verdict::Outside
        }
    }
}

/// A figure with the precision tables give it.
fn fig(x: f64) -> String {
    if x >= 1000.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.1}")
    }
}

/// The table, markdown.
pub fn table_markdown(rows: &[Row]) -> String {
    let mut s = format!(
        "| device | job | figure | target | model | path alone | guest | guest / model | \
         within ±{:.0} % |\n|---|---|---|---:|---:|---:|---:|---:|---|\n",
        TOLERANCE * 100.0
    );
    for r in rows {
        let unit = match r.metric {
            Metric::MbS => "MB/s",
            Metric::Iops => "IOPS",
        };
        let target = r.target.map(fig).unwrap_or_else(|| "-".into());
        let path = r
            .path
            .as_ref()
            .map(|&p| fig(p))
            .unwrap_or_else(|_| "-".into());
        let guest = r
            .guest
            .as_ref()
            .map(|&g| fig(g))
            .unwrap_or_else(|_| "-".into());
        let ratio = r
            .ratio()
            .map(|x| format!("{x:.2}"))
            .unwrap_or_else(|| "-".into());
        let verdict = match r.verdict() {
            Verdict::Within => "yes".to_string(),
            Verdict::Outside => "no".to_string(),
            Verdict::BeyondPath => "not judged: model beyond the path".to_string(),
            Verdict::Failed(e) => format!("failed: {e}"),
        };
        s.push_str(&format!(
            "| {} | {} | {unit} | {target} | {} | {path} | {guest} | {ratio} | {verdict} |\n",
            r.device,
            r.job,
            fig(r.model)
        ));
    }
    s
}

/// The `null` device on `d`'s path: virtio-blk's or AHCI's.
pub fn path_device(d: &Device) -> &'static str {
    let virtio = d
        .model
        .iter()
        .flat_map(|m| &m.devices)
        .any(|x| x.starts_with("virtio-blk"));
    if virtio {
        "nbd-null-virtio"
    } else {
        "nbd-null-ahci"
    }
}

/// `d` with its export (each of its exports) the model's whole capacity.
pub fn whole(d: &Device) -> Device {
    let mut d = d.clone();
    if let Some(m) = d.model.as_mut() {
        if let Some(cap_mb) = m.capacity_mb() {
            m.size_mb = cap_mb;
        }
    }
    d
}

/// The target for `job` on model `m` if its export is the whole device.
fn target(m: &ModelDisk, job: &Job) -> Option<f64> {
    let cap_mb = m.capacity_mb()?;
    // A job over a region of its own (Androbench's) sees the same device
    // whatever the export's size.
    (m.size_mb == cap_mb || job.region > 0)
        .then(|| {
            TARGETS
                .iter()
                .find(|t| t.device == m.device && t.job == job.name)
                .map(|t| t.value)
        })
        .flatten()
}

/// A row to fill: the run id of its job on the disk, of its job on the
/// path alone, and the row.
pub type Planned = (String, String, Row);

/// The plan for the guest (lib.sh `run_plan`): one line per device and
/// job, `id, disk, none, job, fio arguments`, then one per path device and
/// job; with the rows they fill. `all` holds the path devices.
pub fn plan(
    models: &[(String, Device)],
    all: &BTreeMap<String, Device>,
) -> Result<(String, Vec<Planned>)> {
    let mut tsv = String::new();
    let mut path_lines = BTreeMap::new();
    let mut rows = Vec::new();
    for (name, d) in models {
        let Some(m) = &d.model else { continue };
        let path_name = path_device(d);
        let path = all.get(path_name).with_context(|| {
            format!("configs/devices/guest.toml has no {path_name} (the path alone)")
        })?;
        for job in jobs_for(&m.device) {
            let Some(model) = predict(m, job) else {
                continue;
            };
            let id = format!("{name}.{}", job.name);
            let path_id = format!("{path_name}.{}", job.name);
            let line = |id: &str, disk: &str| {
                format!("{id}\t{disk}\tnone\t{}\t{}\n", job.name, fio_args(job))
            };
            tsv.push_str(&line(&id, &d.path));
            path_lines
                .entry(path_id.clone())
                .or_insert_with(|| line(&path_id, &path.path));
            let row = Row {
                device: name.clone(),
                job: job.name.to_string(),
                metric: metric(job),
                target: target(m, job),
                model,
                guest: Err("not run".into()),
                path: Err("not run".into()),
            };
            rows.push((id, path_id, row));
        }
    }
    for l in path_lines.values() {
        tsv.push_str(l);
    }
    Ok((tsv, rows))
}

/// The guest's figure of run `id`, from `runs/<id>.json` or `.err`.
fn measured(runs: &Path, id: &str, m: Metric) -> Result<f64, String> {
    if let Ok(e) = fs::read_to_string(runs.join(format!("{id}.err"))) {
        return Err(e.trim().to_string());
    }
    let text = fs::read_to_string(runs.join(format!("{id}.json")))
        .map_err(|_| "no result (the guest did not get to it)".to_string())?;
    parse_fio(&text)
        .map(|f| match m {
            Metric::MbS => f.mb_s,
            Metric::Iops => f.iops,
        })
        .map_err(|e| format!("{e:#}"))
}

/// Whether `d` is one of the path devices (the `null` model).
fn is_path(d: &Device) -> bool {
    d.model.as_ref().is_some_and(|m| m.device == "null")
}

/// The devices `--devices` names, or every emulated one but the path
/// devices; each must be emulated.
fn selected(o: &DevicesCmd, all: &BTreeMap<String, Device>) -> Result<Vec<(String, Device)>> {
    let names: Vec<String> = match &o.devices {
        Some(d) => d.clone(),
        None => all
            .iter()
            .filter(|(_, d)| d.model.is_some() && !is_path(d))
            .map(|(n, _)| n.clone())
            .collect(),
    };
    let used = devices::pick(all, names.iter().map(String::as_str))?;
    if let Some((n, _)) = used.iter().find(|(_, d)| d.model.is_none()) {
        bail!(
            "device {n:?} is not an emulated disk (no model table in configs/devices/guest.toml)"
        );
    }
    Ok(used)
}

/// `cargo xtask devices`.
pub fn run(o: &DevicesCmd) -> Result<()> {
    let root = util::repo_root();
    let all = devices::load(&root)?;
    let mut used = selected(o, &all)?;
    if !o.configured_size {
        used = used.iter().map(|(n, d)| (n.clone(), whole(d))).collect();
    }
    let ran: Vec<String> = used.iter().map(|(n, _)| n.clone()).collect();
    let (tsv, mut rows) = plan(&used, &all)?;
    let names = ran.join(", ");
    // The path devices of the disks' buses, attached beside the disks.
    let paths: BTreeSet<&str> = used.iter().map(|(_, d)| path_device(d)).collect();
    for p in paths {
        if !used.iter().any(|(n, _)| n == p) {
            used.push((p.to_string(), all[p].clone()));
        }
    }
    let p = guest::prepare(&o.k, &o.g)?;
    let out = match &o.out {
        Some(d) => d.clone(),
        None => root
            .join("results")
            .join(format!("{}-devices", guest::now("+%Y-%m-%dT%H%M"))),
    };
    let _ = fs::remove_dir_all(out.join("runs"));
    fs::create_dir_all(out.join("runs"))?;
    fs::write(out.join("plan.tsv"), &tsv)?;
    fs::write(
        out.join("job.env"),
        format!(
            "{}SUITE_KIND=devices\n",
            p.job_env(used.iter().map(|(_, d)| d), &[])?
        ),
    )?;
    let servers = blkserve::start_for(&o.k, &out, used.iter().map(|(n, d)| (n, d)))?;
    let secs = (RAMP + RUNTIME) / 1_000_000_000;
    let n = tsv.lines().count() as u64;
    let timeout = 300 + n * secs * 4;
    step(&format!(
        "Emulated disks against their models: {} jobs on {names} and {} on the path alone, \
         ~{} under {}",
        rows.len(),
        n - rows.len() as u64,
        util::human_secs(n * (secs + 2)),
        p.accel.name().to_uppercase()
    ));
    note(&format!("results: {}", out.display()));
    let boot = qemu::Boot {
        qemu_extra: servers.as_ref().map(|s| s.qemu_args()).unwrap_or_default(),
        ..p.boot(&o.g, "bench", &out, Duration::from_secs(timeout))
    };
    let r = boot.run()?;
    let lags = servers.map(|s| s.stop()).transpose()?.unwrap_or_default();
    r.check_setup(&boot.console_log)?;
    for (id, path_id, row) in &mut rows {
        row.guest = measured(&out.join("runs"), id, row.metric);
        row.path = measured(&out.join("runs"), path_id, row.metric);
    }
    let rows: Vec<Row> = rows.into_iter().map(|(_, _, r)| r).collect();
    write_table(&out, &ran, &used, &rows, &lags)?;
    note(&format!("table: {}", out.join("devices.md").display()));
    if r.timed_out {
        bail!(
            "the guest did not finish within {timeout}s; console log: {}",
            boot.console_log.display()
        );
    }
    judge(&ran, &rows)
}

/// What one device's rows come to: its jobs by verdict.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DeviceVerdict {
    pub device: String,
    /// Judged, and within the tolerance.
    pub within: Vec<String>,
    /// Judged, and off the model by more than the tolerance.
    pub outside: Vec<String>,
    /// Shown but not judged: the model is beyond the path.
    pub not_judged: Vec<String>,
    /// Failed in the guest (the job or its path job).
    pub failed: Vec<String>,
}

impl DeviceVerdict {
    /// How many of the device's jobs were judged.
    pub fn judged(&self) -> usize {
        self.within.len() + self.outside.len()
    }

    /// The device's conclusion, from its judged jobs only.
    pub fn conclusion(&self) -> String {
        if !self.failed.is_empty() {
            format!("fails: {} job(s) failed", self.failed.len())
        } else if self.judged() == 0 {
            "fails: no job judged, nothing checked".to_string()
        } else if !self.outside.is_empty() {
            format!("fails: off the model on {}", self.outside.join(", "))
        } else {
            format!("holds: every judged job within ±{:.0} %", TOLERANCE * 100.0)
        }
    }
}

/// Each device the run ran (`devices`, in order, then any other device
/// `rows` name) with its rows' verdicts. A device with no row is there
/// with nothing judged.
pub fn by_device(devices: &[String], rows: &[Row]) -> Vec<DeviceVerdict> {
    let mut out: Vec<DeviceVerdict> = devices
        .iter()
        .map(|d| DeviceVerdict {
            device: d.clone(),
            ..Default::default()
        })
        .collect();
    for r in rows {
        let i = match out.iter().position(|v| v.device == r.device) {
            Some(i) => i,
            None => {
                out.push(DeviceVerdict {
                    device: r.device.clone(),
                    ..Default::default()
                });
                out.len() - 1
            }
        };
        let v = &mut out[i];
        let job = r.job.clone();
        match r.verdict() {
            Verdict::Within => v.within.push(job),
            Verdict::Outside => v.outside.push(job),
            Verdict::BeyondPath => v.not_judged.push(job),
            Verdict::Failed(_) => v.failed.push(job),
        }
    }
    out
}

/// The run's verdict over its rows: an error naming the jobs that
/// failed, the judged jobs off their model, and every device of
/// `devices` (the emulated devices the run ran) with no judged job.
/// Rows not judged count for nothing, neither way.
pub fn judge(devices: &[String], rows: &[Row]) -> Result<()> {
    let verdicts = by_device(devices, rows);
    let mut problems = Vec::new();
    let failed: Vec<String> = verdicts
        .iter()
        .flat_map(|v| v.failed.iter().map(|j| format!("{} {j}", v.device)))
        .collect();
    if !failed.is_empty() {
        problems.push(format!(
            "{} of {} jobs failed in the guest ({}; see the table and runs/*.err)",
            failed.len(),
            rows.len(),
            failed.join(", ")
        ));
    }
    let outside: Vec<String> = verdicts
        .iter()
        .flat_map(|v| v.outside.iter().map(|j| format!("{} {j}", v.device)))
        .collect();
    if !outside.is_empty() {
        problems.push(format!(
            "the guest is off the model by more than ±{:.0} % on {}",
            TOLERANCE * 100.0,
            outside.join(", ")
        ));
    }
    let unjudged: Vec<&str> = verdicts
        .iter()
        .filter(|v| v.judged() == 0)
        .map(|v| v.device.as_str())
        .collect();
    if !unjudged.is_empty() {
        problems.push(format!(
            "no job was judged on {}: every job there failed or has a model beyond \
             what the guest's path carries, so the guest checked nothing of it",
            unjudged.join(", ")
        ));
    }
    if !problems.is_empty() {
        bail!("{}", problems.join("; "));
    }
    Ok(())
}

/// The verdict table, markdown: each device's jobs by verdict and its
/// conclusion, drawn from its judged jobs alone.
pub fn verdict_markdown(devices: &[String], rows: &[Row]) -> String {
    let mut s = format!(
        "| device | jobs | judged | within ±{:.0} % | off the model | not judged (excluded) | \
         failed | verdict |\n|---|---:|---:|---:|---:|---:|---:|---|\n",
        TOLERANCE * 100.0
    );
    for v in by_device(devices, rows) {
        s.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} |\n",
            v.device,
            v.judged() + v.not_judged.len() + v.failed.len(),
            v.judged(),
            v.within.len(),
            v.outside.len(),
            v.not_judged.len(),
            v.failed.len(),
            v.conclusion()
        ));
    }
    s
}

/// devices.md in `out`, and the same on the terminal. `ran` are the
/// emulated devices the run judges.
fn write_table(
    out: &Path,
    ran: &[String],
    used: &[(String, Device)],
    rows: &[Row],
    lags: &[blkserve::Lag],
) -> Result<()> {
    let sizes = used
        .iter()
        .filter_map(|(n, d)| d.model.as_ref().map(|m| format!("{n} {} MiB", m.size_mb)))
        .collect::<Vec<_>>()
        .join(", ");
    let text = format!(
        "# Emulated disks against their models\n\nExports: {sizes}. Target: the model's \
         calibration figure (whole device). Model: the job on a fresh model over the \
         export's size, at most {NBD_IN_FLIGHT} deep (QEMU's NBD client). Path alone: the \
         job on the `null` model behind the same attachment, the most the guest gets \
         through it. Guest: fio under `none`. A job whose model is faster than the path \
         alone less the tolerance is not judged: its row is shown, and it counts for \
         nothing in the verdict below.\n\n{}\n## Verdict\n\nBy device, from the judged \
         jobs alone. The run fails on a failed job, a judged job off its model, or a device \
         with no judged job.\n\n{}\n## Device servers\n\n{}",
        table_markdown(rows),
        verdict_markdown(ran, rows),
        blkserve::lag_markdown(lags)
    );
    fs::write(out.join("devices.md"), &text)?;
    println!("{text}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_become_fio_arguments() {
        let j = jobs::find("rand-read-4k-qd32").unwrap();
        assert_eq!(
            fio_args(j),
            "--name=rand-read-4k-qd32 --direct=1 --ioengine=libaio --rw=randread --bs=4096 \
             --iodepth=32 --numjobs=1 --group_reporting --time_based --ramp_time=1000ms \
             --runtime=5000ms --norandommap --randrepeat=0"
        );
        let a = jobs::find("androbench-seq-write").unwrap();
        assert!(fio_args(a).ends_with(" --size=1048576"), "{}", fio_args(a));
        assert!(fio_args(a).contains("--rw=write --bs=262144 --iodepth=1"));
        assert_eq!(metric(a), Metric::MbS);
        assert_eq!(metric(j), Metric::Iops);
    }

    #[test]
    fn every_emulated_disk_gets_its_jobs_and_predictions() {
        let all = devices::load(&util::repo_root()).unwrap();
        let used = devices::pick(&all, ["hdd-7200", "emmc"]).unwrap();
        let (tsv, rows) = plan(&used, &all).unwrap();
        let lines: Vec<&str> = tsv.lines().collect();
        // Each job once on its disk and once on its path alone.
        assert_eq!(lines.len(), 2 * rows.len());
        assert_eq!(rows.len(), jobs_for("hdd-7200").len() + 4);
        assert!(lines[rows.len()..]
            .iter()
            .all(|l| l.starts_with("nbd-null-")));
        let emmc_read = rows
            .iter()
            .find(|(id, ..)| id == "emmc.androbench-rand-read")
            .unwrap();
        assert_eq!(emmc_read.1, "nbd-null-virtio.androbench-rand-read");
        assert_eq!(emmc_read.2.target, Some(1100.0));
        let f: Vec<&str> = lines[0].split('\t').collect();
        assert_eq!(
            f[..4],
            [
                "hdd-7200.seq-read-4k-qd1",
                "/dev/ironlift/h7200",
                "none",
                "seq-read-4k-qd1"
            ]
        );
        assert!(lines.iter().all(|l| !l.contains("androbench")
            || l.contains("/dev/ironlift/emmc0")
            || l.contains("/dev/ironlift/nullv")));
        // A 2 GiB export gives short seeks: more than the whole disk's 78.
        let r = rows
            .iter()
            .find(|(id, ..)| id == "hdd-7200.rand-read-4k-qd1")
            .unwrap();
        assert!(r.2.model > 120.0, "{}", r.2.model);
        assert_eq!(r.1, "nbd-null-ahci.rand-read-4k-qd1");
        // Not the whole disk: no target to compare with.
        assert_eq!(r.2.target, None);
        // Over the whole disk the prediction is the calibration figure.
        let whole_disk = vec![("hdd-7200".to_string(), whole(&all["hdd-7200"]))];
        let (_, rows) = plan(&whole_disk, &all).unwrap();
        let r = &rows
            .iter()
            .find(|(id, ..)| id == "hdd-7200.rand-read-4k-qd1")
            .unwrap()
            .2;
        assert_eq!(r.target, Some(80.0));
        assert!((r.model / 80.0 - 1.0).abs() < TOLERANCE, "{}", r.model);
        // Depth 32 reaches the model as 16.
        let m = all["hdd-7200"].model.as_ref().unwrap();
        let q32 = predict(m, jobs::find("rand-read-4k-qd32").unwrap()).unwrap();
        let q16 = predict(m, jobs::find("rand-read-4k-qd16").unwrap()).unwrap();
        assert_eq!(q32, q16);
    }

    #[test]
    fn the_table_judges_each_job_the_path_can_carry() {
        let row = |guest: Result<f64, String>, path: f64| Row {
            device: "sata-ssd".into(),
            job: "seq-read-1m-qd4".into(),
            metric: Metric::MbS,
            target: Some(530.0),
            model: 500.0,
            guest,
            path: Ok(path),
        };
        let rows = [
            row(Ok(450.0), 2000.0),
            row(Ok(400.0), 2000.0),
            row(Ok(250.0), 260.0),
            row(Err("fio failed: x".into()), 2000.0),
        ];
        assert_eq!(rows[0].verdict(), Verdict::Within);
        assert_eq!(rows[1].verdict(), Verdict::Outside);
        // The path alone gives 260: a model of 500 cannot show.
        assert_eq!(rows[2].verdict(), Verdict::BeyondPath);
        let md = table_markdown(&rows);
        let lines: Vec<&str> = md.lines().collect();
        assert_eq!(
            lines[2],
            "| sata-ssd | seq-read-1m-qd4 | MB/s | 530.0 | 500.0 | 2000 | 450.0 | 0.90 | yes |"
        );
        assert_eq!(
            lines[3],
            "| sata-ssd | seq-read-1m-qd4 | MB/s | 530.0 | 500.0 | 2000 | 400.0 | 0.80 | no |"
        );
        assert!(lines[4].ends_with("| 250.0 | 0.50 | not judged: model beyond the path |"));
        assert!(
            lines[5].ends_with("| - | - | failed: fio failed: x |"),
            "{}",
            lines[5]
        );
    }

    /// A row of `device`: the model 100, the path alone `path`, the guest
    /// `guest`.
    fn judged_row(device: &str, job: &str, guest: f64, path: f64) -> Row {
        Row {
            device: device.into(),
            job: job.into(),
            metric: Metric::Iops,
            target: None,
            model: 100.0,
            guest: Ok(guest),
            path: Ok(path),
        }
    }

    fn names(d: &[&str]) -> Vec<String> {
        d.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_device_with_no_judged_job_fails_the_run() {
        // The path alone carries 90: no model of 100 shows through it.
        let rows = [
            judged_row("hdd-7200", "a", 98.0, 5000.0),
            judged_row("sata-ssd", "a", 80.0, 90.0),
            judged_row("sata-ssd", "b", 100.0, 90.0),
        ];
        let e = judge(&names(&["hdd-7200", "sata-ssd"]), &rows)
            .unwrap_err()
            .to_string();
        assert!(e.contains("no job was judged on sata-ssd:"), "{e}");
        assert!(!e.contains("hdd-7200"), "{e}");
        // A device the run ran with no row at all checked nothing either.
        let e = judge(&names(&["hdd-7200", "emmc"]), &rows[..1])
            .unwrap_err()
            .to_string();
        assert!(e.contains("no job was judged on emmc:"), "{e}");
        // Its only row failed: nothing judged there.
        let failed = Row {
            guest: Err("fio failed: x".into()),
            ..judged_row("emmc", "c", 0.0, 5000.0)
        };
        let e = judge(&names(&["hdd-7200", "emmc"]), &[rows[0].clone(), failed])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("1 of 2 jobs failed in the guest (emmc c;"),
            "{e}"
        );
        assert!(e.contains("no job was judged on emmc:"), "{e}");
    }

    #[test]
    fn one_judged_job_within_the_tolerance_passes() {
        let rows = [
            judged_row("sata-ssd", "a", 20.0, 90.0),
            judged_row("sata-ssd", "b", 88.0, 5000.0),
            judged_row("sata-ssd", "c", 30.0, 95.0),
        ];
        assert_eq!(rows[1].verdict(), Verdict::Within);
        judge(&names(&["sata-ssd"]), &rows).unwrap();
        // The unjudged rows are counted apart and left out of the
        // conclusion.
        let md = verdict_markdown(&names(&["sata-ssd"]), &rows);
        assert_eq!(
            md.lines().nth(2),
            Some("| sata-ssd | 3 | 1 | 1 | 0 | 2 | 0 | holds: every judged job within ±15 % |")
        );
    }

    #[test]
    fn a_judged_job_off_its_model_fails_the_run() {
        let rows = [
            judged_row("hdd-7200", "a", 100.0, 5000.0),
            judged_row("hdd-7200", "b", 84.0, 5000.0),
            judged_row("emmc", "c", 116.0, 5000.0),
            judged_row("emmc", "d", 10.0, 95.0),
        ];
        let e = judge(&names(&["hdd-7200", "emmc"]), &rows)
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "the guest is off the model by more than ±15 % on hdd-7200 b, emmc c"
        );
        let md = verdict_markdown(&names(&["hdd-7200", "emmc"]), &rows);
        let lines: Vec<&str> = md.lines().collect();
        assert_eq!(
            lines[2],
            "| hdd-7200 | 2 | 2 | 1 | 1 | 0 | 0 | fails: off the model on b |"
        );
        assert_eq!(
            lines[3],
            "| emmc | 2 | 1 | 0 | 1 | 1 | 0 | fails: off the model on c |"
        );
        let md = verdict_markdown(&names(&["nvme"]), &[]);
        assert!(md.ends_with(
            "| nvme | 0 | 0 | 0 | 0 | 0 | 0 | fails: no job judged, nothing checked |\n"
        ));
    }

    #[test]
    fn guest_results_are_read_or_explained() {
        let dir = std::env::temp_dir().join(format!("xtask-calibrate-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        fs::write(
            dir.join("a.json"),
            r#"{"jobs":[{"error":0,"read":{"iops":80.5,"bw":322}}]}"#,
        )
        .unwrap();
        fs::write(dir.join("b.err"), "fio failed: no such device\n").unwrap();
        assert_eq!(measured(&dir, "a", Metric::Iops), Ok(80.5));
        assert_eq!(
            measured(&dir, "b", Metric::Iops),
            Err("fio failed: no such device".into())
        );
        assert!(measured(&dir, "c", Metric::Iops)
            .unwrap_err()
            .contains("no result"));
        let _ = fs::remove_dir_all(&dir);
    }
}
