//! The housekeeping tasks, by name and in the order a run performs them.

/// One housekeeping task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Task {
    /// Remove what crashed processes left.
    Cleanup,
    /// Pack refs, or compact reftables.
    PackRefs,
    /// Pack loose objects.
    LooseObjects,
    /// Geometric repack and multi-pack-index.
    IncrementalRepack,
    /// Write the commit-graph.
    CommitGraph,
}

impl Task {
    /// Every task, in the order a run performs them.
    pub const ALL: [Task; 5] = [
        Task::Cleanup,
        Task::PackRefs,
        Task::LooseObjects,
        Task::IncrementalRepack,
        Task::CommitGraph,
    ];

    /// The task's name (`--task=<name>`, `maintenance.<name>.*`).
    pub fn name(self) -> &'static str {
        match self {
            Task::Cleanup => "cleanup",
            Task::PackRefs => "pack-refs",
            Task::LooseObjects => "loose-objects",
            Task::IncrementalRepack => "incremental-repack",
            Task::CommitGraph => "commit-graph",
        }
    }

    /// The task called `name`.
    pub fn from_name(name: &str) -> Option<Task> {
        Task::ALL.into_iter().find(|t| t.name() == name)
    }
}
