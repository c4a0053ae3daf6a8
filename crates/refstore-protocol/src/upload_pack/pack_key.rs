//! The inputs of a fetch's pack, once negotiation and the shallow
//! boundary are settled, and the pack cache's key for them (see
//! [`crate::pack_cache`] for why these inputs are all a pack depends on).

use super::filter::Filter;
use super::pack_writer::type_id;
use super::request::ClientOptions;
use super::shallow::ShallowPlan;
use crate::pack_cache::key::{CacheKey, Field, KeyBuilder};
use refstore_refs::{ObjectFormat, ObjectId};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// What a fetch's pack is computed from.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PackInputs<'a> {
    /// The wants, with the parents of the client's shallow commits that
    /// gain them.
    pub wants: &'a [ObjectId],
    /// The commits the client has: the common ones and `edges`.
    pub common: &'a [ObjectId],
    /// The client's shallow commits that gain their parents.
    pub edges: &'a [ObjectId],
    /// The commits the walk sees without parents.
    pub grafts: &'a [ObjectId],
    /// Annotated tags to send where they point into the pack
    /// (`include-tag`; empty without it).
    pub tags: &'a [ObjectId],
    pub filter: Option<&'a Filter>,
    /// The pack may be thin.
    pub thin: bool,
    /// The walk has shallow grafts and the client asked for a thin pack:
    /// the whole trees of the client's commits count as its own (see
    /// [`super::walk::ShallowEdges`]). Unlike `thin`, this holds with a filter.
    pub shallow_thin: bool,
    /// Deltas may name their base by offset (`ofs-delta`).
    pub ofs_delta: bool,
}

impl<'a> PackInputs<'a> {
    /// The inputs of a request for `wants` from a client that has
    /// `common`, with the shallow boundary `shallow` (its extra wants and
    /// haves already in `wants` and `common`), `tags` for `include-tag`,
    /// `filter`, and the capabilities `client` chose.
    pub(crate) fn new(
        wants: &'a [ObjectId],
        common: &'a [ObjectId],
        shallow: Option<&'a ShallowPlan>,
        tags: &'a [ObjectId],
        filter: Option<&'a Filter>,
        client: &ClientOptions,
    ) -> Self {
        // The commits that gain their parents are the client's: what
        // their parents share with them is not sent again.
        let (edges, grafts) = shallow.map_or((&[][..], &[][..]), |plan| {
            (&plan.extra_haves[..], &plan.grafts[..])
        });
        PackInputs {
            wants,
            common,
            edges,
            grafts,
            tags,
            filter,
            // The client may lack the bases a thin pack would use.
            thin: client.thin_pack && filter.is_none(),
            shallow_thin: client.thin_pack && !grafts.is_empty(),
            ofs_delta: client.ofs_delta,
        }
    }
}

/// The key of the pack `inputs` make in the repository at `git_dir`;
/// `None` for a pack not cached (a `sparse:oid=` filter).
pub(crate) fn pack_key(
    git_dir: &Path,
    format: ObjectFormat,
    inputs: &PackInputs<'_>,
) -> Option<CacheKey> {
    let filter = match inputs.filter {
        Some(filter) => encode_filter(filter)?,
        None => Vec::new(),
    };
    let mut key = KeyBuilder::new();
    key.bytes(Field::Repository, git_dir.as_os_str().as_bytes())
        .bytes(Field::ObjectFormat, format.name().as_bytes())
        .ids(Field::Wants, inputs.wants)
        .ids(Field::Common, inputs.common)
        .ids(Field::Edges, inputs.edges)
        .ids(Field::Grafts, inputs.grafts)
        .ids(Field::Tags, inputs.tags)
        .bytes(Field::Filter, &filter)
        .bytes(
            Field::Capabilities,
            &[
                u8::from(inputs.thin),
                u8::from(inputs.shallow_thin),
                u8::from(inputs.ofs_delta),
            ],
        );
    Some(key.finish())
}

/// A filter as bytes, one encoding per filter; `None` for filters whose
/// patterns are read from a blob.
fn encode_filter(filter: &Filter) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    match filter {
        Filter::BlobNone => out.push(1),
        Filter::BlobLimit(n) => {
            out.push(2);
            out.extend_from_slice(&n.to_be_bytes());
        }
        Filter::TreeDepth(n) => {
            out.push(3);
            out.extend_from_slice(&n.to_be_bytes());
        }
        Filter::ObjectType(kind) => out.extend_from_slice(&[4, type_id(*kind)]),
        Filter::SparseOid(_) | Filter::Sparse { .. } => return None,
        Filter::Combine(parts) => {
            out.push(5);
            out.extend_from_slice(&(parts.len() as u64).to_be_bytes());
            for part in parts {
                let part = encode_filter(part)?;
                out.extend_from_slice(&(part.len() as u64).to_be_bytes());
                out.extend_from_slice(&part);
            }
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A request's key inputs, owned.
    #[derive(Debug, Clone)]
    struct Request {
        git_dir: String,
        sha256: bool,
        sets: [Vec<ObjectId>; 5],
        filter: Option<Filter>,
        thin: bool,
        shallow_thin: bool,
        ofs_delta: bool,
    }

    impl Request {
        fn key(&self) -> Option<CacheKey> {
            let [wants, common, edges, grafts, tags] = &self.sets;
            let format = if self.sha256 {
                ObjectFormat::Sha256
            } else {
                ObjectFormat::Sha1
            };
            pack_key(
                Path::new(&self.git_dir),
                format,
                &PackInputs {
                    wants,
                    common,
                    edges,
                    grafts,
                    tags,
                    filter: self.filter.as_ref(),
                    thin: self.thin,
                    shallow_thin: self.shallow_thin,
                    ofs_delta: self.ofs_delta,
                },
            )
        }
    }

    fn id() -> impl Strategy<Value = ObjectId> {
        // Few distinct ids, so that generated sets overlap and differ by
        // little.
        (0u8..6).prop_map(|b| ObjectId::from_raw(&[b; 20]).unwrap())
    }

    fn filter() -> impl Strategy<Value = Filter> {
        let leaf = prop_oneof![
            Just(Filter::BlobNone),
            (0u64..4).prop_map(Filter::BlobLimit),
            (0u64..4).prop_map(Filter::TreeDepth),
            prop_oneof![
                Just(gix_object::Kind::Blob),
                Just(gix_object::Kind::Tree),
                Just(gix_object::Kind::Commit),
                Just(gix_object::Kind::Tag)
            ]
            .prop_map(Filter::ObjectType),
        ];
        leaf.prop_recursive(2, 6, 3, |inner| {
            prop::collection::vec(inner, 1..3).prop_map(Filter::Combine)
        })
    }

    fn request() -> impl Strategy<Value = Request> {
        let set = || prop::collection::vec(id(), 0..4);
        (
            prop_oneof![Just("/srv/a.git".to_owned()), Just("/srv/b.git".to_owned())],
            any::<bool>(),
            [set(), set(), set(), set(), set()],
            prop::option::of(filter()),
            [any::<bool>(), any::<bool>(), any::<bool>()],
        )
            .prop_map(
                |(git_dir, sha256, sets, filter, [thin, shallow_thin, ofs_delta])| Request {
                    git_dir,
                    sha256,
                    sets,
                    filter,
                    thin,
                    shallow_thin,
                    ofs_delta,
                },
            )
    }

    /// Whether two requests ask for the same pack: the same fields, sets
    /// compared as sets.
    fn same_inputs(a: &Request, b: &Request) -> bool {
        let as_set = |ids: &[ObjectId]| {
            ids.iter()
                .copied()
                .collect::<std::collections::BTreeSet<_>>()
        };
        a.git_dir == b.git_dir
            && a.sha256 == b.sha256
            && a.filter == b.filter
            && a.thin == b.thin
            && a.shallow_thin == b.shallow_thin
            && a.ofs_delta == b.ofs_delta
            && a.sets
                .iter()
                .zip(&b.sets)
                .all(|(x, y)| as_set(x) == as_set(y))
    }

    proptest! {
        #[test]
        fn requests_share_a_key_exactly_when_their_inputs_are_the_same(
            a in request(),
            b in request(),
        ) {
            prop_assert_eq!(a.key() == b.key(), same_inputs(&a, &b));
        }

        #[test]
        fn changing_any_one_field_changes_the_key(
            a in request(),
            field in 0usize..11,
            extra in id(),
        ) {
            let mut b = a.clone();
            match field {
                0 => b.git_dir.push('x'),
                1 => b.sha256 = !b.sha256,
                2..=6 => {
                    let set = &mut b.sets[field - 2];
                    if set.contains(&extra) {
                        set.retain(|x| *x != extra);
                    } else {
                        set.push(extra);
                    }
                }
                7 => b.filter = match b.filter { None => Some(Filter::BlobNone), Some(_) => None },
                8 => b.thin = !b.thin,
                9 => b.shallow_thin = !b.shallow_thin,
                _ => b.ofs_delta = !b.ofs_delta,
            }
            prop_assert_ne!(a.key(), b.key());
        }

        #[test]
        fn order_and_repeats_do_not_change_the_key(a in request(), seed in any::<u64>()) {
            let mut b = a.clone();
            for (i, set) in b.sets.iter_mut().enumerate() {
                if let Some(first) = set.first().copied() {
                    set.push(first);
                }
                let turn = (seed as usize).wrapping_add(i) % set.len().max(1);
                set.rotate_left(turn);
                set.reverse();
            }
            prop_assert_eq!(a.key(), b.key());
        }
    }

    #[test]
    fn sparse_filters_are_not_cached() {
        let inputs = PackInputs {
            wants: &[],
            common: &[],
            edges: &[],
            grafts: &[],
            tags: &[],
            filter: Some(&Filter::SparseOid("HEAD:sparse".into())),
            thin: false,
            shallow_thin: false,
            ofs_delta: true,
        };
        assert_eq!(pack_key(Path::new("/a"), ObjectFormat::Sha1, &inputs), None);
    }
}
