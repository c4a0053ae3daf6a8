//! Comparing git's answer to a request with refstore's: every pkt-line
//! byte for byte, pack data by the objects it holds, progress by being
//! there, after the deliberate differences (`differences.rs`) are
//! normalised.

use super::differences::{self, Context};
use super::packs;
use super::server::Answer;
use super::stream::{self, Item};
use std::path::Path;

/// Where the comparison runs: the served repository completes thin
/// packs, `scratch` holds the packs while they are indexed.
pub struct Place<'a> {
    pub home: &'a Path,
    pub repo: &'a Path,
    pub scratch: &'a Path,
    /// The client asked for `ofs-delta`: packs may hold offset deltas.
    pub ofs_delta: bool,
}

/// `Ok` if refstore's answer is git's; otherwise what differs, with both
/// answers.
pub fn compare(
    place: &Place<'_>,
    context: &Context,
    sideband: bool,
    git: &Answer,
    ours: &Answer,
) -> Result<(), String> {
    let mut theirs_items = stream::parse(&git.stdout, sideband);
    let mut our_items = stream::parse(&ours.stdout, sideband);
    differences::normalise(context, &mut theirs_items, &mut our_items);
    let explain = |what: String| {
        format!(
            "{what}\n  git ({}):\n{}\n  refstore ({}):\n{}",
            if git.success { "ok" } else { "failed" },
            listing(&theirs_items, &git.stderr),
            if ours.success { "ok" } else { "failed" },
            listing(&our_items, &ours.stderr),
        )
    };
    let whole = same_items(place, &theirs_items, &our_items).map_err(&explain);
    if whole.is_err() {
        let cuts = [
            differences::v2_session_grafts_cut(context, &theirs_items, &our_items),
            differences::deepen_relative_since_2_54_cut(context, &theirs_items, &our_items)
                .map(|cut| (cut, cut)),
        ];
        for (theirs_cut, ours_cut) in cuts.into_iter().flatten() {
            // A listed difference from the cut on: the answers agree up
            // to it, and the request is counted.
            let before_cut = &theirs_items[..theirs_cut];
            if same_items(place, before_cut, &our_items[..ours_cut]).is_ok() {
                let known = &context.known_pack_differences;
                known.set(known.get() + 1);
                return Ok(());
            }
        }
    }
    whole?;
    if git.success != ours.success {
        return Err(explain("one failed, the other did not".to_owned()));
    }
    Ok(())
}

/// Item by item: pkt-lines by their bytes, side-band sections by their
/// progress, errors and data.
fn same_items(place: &Place<'_>, theirs_items: &[Item], our_items: &[Item]) -> Result<(), String> {
    if theirs_items.len() != our_items.len() {
        return Err("a different number of packets".to_owned());
    }
    for (i, (theirs, ours)) in theirs_items.iter().zip(our_items).enumerate() {
        let same = match (theirs, ours) {
            (Item::Sideband(a), Item::Sideband(b)) => {
                a.progress == b.progress
                    && a.errors == b.errors
                    && same_data(place, &a.data, &b.data).map_err(|e| format!("item {i}: {e}"))?
            }
            (Item::RawPack(a), Item::RawPack(b)) => {
                same_data(place, a, b).map_err(|e| format!("item {i}: {e}"))?
            }
            (a, b) => a == b,
        };
        if !same {
            return Err(format!("item {i} differs"));
        }
    }
    Ok(())
}

/// Side-band data: packs by their objects, anything else by its bytes.
fn same_data(place: &Place<'_>, theirs: &[u8], ours: &[u8]) -> Result<bool, String> {
    if !(theirs.starts_with(b"PACK") && ours.starts_with(b"PACK")) {
        return Ok(theirs == ours);
    }
    let theirs = packs::objects(place.home, place.repo, place.scratch, theirs)
        .map_err(|e| format!("git's pack: {e}"))?;
    let ours = packs::objects(place.home, place.repo, place.scratch, ours)
        .map_err(|e| format!("refstore's pack: {e}"))?;
    if !place.ofs_delta {
        assert_eq!(theirs.offset_deltas, 0, "git sent offset deltas unasked");
        if ours.offset_deltas > 0 {
            return Err(format!(
                "refstore's pack has {} offset deltas, but the client did not ask for ofs-delta",
                ours.offset_deltas
            ));
        }
    }
    let (theirs_objects, our_objects) = (theirs.ids, ours.ids);
    if theirs_objects != our_objects {
        let only_theirs: Vec<_> = theirs_objects.difference(&our_objects).collect();
        let only_ours: Vec<_> = our_objects.difference(&theirs_objects).collect();
        return Err(format!(
            "the packs hold different objects: {} only in git's {only_theirs:?}, {} only in refstore's {only_ours:?}",
            only_theirs.len(),
            only_ours.len()
        ));
    }
    Ok(true)
}

fn listing(items: &[Item], stderr: &str) -> String {
    let mut out: String = items.iter().map(|item| format!("    {item:?}\n")).collect();
    if !stderr.is_empty() {
        out.push_str(&format!(
            "    stderr: {}\n",
            stderr.trim_end().replace('\n', "\n            ")
        ));
    }
    out
}
