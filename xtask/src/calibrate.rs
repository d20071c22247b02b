//! `cargo xtask devices`: the emulated disks checked in a guest against
//! their models. The guest runs `ironlift_devmodel::jobs::JOBS` with fio
//! under `none` (`qemu/guest/devices.sh`); the host predicts each job for
//! the export's size with the same model, and the table gives model,
//! guest, their ratio, and whether the guest is within the models'
//! calibration tolerance, beside each server's lag.

use crate::devices::{self, Device, ModelDisk};
use crate::flags::DevicesCmd;
use crate::suite::fio::parse_fio;
use crate::util::{self, note, step};
use crate::{blkserve, guest, qemu};
use anyhow::{bail, Result};
use ironlift_devmodel::jobs::{self, Job, Metric, Rw, JOBS, RAMP, RUNTIME, TOLERANCE};
use std::collections::BTreeMap;
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
    pub model: f64,
    /// The guest's figure, or why there is none.
    pub guest: Result<f64, String>,
}

impl Row {
    /// Guest over model.
    pub fn ratio(&self) -> Option<f64> {
        self.guest.as_ref().ok().map(|g| g / self.model)
    }

    /// Whether the guest is within the calibration tolerance of the model.
    pub fn within(&self) -> bool {
        self.guest
            .as_ref()
            .is_ok_and(|&g| jobs::within(g, self.model))
    }
}

/// The table, markdown.
pub fn table_markdown(rows: &[Row]) -> String {
    let mut s = format!(
        "| device | job | figure | model | guest | guest / model | within ±{:.0} % |\n\
         |---|---|---|---:|---:|---:|---|\n",
        TOLERANCE * 100.0
    );
    for r in rows {
        let unit = match r.metric {
            Metric::MbS => "MB/s",
            Metric::Iops => "IOPS",
        };
        let (guest, ratio, ok) = match (&r.guest, r.ratio()) {
            (Ok(g), Some(x)) => (
                format!("{g:.1}"),
                format!("{x:.2}"),
                if r.within() { "yes" } else { "no" }.to_string(),
            ),
            (Err(e), _) => ("-".into(), "-".into(), format!("failed: {e}")),
            (Ok(_), None) => ("-".into(), "-".into(), "-".into()),
        };
        s.push_str(&format!(
            "| {} | {} | {unit} | {:.1} | {guest} | {ratio} | {ok} |\n",
            r.device, r.job, r.model
        ));
    }
    s
}

/// The plan for the guest (lib.sh `run_plan`): one line per device and
/// job, `id, disk, none, job, fio arguments`, with the rows it fills.
pub fn plan(models: &[(String, Device)]) -> (String, Vec<(String, Row)>) {
    let mut tsv = String::new();
    let mut rows = Vec::new();
    for (name, d) in models {
        let Some(m) = &d.model else { continue };
        for job in jobs_for(&m.device) {
            let Some(model) = predict(m, job) else {
                continue;
            };
            let id = format!("{name}.{}", job.name);
            tsv.push_str(&format!(
                "{id}\t{}\tnone\t{}\t{}\n",
                d.path,
                job.name,
                fio_args(job)
            ));
            let row = Row {
                device: name.clone(),
                job: job.name.to_string(),
                metric: metric(job),
                model,
                guest: Err("not run".into()),
            };
            rows.push((id, row));
        }
    }
    (tsv, rows)
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

/// The devices `--devices` names, or every emulated one; each must be
/// emulated.
fn selected(o: &DevicesCmd, all: &BTreeMap<String, Device>) -> Result<Vec<(String, Device)>> {
    let names: Vec<String> = match &o.devices {
        Some(d) => d.clone(),
        None => all
            .iter()
            .filter(|(_, d)| d.model.is_some())
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
    let used = selected(o, &devices::load(&root)?)?;
    let names: Vec<&str> = used.iter().map(|(n, _)| n.as_str()).collect();
    let (tsv, mut rows) = plan(&used);
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
    let timeout = 300 + rows.len() as u64 * secs * 4;
    step(&format!(
        "Emulated disks against their models: {} jobs on {}, ~{} under {}",
        rows.len(),
        names.join(", "),
        util::human_secs(rows.len() as u64 * (secs + 2)),
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
    for (id, row) in &mut rows {
        row.guest = measured(&out.join("runs"), id, row.metric);
    }
    let rows: Vec<Row> = rows.into_iter().map(|(_, r)| r).collect();
    let text = format!(
        "# Emulated disks against their models\n\nModel: the job on a fresh model over the \
         export's size, at most {NBD_IN_FLIGHT} deep (QEMU's NBD client). Guest: fio under \
         `none`.\n\n{}\n## Device servers\n\n{}",
        table_markdown(&rows),
        blkserve::lag_markdown(&lags)
    );
    fs::write(out.join("devices.md"), &text)?;
    println!("{text}");
    note(&format!("table: {}", out.join("devices.md").display()));
    if r.timed_out {
        bail!(
            "the guest did not finish within {timeout}s; console log: {}",
            boot.console_log.display()
        );
    }
    let failed = rows.iter().filter(|r| r.guest.is_err()).count();
    if failed > 0 {
        bail!(
            "{failed} of {} jobs failed in the guest (see the table and runs/*.err)",
            rows.len()
        );
    }
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
        let (tsv, rows) = plan(&used);
        let lines: Vec<&str> = tsv.lines().collect();
        assert_eq!(lines.len(), rows.len());
        assert_eq!(rows.len(), jobs_for("hdd-7200").len() + 4);
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
        assert!(lines
            .iter()
            .all(|l| !l.contains("androbench") || l.contains("/dev/ironlift/emmc0")));
        // A 2 GiB export gives short seeks: more than the whole disk's 78.
        let r = rows
            .iter()
            .find(|(id, _)| id == "hdd-7200.rand-read-4k-qd1")
            .unwrap();
        assert!(r.1.model > 120.0, "{}", r.1.model);
        // Depth 32 reaches the model as 16.
        let m = all["hdd-7200"].model.as_ref().unwrap();
        let q32 = predict(m, jobs::find("rand-read-4k-qd32").unwrap()).unwrap();
        let q16 = predict(m, jobs::find("rand-read-4k-qd16").unwrap()).unwrap();
        assert_eq!(q32, q16);
    }

    #[test]
    fn the_table_judges_each_job() {
        let row = |guest: Result<f64, String>| Row {
            device: "sata-ssd".into(),
            job: "seq-read-1m-qd4".into(),
            metric: Metric::MbS,
            model: 500.0,
            guest,
        };
        let md = table_markdown(&[
            row(Ok(450.0)),
            row(Ok(400.0)),
            row(Err("fio failed: x".into())),
        ]);
        let lines: Vec<&str> = md.lines().collect();
        assert_eq!(
            lines[2],
            "| sata-ssd | seq-read-1m-qd4 | MB/s | 500.0 | 450.0 | 0.90 | yes |"
        );
        assert_eq!(
            lines[3],
            "| sata-ssd | seq-read-1m-qd4 | MB/s | 500.0 | 400.0 | 0.80 | no |"
        );
        assert_eq!(
            lines[4],
            "| sata-ssd | seq-read-1m-qd4 | MB/s | 500.0 | - | - | failed: fio failed: x |"
        );
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
