//! Housekeeping configuration: git's keys where git has one (`gc.*`,
//! `maintenance.<task>.*`), `refstore.*` for what only refstore does.

use crate::error::MaintError;
use crate::expire::{self, Expiry};
use crate::task::Task;
use refstore_fs::config::Config;
use std::collections::HashMap;
use std::time::Duration;

/// Housekeeping settings.
#[derive(Debug, Clone)]
pub struct MaintSettings {
    /// `gc.auto`: loose objects from which `--auto` packs them (0: never
    /// for this reason). Default 6700.
    pub gc_auto: i64,
    /// `gc.autoPackLimit`: packs from which `--auto` repacks (0: never for
    /// this reason). Default 50.
    pub gc_auto_pack_limit: i64,
    /// `gc.pruneExpire`: unreachable loose objects older than this may be
    /// deleted. Default two weeks.
    pub prune_expire: Expiry,
    /// `refstore.clusterPruneFloor`: in a cluster node's copy, the grace
    /// period is at least this (`gc.pruneExpire` below it is raised): the
    /// longest a push may take between its pack reaching a node and its
    /// refs committing in etcd. Default one hour; `refstore serve
    /// --cluster` gives its repositories twice the sum of its peer and
    /// request timeouts unless `-c` sets it.
    pub cluster_prune_floor: Duration,
    /// `maintenance.<task>.auto`, where set.
    pub task_auto: HashMap<Task, i64>,
    /// `maintenance.<task>.enabled`, where set.
    pub task_enabled: HashMap<Task, bool>,
    /// `refstore.redundantPackExpire`: how long a pack the
    /// multi-pack-index no longer names is kept for readers that may still
    /// use it. Default one hour.
    pub redundant_pack_expire: Expiry,
    /// `refstore.cleanupExpire`: the age from which temporary files,
    /// quarantine directories and packs without an index are taken for
    /// crash leftovers. Default one hour.
    pub cleanup_expire: Expiry,
    /// `repack.writeBitmaps` (or its older name `pack.writeBitmaps`), if
    /// set: whether `incremental-repack` writes a multi-pack bitmap.
    pub write_bitmaps: Option<bool>,
}

impl Default for MaintSettings {
    fn default() -> Self {
        MaintSettings {
            gc_auto: 6700,
            gc_auto_pack_limit: 50,
            prune_expire: Some(Duration::from_secs(14 * 86_400)),
            cluster_prune_floor: Duration::from_secs(3600),
            task_auto: HashMap::new(),
            task_enabled: HashMap::new(),
            redundant_pack_expire: Some(Duration::from_secs(3600)),
            cleanup_expire: Some(Duration::from_secs(3600)),
            write_bitmaps: None,
        }
    }
}

impl MaintSettings {
    /// Reads the settings from a repository's configuration.
    pub fn from_config(config: &Config) -> Result<MaintSettings, MaintError> {
        let bad = |e: refstore_fs::config::ConfigError| MaintError::Config(e.to_string());
        let expiry = |key: &str, default: Expiry| -> Result<Expiry, MaintError> {
            match config.string(key) {
                Some(value) => {
                    expire::parse(&value).map_err(|e| MaintError::Config(format!("{key}: {e}")))
                }
                None => Ok(default),
            }
        };
        let defaults = MaintSettings::default();
        let mut settings = MaintSettings {
            gc_auto: config
                .int("gc.auto")
                .map_err(bad)?
                .unwrap_or(defaults.gc_auto),
            gc_auto_pack_limit: config
                .int("gc.autoPackLimit")
                .map_err(bad)?
                .unwrap_or(defaults.gc_auto_pack_limit),
            prune_expire: expiry("gc.pruneExpire", defaults.prune_expire)?,
            // "never" as a floor would mean no pruning: `gc.pruneExpire`
            // says that; here it is taken as the longest floor.
            cluster_prune_floor: expiry(
                "refstore.clusterPruneFloor",
                Some(defaults.cluster_prune_floor),
            )?
            .unwrap_or(Duration::MAX),
            task_auto: HashMap::new(),
            task_enabled: HashMap::new(),
            redundant_pack_expire: expiry(
                "refstore.redundantPackExpire",
                defaults.redundant_pack_expire,
            )?,
            cleanup_expire: expiry("refstore.cleanupExpire", defaults.cleanup_expire)?,
            write_bitmaps: match config.bool("repack.writeBitmaps").map_err(bad)? {
                Some(b) => Some(b),
                None => config.bool("pack.writeBitmaps").map_err(bad)?,
            },
        };
        for task in Task::ALL {
            let name = task.name();
            if let Some(n) = config
                .int(&format!("maintenance.{name}.auto"))
                .map_err(bad)?
            {
                settings.task_auto.insert(task, n);
            }
            if let Some(b) = config
                .bool(&format!("maintenance.{name}.enabled"))
                .map_err(bad)?
            {
                settings.task_enabled.insert(task, b);
            }
        }
        Ok(settings)
    }

    /// Whether a run without `--task` performs `task`.
    pub fn enabled(&self, task: Task) -> bool {
        self.task_enabled.get(&task).copied().unwrap_or(true)
    }

    /// Whether `incremental-repack` writes a multi-pack bitmap: as set, or
    /// by git's default for `git repack -a`, in bare repositories only
    /// (the ones that serve fetches).
    pub fn writes_bitmaps(&self, bare: bool) -> bool {
        self.write_bitmaps.unwrap_or(bare)
    }

    /// `maintenance.<task>.auto`, or git's default for it.
    pub fn auto_threshold(&self, task: Task) -> i64 {
        self.task_auto.get(&task).copied().unwrap_or(match task {
            Task::IncrementalRepack => 10,
            Task::LooseObjects => 100,
            Task::CommitGraph => 100,
            Task::PackRefs => 16,
            Task::Cleanup => 1,
        })
    }
}
