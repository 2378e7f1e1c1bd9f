//! Where an install keeps its record and the backup of the client's file: in one folder,
//! `installs/` in mcp-envelope's own config folder ([`Target::installs`]), whatever `--config`
//! names, so that a backup (which holds the client's tokens) never lands beside a config file
//! given by a relative path (`--config ./x.toml` put it in `./installs/`). Each install is
//! named by its client file, Claude Code project and, unless it is the default one, the
//! proxy's config. An install made before this (its record beside its proxy's config) is
//! found where it is, so that it can be installed again and undone.

use std::path::{Path, PathBuf};

use super::files::Target;

/// The record and backup of one install.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Place {
    /// The folder they are in.
    pub(super) dir: PathBuf,
    /// Their file name without its extension: `<client>-<16 hex digits>`.
    pub(super) stem: String,
}

impl Place {
    /// The install record (`<stem>.json`).
    pub(super) fn record(&self) -> PathBuf {
        self.dir.join(format!("{}.json", self.stem))
    }

    /// The backup of the client's file before the first install (`<stem>.orig`).
    pub(super) fn backup(&self) -> PathBuf {
        self.dir.join(format!("{}.orig", self.stem))
    }
}

/// Where `target`'s install keeps (or is to keep) its record and backup: in
/// [`Target::installs`], unless only an install made before this is recorded, beside the
/// proxy's config.
pub(super) fn place(target: &Target) -> Place {
    let default_config = target.installs.parent().map(|d| d.join("config.toml"));
    // The default config's installs keep the names they always had.
    let config = (default_config.as_deref() != Some(target.envelope_config.as_path()))
        .then_some(target.envelope_config.as_path());
    let here = Place {
        dir: target.installs.clone(),
        stem: stem(target, config),
    };
    let beside = Place {
        dir: target
            .envelope_config
            .parent()
            .unwrap_or(Path::new("."))
            .join("installs"),
        stem: stem(target, None),
    };
    if beside != here && !here.record().exists() && beside.record().exists() {
        return beside;
    }
    here
}

/// `<client>-<16 hex digits>`: FNV-1a of the client file's path, the project and `config`.
fn stem(target: &Target, config: Option<&Path>) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut key = format!(
        "{}\0{}",
        target.client_config.display(),
        target.project.as_deref().unwrap_or("")
    );
    if let Some(config) = config {
        key.push_str(&format!("\0{}", config.display()));
    }
    for b in key.bytes() {
        hash = (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    format!("{}-{hash:016x}", target.client.id())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::install::Client;

    fn target(home: &Path, config: &Path) -> Target {
        Target {
            client: Client::Cursor,
            client_config: home.join(".cursor/mcp.json"),
            project: None,
            envelope_config: config.to_path_buf(),
            client_config_given: false,
            installs: home.join(".config/mcp-envelope/installs"),
        }
    }

    /// Every proxy config's install is kept in the one folder; the default config's under the
    /// name it always had, another config's under a name of its own; an install recorded
    /// beside its config (before) is found there.
    #[test]
    fn installs_live_in_the_config_folder_whatever_config_names() {
        let home = tempfile::tempdir().unwrap();
        let installs = home.path().join(".config/mcp-envelope/installs");
        let default = target(home.path(), &installs.with_file_name("config.toml"));
        let work = home.path().join("work");
        let mine = target(home.path(), &work.join("x.toml"));
        let (a, b) = (place(&default), place(&mine));
        assert_eq!((&a.dir, &b.dir), (&installs, &installs));
        assert_ne!(a.stem, b.stem, "one name per proxy config");
        assert_eq!(a.stem, stem(&default, None), "the name it always had");
        let before = work.join("installs");
        std::fs::create_dir_all(&before).unwrap();
        std::fs::write(before.join(format!("{}.json", stem(&mine, None))), "{}").unwrap();
        assert_eq!(
            place(&mine).dir,
            before,
            "an older install is found where it is"
        );
    }
}
