//! The two text formats `/metrics` speaks. `prometheus-client` writes
//! OpenMetrics 1.0; scrapers that do not ask for it (`Accept`) get
//! Prometheus' text format 0.0.4, which differs from it in what this
//! server's series use only in three ways: a counter's `# HELP`/`# TYPE`
//! lines name the sample (`x_total`, where OpenMetrics names the family
//! `x`), there are no `# UNIT` lines, and there is no `# EOF` line. An
//! `unknown` type is 0.0.4's `untyped`.

use std::collections::HashSet;

/// The content type of Prometheus' text format.
pub const PROMETHEUS_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The content type of OpenMetrics' text format.
pub const OPENMETRICS_CONTENT_TYPE: &str =
    "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Whether an `Accept` header value asks for OpenMetrics (with any
/// non-zero quality; Prometheus sends it first, with 0.0.4 as a fallback).
pub fn accepts_openmetrics(accept: &str) -> bool {
    accept.split(',').any(|range| {
        let mut parts = range.split(';').map(str::trim);
        let media = parts.next().unwrap_or_default();
        let refused = parts.any(|p| {
            p.strip_prefix("q=")
                .and_then(|q| q.parse::<f64>().ok())
                .is_some_and(|q| q <= 0.0)
        });
        media.eq_ignore_ascii_case("application/openmetrics-text") && !refused
    })
}

/// `openmetrics` (as `prometheus-client` writes it) in text format 0.0.4.
pub fn to_prometheus_text(openmetrics: &str) -> String {
    let counters: HashSet<&str> = openmetrics
        .lines()
        .filter_map(|line| line.strip_prefix("# TYPE "))
        .filter_map(|rest| rest.strip_suffix(" counter"))
        .collect();
    let mut out = String::with_capacity(openmetrics.len() + 16 * counters.len());
    for line in openmetrics.lines() {
        if line == "# EOF" || line.starts_with("# UNIT ") {
            continue;
        }
        let descriptor = ["# HELP ", "# TYPE "]
            .into_iter()
            .find_map(|keyword| Some((keyword, line.strip_prefix(keyword)?)));
        match descriptor {
            Some((keyword, rest)) => {
                let (name, tail) = rest.split_once(' ').unwrap_or((rest, ""));
                out.push_str(keyword);
                out.push_str(name);
                if counters.contains(name) {
                    out.push_str("_total");
                }
                out.push(' ');
                out.push_str(if keyword == "# TYPE " && tail == "unknown" {
                    "untyped"
                } else {
                    tail
                });
            }
            None => out.push_str(line),
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_are_named_by_their_samples_and_openmetrics_lines_go() {
        let openmetrics = "\
# HELP refstore_pushes Pushes that updated refs.
# TYPE refstore_pushes counter
refstore_pushes_total 3
# HELP refstore_active_connections Connections open now.
# TYPE refstore_active_connections gauge
refstore_active_connections{transport=\"http\"} 1
# HELP refstore_flush_seconds Time of one flush point.
# TYPE refstore_flush_seconds histogram
# UNIT refstore_flush_seconds seconds
refstore_flush_seconds_sum{mechanism=\"syncfs\"} 0.5
refstore_flush_seconds_count{mechanism=\"syncfs\"} 2
refstore_flush_seconds_bucket{le=\"+Inf\",mechanism=\"syncfs\"} 2
# HELP refstore_odd Something else.
# TYPE refstore_odd unknown
refstore_odd 1
# EOF
";
        assert_eq!(
            to_prometheus_text(openmetrics),
            "\
# HELP refstore_pushes_total Pushes that updated refs.
# TYPE refstore_pushes_total counter
refstore_pushes_total 3
# HELP refstore_active_connections Connections open now.
# TYPE refstore_active_connections gauge
refstore_active_connections{transport=\"http\"} 1
# HELP refstore_flush_seconds Time of one flush point.
# TYPE refstore_flush_seconds histogram
refstore_flush_seconds_sum{mechanism=\"syncfs\"} 0.5
refstore_flush_seconds_count{mechanism=\"syncfs\"} 2
refstore_flush_seconds_bucket{le=\"+Inf\",mechanism=\"syncfs\"} 2
# HELP refstore_odd Something else.
# TYPE refstore_odd untyped
refstore_odd 1
"
        );
    }

    #[test]
    fn openmetrics_is_chosen_only_when_asked_for() {
        let prometheus = "application/openmetrics-text;version=1.0.0;q=0.5,\
            application/openmetrics-text;version=0.0.1;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2";
        assert!(accepts_openmetrics(prometheus));
        assert!(accepts_openmetrics("Application/OpenMetrics-Text"));
        assert!(!accepts_openmetrics("application/openmetrics-text; q=0"));
        assert!(!accepts_openmetrics("text/plain;version=0.0.4"));
        assert!(!accepts_openmetrics("*/*"));
        assert!(!accepts_openmetrics(""));
    }
}
