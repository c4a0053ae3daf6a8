//! A strict reader of Prometheus' text exposition format 0.0.4, for
//! tests that check what `/metrics` says. Anything the format does not
//! allow is an error, not skipped: a malformed line, a bad name or label,
//! a family whose samples are not together, a `# HELP`/`# TYPE` after its
//! samples, a series given twice, a sample that does not belong to its
//! declared family's type, or a histogram whose buckets do not add up.

use std::collections::{BTreeMap, HashSet};

/// One metric family: its declared name and type, and its samples.
#[derive(Debug, Clone, PartialEq)]
pub struct Family {
    pub name: String,
    /// `counter`, `gauge`, `histogram`, `summary` or `untyped`.
    pub kind: String,
    pub help: Option<String>,
    pub samples: Vec<Sample>,
}

/// One sample line.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub value: f64,
}

/// A parsed exposition.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Exposition {
    pub families: Vec<Family>,
}

impl Exposition {
    /// The family named `name`.
    pub fn family(&self, name: &str) -> Option<&Family> {
        self.families.iter().find(|f| f.name == name)
    }

    /// Every sample, in order.
    pub fn samples(&self) -> impl Iterator<Item = &Sample> {
        self.families.iter().flat_map(|f| &f.samples)
    }

    /// The samples named `name` whose labels include `labels`.
    pub fn matching<'a>(
        &'a self,
        name: &'a str,
        labels: &'a [(&'a str, &'a str)],
    ) -> impl Iterator<Item = &'a Sample> + 'a {
        self.samples().filter(move |s| {
            s.name == name
                && labels
                    .iter()
                    .all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v))
        })
    }

    /// The value of the one sample named `name` with exactly `labels`.
    pub fn value(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        self.matching(name, labels)
            .find(|s| s.labels.len() == labels.len())
            .map(|s| s.value)
    }

    /// The sum of the samples named `name` whose labels include `labels`.
    pub fn sum(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        self.matching(name, labels).map(|s| s.value).sum()
    }
}

/// Parses `text`; the error names the line at fault.
pub fn parse(text: &str) -> Result<Exposition, String> {
    if !text.is_empty() && !text.ends_with('\n') {
        return Err("the exposition does not end with a newline".into());
    }
    let mut out = Reading::default();
    let mut seen_families = HashSet::new();
    let mut seen_series = HashSet::new();
    for (number, line) in text.lines().enumerate() {
        let fail = |why: String| format!("line {}: {why}: {line:?}", number + 1);
        if line.is_empty() {
            continue;
        }
        if let Some(comment) = line.strip_prefix('#') {
            let words: Vec<&str> = comment.trim_start().splitn(3, ' ').collect();
            let (keyword, name, rest) = match words.as_slice() {
                [k @ ("HELP" | "TYPE"), name, rest] => (*k, *name, *rest),
                [k @ ("HELP" | "TYPE"), name] => (*k, *name, ""),
                _ => continue, // an ordinary comment
            };
            check_metric_name(name).map_err(fail)?;
            let family = current(&mut out, &mut seen_families, name).map_err(fail)?;
            if !family.samples.is_empty() {
                return Err(fail(format!("# {keyword} after the samples of {name}")));
            }
            if keyword == "HELP" {
                if family.help.is_some() {
                    return Err(fail("a second # HELP".into()));
                }
                family.help = Some(unescape(rest, false).map_err(fail)?);
            } else {
                if family.kind != "untyped" || family.typed {
                    return Err(fail("a second # TYPE".into()));
                }
                if !["counter", "gauge", "histogram", "summary", "untyped"].contains(&rest) {
                    return Err(fail(format!("unknown type {rest:?}")));
                }
                family.kind = rest.to_owned();
                family.typed = true;
            }
            continue;
        }
        let sample = parse_sample(line).map_err(fail)?;
        let series = (sample.name.clone(), sample.labels.clone());
        if !seen_series.insert(series) {
            return Err(fail("a series given twice".into()));
        }
        let belongs = out.families.last().is_some_and(|f| {
            suffixes(&f.kind)
                .iter()
                .any(|s| sample.name == format!("{}{s}", f.name))
        });
        if !belongs {
            current(&mut out, &mut seen_families, &sample.name).map_err(fail)?;
        }
        let family = out.families.last_mut().expect("just ensured");
        if family.kind == "counter" && (sample.value.is_nan() || sample.value < 0.0) {
            return Err(fail("a counter below zero".into()));
        }
        family.samples.push(sample);
    }
    let families: Vec<Family> = out.families.into_iter().map(Family::from).collect();
    for family in &families {
        if family.kind == "histogram" {
            check_histogram(family)?;
        }
    }
    Ok(Exposition { families })
}

/// A family being read.
#[derive(Default)]
struct Building {
    name: String,
    kind: String,
    typed: bool,
    help: Option<String>,
    samples: Vec<Sample>,
}

impl From<Building> for Family {
    fn from(b: Building) -> Family {
        Family {
            name: b.name,
            kind: b.kind,
            help: b.help,
            samples: b.samples,
        }
    }
}

/// The families read so far.
#[derive(Default)]
struct Reading {
    families: Vec<Building>,
}

/// The family `name`, the last one read, or a new one; a family that
/// was left earlier cannot come back.
fn current<'a>(
    out: &'a mut Reading,
    seen: &mut HashSet<String>,
    name: &str,
) -> Result<&'a mut Building, String> {
    if out.families.last().is_none_or(|f| f.name != name) {
        if !seen.insert(name.to_owned()) {
            return Err(format!("the samples of {name} are not together"));
        }
        out.families.push(Building {
            name: name.to_owned(),
            kind: "untyped".into(),
            ..Building::default()
        });
    }
    Ok(out.families.last_mut().expect("just pushed"))
}

/// The sample names a family of `kind` may use after its own name.
fn suffixes(kind: &str) -> &'static [&'static str] {
    match kind {
        "histogram" => &["_bucket", "_sum", "_count"],
        "summary" => &["", "_sum", "_count"],
        _ => &[""],
    }
}

fn check_metric_name(name: &str) -> Result<(), String> {
    let mut chars = name.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':');
    if first_ok && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':') {
        Ok(())
    } else {
        Err(format!("bad metric name {name:?}"))
    }
}

fn check_label_name(name: &str) -> Result<(), String> {
    let mut chars = name.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    if first_ok && chars.all(|c| c.is_ascii_alphanumeric() || c == '_') && !name.starts_with("__") {
        Ok(())
    } else {
        Err(format!("bad label name {name:?}"))
    }
}

/// Undoes the escapes of a help text (`\\`, `\n`) or, with `quotes`, of
/// a label value (also `\"`).
fn unescape(text: &str, quotes: bool) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('\\') => out.push('\\'),
            Some('n') => out.push('\n'),
            Some('"') if quotes => out.push('"'),
            other => return Err(format!("bad escape \\{other:?}")),
        }
    }
    Ok(out)
}

fn parse_value(text: &str) -> Result<f64, String> {
    match text {
        "+Inf" => Ok(f64::INFINITY),
        "-Inf" => Ok(f64::NEG_INFINITY),
        "NaN" => Ok(f64::NAN),
        _ if text.contains(|c: char| c.is_ascii_alphabetic() && c != 'e' && c != 'E') => {
            Err(format!("bad value {text:?}"))
        }
        _ => text.parse().map_err(|_| format!("bad value {text:?}")),
    }
}

fn parse_sample(line: &str) -> Result<Sample, String> {
    let name_end = line.find(['{', ' ']).ok_or("no value")?;
    let name = &line[..name_end];
    check_metric_name(name)?;
    let mut rest = &line[name_end..];
    let mut labels = BTreeMap::new();
    if let Some(mut inside) = rest.strip_prefix('{') {
        loop {
            if let Some(after) = inside.strip_prefix('}') {
                rest = after;
                break;
            }
            let eq = inside.find('=').ok_or("a label without a value")?;
            let label = &inside[..eq];
            check_label_name(label)?;
            let quoted = inside[eq + 1..]
                .strip_prefix('"')
                .ok_or("a label value not quoted")?;
            // The closing quote is the first one not escaped.
            let mut end = None;
            let mut escaped = false;
            for (i, c) in quoted.char_indices() {
                match c {
                    _ if escaped => escaped = false,
                    '\\' => escaped = true,
                    '"' => {
                        end = Some(i);
                        break;
                    }
                    _ => {}
                }
            }
            let end = end.ok_or("an unterminated label value")?;
            let value = unescape(&quoted[..end], true)?;
            if labels.insert(label.to_owned(), value).is_some() {
                return Err(format!("label {label} given twice"));
            }
            inside = &quoted[end + 1..];
            if let Some(after) = inside.strip_prefix(',') {
                inside = after;
            } else if !inside.starts_with('}') {
                return Err("labels not separated by ','".into());
            }
        }
    }
    let rest = rest.strip_prefix(' ').ok_or("no space before the value")?;
    let mut fields = rest.split(' ');
    let value = parse_value(fields.next().unwrap_or_default())?;
    if let Some(timestamp) = fields.next() {
        timestamp
            .parse::<i64>()
            .map_err(|_| format!("bad timestamp {timestamp:?}"))?;
    }
    if fields.next().is_some() {
        return Err("text after the timestamp".into());
    }
    Ok(Sample {
        name: name.to_owned(),
        labels,
        value,
    })
}

/// Each series of a histogram has increasing bucket bounds with
/// non-decreasing counts, ending at `+Inf` with its `_count`, and a `_sum`.
fn check_histogram(family: &Family) -> Result<(), String> {
    let name = &family.name;
    let mut series: BTreeMap<BTreeMap<String, String>, Vec<(f64, f64)>> = BTreeMap::new();
    for s in family
        .samples
        .iter()
        .filter(|s| s.name.ends_with("_bucket"))
    {
        let mut labels = s.labels.clone();
        let le = labels
            .remove("le")
            .ok_or_else(|| format!("{name}: a bucket without le"))?;
        series
            .entry(labels)
            .or_default()
            .push((parse_value(&le)?, s.value));
    }
    for (labels, buckets) in &series {
        let ordered = buckets
            .windows(2)
            .all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1);
        if !ordered || buckets.last().map(|b| b.0) != Some(f64::INFINITY) {
            return Err(format!("{name}{labels:?}: buckets out of order or no +Inf"));
        }
        let with = |suffix: &str| {
            family
                .samples
                .iter()
                .find(|s| s.name == format!("{name}{suffix}") && &s.labels == labels)
                .map(|s| s.value)
        };
        if with("_count") != buckets.last().map(|b| b.1) || with("_sum").is_none() {
            return Err(format!("{name}{labels:?}: _count or _sum does not match"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    /// The reader refuses what the format does not allow, and reads what
    /// it does.
    #[test]
    fn the_text_format_reader_is_strict() {
        let good = "\
# HELP a_total Things.\n# TYPE a_total counter\na_total{k=\"v\\\"q\\\\\"} 2\n\
# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 2\nh_sum 3.5\nh_count 2\n\
# a comment\nu 1e3 1700000000000\n";
        let parsed = super::parse(good).unwrap();
        assert_eq!(parsed.value("a_total", &[("k", "v\"q\\")]), Some(2.0));
        assert_eq!(parsed.family("h").unwrap().samples.len(), 4);
        assert_eq!(parsed.family("u").unwrap().kind, "untyped");
        assert_eq!(parsed.value("u", &[]), Some(1000.0));
        for (bad, why) in [
            ("a 1", "no final newline"),
            ("a\n", "no value"),
            ("a one\n", "not a number"),
            ("1a 1\n", "bad metric name"),
            ("a{k=v} 1\n", "label value not quoted"),
            ("a{k=\"v\" j=\"w\"} 1\n", "no comma"),
            ("a{__k=\"v\"} 1\n", "reserved label name"),
            ("a{k=\"v\",k=\"w\"} 1\n", "label twice"),
            ("a{k=\"v\\x\"} 1\n", "bad escape"),
            ("a 1\na 2\n", "series twice"),
            ("a 1\nb 1\na{k=\"v\"} 1\n", "family not together"),
            ("a 1\n# TYPE a gauge\n", "TYPE after samples"),
            ("# TYPE a gauge\n# TYPE a gauge\na 1\n", "TYPE twice"),
            ("# TYPE a meter\na 1\n", "unknown type"),
            ("# TYPE a counter\na -1\n", "counter below zero"),
            ("a 1 2 3\n", "text after timestamp"),
            ("# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_sum 1\nh_count 1\n", "no +Inf"),
            ("# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n", "counts falling"),
            ("# TYPE h histogram\nh_bucket{le=\"+Inf\"} 2\nh_sum 1\nh_count 1\n", "_count not the +Inf bucket"),
        ] {
            assert!(super::parse(bad).is_err(), "accepted {why}: {bad:?}");
        }
    }
}
