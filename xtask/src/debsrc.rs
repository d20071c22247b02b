//! Fetching a Debian source package of another suite (7.3's
//! `linux-source-7.3` from trixie-backports on a bookworm system) without
//! touching the system's apt configuration.
//!
//! A private apt configuration under the cache: its own sources list
//! naming the mirror the system's own sources use, with the wanted suite
//! and the system's Debian keyring; its own state, lists and archive
//! folders; none of the system's sources parts or preferences. Then
//! `apt-get update`, `apt-get download` and `dpkg-deb -x`. The package is
//! never installed.
//!
//! ```text
//! <cache>/apt-<suite>/sources.list       the one source
//! <cache>/apt-<suite>/state/, cache/     apt's lists and archives
//! <cache>/debs/<package>_<version>/      the package's files (dpkg-deb -x)
//! ```

use crate::util::{note, run, run_logged, step};
use anyhow::{bail, Context, Result};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The keyring the system's Debian sources are signed with; it holds the
/// keys of the releases after the system's own too.
pub const KEYRING: &str = "/usr/share/keyrings/debian-archive-keyring.gpg";

/// One source of an apt sources file, either format.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Source {
    pub types: Vec<String>,
    pub uris: Vec<String>,
    pub suites: Vec<String>,
    pub components: Vec<String>,
    pub enabled: bool,
}

/// The sources of a one-line-style file (`sources.list`, `*.list`):
/// `deb [options] uri suite component...`.
pub fn parse_one_line(text: &str) -> Vec<Source> {
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        let Some((ty, rest)) = line.split_once(char::is_whitespace) else {
            continue;
        };
        if ty != "deb" && ty != "deb-src" {
            continue;
        }
        let mut rest = rest.trim_start();
        if let Some(opts) = rest.strip_prefix('[') {
            match opts.split_once(']') {
                Some((_, after)) => rest = after.trim_start(),
                None => continue,
            }
        }
        let mut words = rest.split_whitespace();
        let (Some(uri), Some(suite)) = (words.next(), words.next()) else {
            continue;
        };
        out.push(Source {
            types: vec![ty.to_string()],
            uris: vec![uri.to_string()],
            suites: vec![suite.to_string()],
            components: words.map(str::to_string).collect(),
            enabled: true,
        });
    }
    out
}

/// The sources of a deb822-style file (`*.sources`): stanzas of
/// `Field: value` lines separated by blank lines.
pub fn parse_deb822(text: &str) -> Vec<Source> {
    let mut out = Vec::new();
    let mut cur: Vec<(String, String)> = Vec::new();
    let mut flush = |cur: &mut Vec<(String, String)>| {
        if cur.is_empty() {
            return;
        }
        let field = |name: &str| -> Vec<String> {
            cur.iter()
                .filter(|(k, _)| k.eq_ignore_ascii_case(name))
                .flat_map(|(_, v)| v.split_whitespace().map(str::to_string))
                .collect()
        };
        let enabled = field("Enabled").first().is_none_or(|v| v != "no");
        out.push(Source {
            types: field("Types"),
            uris: field("URIs"),
            suites: field("Suites"),
            components: field("Components"),
            enabled,
        });
        cur.clear();
    };
    for line in text.lines() {
        if line.trim().is_empty() {
            flush(&mut cur);
            continue;
        }
        if line.starts_with('#') {
            continue;
        }
        if line.starts_with([' ', '\t']) {
            // A continuation line: more of the last field's value.
            if let Some((_, v)) = cur.last_mut() {
                v.push(' ');
                v.push_str(line.trim());
            }
            continue;
        }
        if let Some((k, v)) = line.split_once(':') {
            cur.push((k.trim().to_string(), v.trim().to_string()));
        }
    }
    flush(&mut cur);
    out
}

/// Whether `suite` is one of Debian's release suites (a codename or
/// stable/testing/unstable, with `-updates` or `-backports`), and not a
/// security suite, which lives on its own archive.
fn debian_suite(suite: &str) -> bool {
    const RELEASES: &[&str] = &[
        "buster",
        "bullseye",
        "bookworm",
        "trixie",
        "forky",
        "duke",
        "sid",
        "oldstable",
        "stable",
        "testing",
        "unstable",
    ];
    let base = suite.split('-').next().unwrap_or(suite);
    RELEASES.contains(&base) && !suite.contains("security")
}

/// The mirror of Debian's main archive among `sources`: the first URI of
/// an enabled binary source with a Debian release suite and `main`.
pub fn debian_mirror(sources: &[Source]) -> Option<String> {
    sources
        .iter()
        .filter(|s| s.enabled && s.types.iter().any(|t| t == "deb"))
        .filter(|s| s.components.iter().any(|c| c == "main"))
        .filter(|s| s.suites.iter().any(|x| debian_suite(x)))
        .flat_map(|s| s.uris.iter())
        .find(|u| u.starts_with("http://") || u.starts_with("https://"))
        .map(|u| u.trim_end_matches('/').to_string())
}

/// The Debian mirror the system's apt sources name, read from
/// `/etc/apt/sources.list` and `/etc/apt/sources.list.d/*.{list,sources}`.
pub fn system_mirror() -> Result<String> {
    let mut sources = Vec::new();
    let mut read = Vec::new();
    if let Ok(t) = fs::read_to_string("/etc/apt/sources.list") {
        sources.extend(parse_one_line(&t));
        read.push("/etc/apt/sources.list".to_string());
    }
    let mut parts: Vec<PathBuf> = fs::read_dir("/etc/apt/sources.list.d")
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    parts.sort();
    for p in parts {
        let ext = p.extension().and_then(|e| e.to_str()).unwrap_or("");
        let Ok(t) = fs::read_to_string(&p) else {
            continue;
        };
        match ext {
            "list" => sources.extend(parse_one_line(&t)),
            "sources" => sources.extend(parse_deb822(&t)),
            _ => continue,
        }
        read.push(p.display().to_string());
    }
    debian_mirror(&sources).with_context(|| {
        format!(
            "no Debian mirror (an http(s) URI with a Debian release suite and main) in {}",
            read.join(", ")
        )
    })
}

/// The private sources list: the one suite on `mirror`, signed by the
/// system's Debian keyring.
pub fn sources_list(mirror: &str, suite: &str) -> String {
    format!("deb [signed-by={KEYRING}] {mirror} {suite} main\n")
}

/// The `-o` options that make apt-get use the private configuration in
/// `dir` and nothing of the system's but its keyring and its apt.conf.
pub fn apt_options(dir: &Path) -> Vec<String> {
    let d = dir.display();
    vec![
        format!("-oDir::Etc::SourceList={d}/sources.list"),
        "-oDir::Etc::SourceParts=-".into(),
        format!("-oDir::Etc::Preferences={d}/preferences"),
        "-oDir::Etc::PreferencesParts=-".into(),
        format!("-oDir::State={d}/state"),
        format!("-oDir::State::Lists={d}/state/lists"),
        format!("-oDir::State::status={d}/state/status"),
        format!("-oDir::Cache={d}/cache"),
    ]
}

/// Fetches `package` at `version` from `suite` of the system's Debian
/// mirror, unpacked (not installed) into the cache; returns the folder
/// holding its files. Nothing is fetched when it is already there.
pub fn fetch(cache: &Path, package: &str, version: &str, suite: &str) -> Result<PathBuf> {
    let dest = cache.join("debs").join(format!("{package}_{version}"));
    if dest.is_dir() {
        return Ok(dest);
    }
    let mirror = system_mirror()?;
    step(&format!(
        "Fetching {package} {version} from {mirror} {suite} (a private apt configuration; nothing is installed)"
    ));
    let dir = cache.join(format!("apt-{suite}"));
    for d in ["state/lists/partial", "cache/archives/partial"] {
        fs::create_dir_all(dir.join(d))?;
    }
    fs::write(dir.join("sources.list"), sources_list(&mirror, suite))?;
    let status = dir.join("state/status");
    if !status.exists() {
        fs::write(&status, "")?;
    }
    let opts = apt_options(&dir);
    run_logged(
        Command::new("apt-get").args(&opts).arg("update"),
        &dir.join("update.log"),
        "apt-get update (private)",
    )
    .with_context(|| format!("apt-get update of {mirror} {suite} failed"))?;
    let download = dir.join("download");
    let _ = fs::remove_dir_all(&download);
    fs::create_dir_all(&download)?;
    run_logged(
        Command::new("apt-get")
            .current_dir(&download)
            .args(&opts)
            .arg("download")
            .arg(format!("{package}={version}")),
        &dir.join("download.log"),
        "apt-get download",
    )
    .with_context(|| {
        format!("{package} {version} is not in {suite}; check for a newer upload with `apt-cache policy` and the options in {}", dir.display())
    })?;
    let debs: Vec<PathBuf> = fs::read_dir(&download)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "deb"))
        .collect();
    let [deb] = debs.as_slice() else {
        bail!(
            "apt-get download left {} .deb files in {}",
            debs.len(),
            download.display()
        );
    };
    let tmp = dest.with_extension("tmp");
    let _ = fs::remove_dir_all(&tmp);
    fs::create_dir_all(&tmp)?;
    run(Command::new("dpkg-deb").arg("-x").arg(deb).arg(&tmp))?;
    fs::rename(&tmp, &dest)?;
    fs::remove_dir_all(&download)?;
    note(&format!("unpacked into {}", dest.display()));
    Ok(dest)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ONE_LINE: &str = "\
# deb cdrom:[Debian GNU/Linux 12]/ bookworm main
deb [arch=amd64 signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://ftp.de.debian.org/debian/ bookworm main contrib
deb http://security.debian.org/debian-security bookworm-security main
deb-src http://ftp.de.debian.org/debian/ bookworm main
";

    const DEB822: &str = "\
Types: deb
# http://snapshot.debian.org/archive/debian-security/20250520T000000Z
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: https://deb.nodesource.com/node_20.x
Suites: nodistro
Components: main

Types: deb deb-src
URIs: http://mirror.example.org/debian
Suites: bookworm bookworm-updates
Components: main
 contrib
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
";

    #[test]
    fn one_line_sources_give_the_main_archive() {
        let s = parse_one_line(ONE_LINE);
        assert_eq!(s.len(), 3, "{s:?}");
        assert_eq!(s[0].components, ["main", "contrib"]);
        assert_eq!(
            debian_mirror(&s).as_deref(),
            Some("http://ftp.de.debian.org/debian")
        );
    }

    #[test]
    fn deb822_sources_give_the_main_archive() {
        let s = parse_deb822(DEB822);
        assert_eq!(s.len(), 3, "{s:?}");
        assert_eq!(s[2].components, ["main", "contrib"]);
        assert_eq!(s[2].types, ["deb", "deb-src"]);
        assert_eq!(
            debian_mirror(&s).as_deref(),
            Some("http://mirror.example.org/debian")
        );
    }

    #[test]
    fn security_third_party_and_disabled_sources_are_not_mirrors() {
        let only_security = parse_one_line(
            "deb http://security.debian.org/debian-security bookworm-security main\n",
        );
        assert_eq!(debian_mirror(&only_security), None);
        let disabled = parse_deb822(
            "Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm\n\
             Components: main\nEnabled: no\n",
        );
        assert_eq!(debian_mirror(&disabled), None);
        let third_party =
            parse_one_line("deb https://packages.cloud.google.com/apt cloud-sdk-bookworm main\n");
        assert_eq!(debian_mirror(&third_party), None);
    }

    #[test]
    fn the_private_configuration_names_one_suite_and_its_own_folders() {
        assert_eq!(
            sources_list("http://deb.debian.org/debian", "trixie-backports"),
            "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] \
             http://deb.debian.org/debian trixie-backports main\n"
        );
        let o = apt_options(Path::new("/c/apt-trixie-backports"));
        assert!(o.contains(&"-oDir::Etc::SourceList=/c/apt-trixie-backports/sources.list".into()));
        assert!(o.contains(&"-oDir::Etc::SourceParts=-".into()));
        assert!(o.contains(&"-oDir::Etc::PreferencesParts=-".into()));
        assert!(o.contains(&"-oDir::State=/c/apt-trixie-backports/state".into()));
        assert!(o.contains(&"-oDir::Cache=/c/apt-trixie-backports/cache".into()));
        // Nothing may point into the system's own state or lists.
        for opt in &o {
            let v = opt.split_once('=').map(|(_, v)| v).unwrap_or("");
            assert!(
                v == "-" || v.starts_with("/c/apt-trixie-backports/"),
                "{opt}"
            );
        }
    }
}
