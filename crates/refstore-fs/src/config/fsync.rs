//! `core.fsync`, `core.fsyncMethod` and `refstore.batchFlush`: which kinds of
//! files are flushed, and how.

use crate::flush::{BatchMechanism, FlushMethod};

/// A kind of file `core.fsync` can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Component {
    /// Loose objects.
    LooseObject,
    /// Pack files.
    Pack,
    /// Pack indexes, reverse indexes and other pack metadata.
    PackMetadata,
    /// The commit-graph.
    CommitGraph,
    /// The index.
    Index,
    /// References (loose refs, packed-refs, reftables, reflogs).
    Reference,
}

impl Component {
    const fn bit(self) -> u8 {
        1 << self as u8
    }
}

const LOOSE: u8 = Component::LooseObject.bit();
const PACK: u8 = Component::Pack.bit();
const PACK_METADATA: u8 = Component::PackMetadata.bit();
const COMMIT_GRAPH: u8 = Component::CommitGraph.bit();
const INDEX: u8 = Component::Index.bit();
const REFERENCE: u8 = Component::Reference.bit();
const OBJECTS: u8 = LOOSE | PACK;
const DERIVED: u8 = PACK_METADATA | COMMIT_GRAPH;
const COMMITTED: u8 = OBJECTS | REFERENCE;
const ADDED: u8 = COMMITTED | INDEX;
const ALL: u8 = ADDED | DERIVED;
/// What git flushes when `core.fsync` does not say otherwise; a configured
/// list adds to and removes from this, as in git.
const GIT_DEFAULT: u8 = (OBJECTS | DERIVED) & !LOOSE;

fn named(name: &str) -> Option<u8> {
    Some(match name {
        "loose-object" => LOOSE,
        "pack" => PACK,
        "pack-metadata" => PACK_METADATA,
        "commit-graph" => COMMIT_GRAPH,
        "index" => INDEX,
        "reference" => REFERENCE,
        "objects" => OBJECTS,
        "derived-metadata" => DERIVED,
        "committed" => COMMITTED,
        "added" => ADDED,
        "all" => ALL,
        _ => return None,
    })
}

/// Which components are flushed, and with which method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FsyncSettings {
    components: u8,
    method: FlushMethod,
    mechanism: BatchMechanism,
}

impl Default for FsyncSettings {
    /// refstore's default when `core.fsync` is not configured: everything a
    /// commit or push makes reachable (objects, packs, references, and their
    /// metadata) is durable, flushed with `batch`.
    fn default() -> Self {
        FsyncSettings {
            components: COMMITTED | DERIVED,
            method: FlushMethod::Batch,
            mechanism: BatchMechanism::Auto,
        }
    }
}

impl FsyncSettings {
    /// Parses `core.fsync` (if set) and `core.fsyncMethod` (if set; refstore
    /// uses `batch` when it is not). Unknown components and methods are
    /// reported in `warnings` with git's wording and otherwise ignored, as
    /// git does.
    pub fn parse(fsync: Option<&str>, method: Option<&str>, warnings: &mut Vec<String>) -> Self {
        let mut settings = FsyncSettings::default();
        if let Some(list) = fsync {
            let (mut base, mut plus, mut minus) = (GIT_DEFAULT, 0u8, 0u8);
            for word in list.split(',').map(str::trim).filter(|w| !w.is_empty()) {
                if word == "none" {
                    base = 0;
                    continue;
                }
                let (negated, name) = match word.strip_prefix('-') {
                    Some(n) => (true, n),
                    None => (false, word),
                };
                match named(name) {
                    Some(bits) if negated => minus |= bits,
                    Some(bits) => plus |= bits,
                    None => {
                        warnings.push(format!("ignoring unknown core.fsync component '{name}'"))
                    }
                }
            }
            settings.components = (base & !minus) | plus;
        }
        if let Some(name) = method {
            match FlushMethod::from_config_name(name) {
                Some(m) => settings.method = m,
                None => warnings.push(format!("ignoring unknown core.fsyncMethod value '{name}'")),
            }
        }
        settings
    }

    /// These settings with the flush points of `batch` carried out by
    /// `mechanism` (`refstore.batchFlush`).
    pub fn with_batch_mechanism(mut self, mechanism: BatchMechanism) -> Self {
        self.mechanism = mechanism;
        self
    }

    /// How the flush points of the `batch` method are carried out
    /// (`refstore.batchFlush`; `Auto` when unset), for every component.
    pub fn batch_mechanism(&self) -> BatchMechanism {
        self.mechanism
    }

    /// How files of `component` are flushed: the configured method if the
    /// component is listed, [`FlushMethod::None`] if it is not.
    pub fn method_for(&self, component: Component) -> FlushMethod {
        if self.components & component.bit() != 0 {
            self.method
        } else {
            FlushMethod::None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(fsync: Option<&str>, method: Option<&str>) -> FsyncSettings {
        FsyncSettings::parse(fsync, method, &mut Vec::new())
    }

    #[test]
    fn unset_means_durable_batch() {
        let s = parse(None, None);
        for c in [
            Component::Reference,
            Component::LooseObject,
            Component::Pack,
        ] {
            assert_eq!(s.method_for(c), FlushMethod::Batch);
        }
        assert_eq!(s.method_for(Component::Index), FlushMethod::None);
    }

    #[test]
    fn lists_add_to_and_remove_from_gits_default() {
        let s = parse(Some("reference"), Some("fsync"));
        assert_eq!(s.method_for(Component::Reference), FlushMethod::Fsync);
        assert_eq!(s.method_for(Component::Pack), FlushMethod::Fsync);
        assert_eq!(s.method_for(Component::LooseObject), FlushMethod::None);
        let s = parse(Some("none"), None);
        assert_eq!(s.method_for(Component::Reference), FlushMethod::None);
        assert_eq!(s.method_for(Component::Pack), FlushMethod::None);
        // As in git, removals apply to the default and additions win.
        let s = parse(Some("-pack,index"), Some("writeout-only"));
        assert_eq!(s.method_for(Component::Pack), FlushMethod::None);
        assert_eq!(
            s.method_for(Component::PackMetadata),
            FlushMethod::WriteoutOnly
        );
        assert_eq!(s.method_for(Component::Index), FlushMethod::WriteoutOnly);
        let s = parse(Some("all,-reference"), None);
        assert_eq!(s.method_for(Component::Reference), FlushMethod::Batch);
        let s = parse(Some("none,committed"), None);
        assert_eq!(s.method_for(Component::LooseObject), FlushMethod::Batch);
        assert_eq!(s.method_for(Component::CommitGraph), FlushMethod::None);
    }

    #[test]
    fn unknown_components_and_methods_warn() {
        let mut warnings = Vec::new();
        let s = FsyncSettings::parse(Some("reference,bogus"), Some("sometimes"), &mut warnings);
        assert_eq!(
            warnings,
            [
                "ignoring unknown core.fsync component 'bogus'",
                "ignoring unknown core.fsyncMethod value 'sometimes'"
            ]
        );
        assert_eq!(s.method_for(Component::Reference), FlushMethod::Batch);
    }
}
