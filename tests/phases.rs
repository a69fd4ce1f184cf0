//! The phase lists outside the crate follow its one list, `cuzk::timings::SPANS`: the duration
//! fields of `cuzk_timings` in include/cuzk.h, the Go package's `Timings.Phases` and the fields
//! it reads, the timings table of the C examples (examples/example_util.h) and the phase table of
//! scripts/bench-table.py. A failure names the file and the phase that drifted.

use cuzk::timings::{Role, SPANS};

fn read(path: &str) -> String {
    std::fs::read_to_string(format!("{}/{path}", env!("CARGO_MANIFEST_DIR"))).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The lines of `source` from the one that starts with `start` (indentation aside) up to the
/// next one that is `end`.
fn block<'a>(path: &str, source: &'a str, start: &str, end: &str) -> Vec<&'a str> {
    let lines: Vec<&str> = source.lines().collect();
    let from = lines
        .iter()
        .position(|line| line.trim_start().starts_with(start))
        .unwrap_or_else(|| panic!("{path}: no line starting with {start:?}"));
    let len = lines[from..]
        .iter()
        .position(|line| line.trim() == end)
        .unwrap_or_else(|| panic!("{path}: {start:?} is not closed by {end:?}"));
    lines[from..from + len].to_vec()
}

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The identifier at the start of `text`.
fn ident(text: &str) -> &str {
    &text[..text.find(|c| !is_ident_char(c)).unwrap_or(text.len())]
}

/// The identifiers right after each `prefix` in `lines`, in order.
fn idents_after<'a>(lines: &[&'a str], prefix: &str) -> Vec<&'a str> {
    lines
        .iter()
        .flat_map(|line| line.match_indices(prefix).map(move |(at, _)| ident(&line[at + prefix.len()..])))
        .collect()
}

/// The first string literal of `line`.
fn quoted(line: &str) -> Option<&str> {
    let rest = &line[line.find('"')? + 1..];
    Some(&rest[..rest.find('"')?])
}

/// The names a file lists after "not shown:", up to the next '.': the phases its table leaves
/// out.
fn not_shown<'a>(path: &str, source: &'a str) -> Vec<&'a str> {
    let at = source
        .to_ascii_lowercase()
        .find("not shown:")
        .unwrap_or_else(|| panic!("{path}: no \"not shown:\" list"));
    let rest = &source[at + "not shown:".len()..];
    let end = rest
        .find('.')
        .unwrap_or_else(|| panic!("{path}: the \"not shown:\" list does not end with '.'"));
    rest[..end].split(|c| !is_ident_char(c)).filter(|name| !name.is_empty()).collect()
}

fn phase_names() -> Vec<&'static str> {
    SPANS.iter().filter(|span| span.role == Role::Phase).map(|span| span.name).collect()
}

fn span_names() -> Vec<&'static str> {
    SPANS.iter().map(|span| span.name).collect()
}

/// Checks the names a file's table shows, plus those it says it leaves out, against
/// `expected`: none missing, none unknown, none twice, and with `in_order` the shown ones in
/// the order of `expected`. Each problem is one line of `errors`.
fn check_table(path: &str, shown: &[&str], left_out: &[&str], expected: &[&str], in_order: bool, errors: &mut Vec<String>) {
    for (i, name) in shown.iter().enumerate().filter(|&(i, name)| shown[..i].contains(name)) {
        errors.push(format!("{path}: shows the phase {name} twice (entry {})", i + 1));
    }
    for name in shown.iter().filter(|name| left_out.contains(name)) {
        errors.push(format!("{path}: shows the phase {name} and lists it as not shown"));
    }
    for name in expected.iter().filter(|name| !shown.contains(name) && !left_out.contains(name)) {
        errors.push(format!("{path}: lacks the phase {name}"));
    }
    for name in shown.iter().chain(left_out).filter(|name| !expected.contains(name)) {
        errors.push(format!("{path}: has {name}, not a phase of src/timings.rs SPANS"));
    }
    if in_order {
        let known: Vec<(usize, &str)> = shown
            .iter()
            .filter_map(|name| Some((expected.iter().position(|e| e == name)?, *name)))
            .collect();
        if let Some(pair) = known.windows(2).find(|pair| pair[1].0 < pair[0].0) {
            errors.push(format!(
                "{path}: shows the phase {} after {}, out of the order of src/timings.rs SPANS",
                pair[1].1, pair[0].1
            ));
        }
    }
}

fn report(errors: Vec<String>) {
    assert!(errors.is_empty(), "drifted from src/timings.rs SPANS:\n{}", errors.join("\n"));
}

/// `cuzk_timings` has a field for each span, and no other duration but `total_ns`.
#[test]
fn header_has_a_field_for_each_span() {
    let path = "include/cuzk.h";
    let header = read(path);
    let fields = idents_after(&block(path, &header, "typedef struct cuzk_timings {", "} cuzk_timings;"), "uint64_t ");
    let mut errors = Vec::new();
    if !fields.contains(&"total_ns") {
        errors.push(format!("{path}: cuzk_timings has no total_ns"));
    }
    for span in SPANS.iter().filter(|span| !fields.contains(&span.field)) {
        errors.push(format!("{path}: cuzk_timings lacks {}, the field of the phase {}", span.field, span.name));
    }
    for field in fields
        .iter()
        .filter(|f| f.ends_with("_ns") && **f != "total_ns" && !SPANS.iter().any(|span| span.field == **f))
    {
        errors.push(format!("{path}: cuzk_timings has {field}, the field of no phase in src/timings.rs SPANS"));
    }
    report(errors);
}

/// `Timings.Phases` lists the phases in order, each from its span's field, and
/// `timingsFromC` reads every span's field.
#[test]
fn go_phases_follow_the_spans() {
    let path = "cuzkffi/timings.go";
    let go = read(path);
    // `Field: nanos(ct.field),` lines: the Go field that holds each C field.
    let from_c: Vec<(&str, &str)> = block(path, &go, "func timingsFromC(", "}")
        .iter()
        .filter_map(|line| {
            let (go_field, value) = line.trim().split_once(':')?;
            Some((go_field, ident(value.trim().strip_prefix("nanos(ct.")?)))
        })
        .collect();
    // `{"name", t.Field},` lines; a method (`t.spmvOnGPU()`) derives its phase from fields.
    let entries: Vec<(&str, &str)> = block(path, &go, "func (t Timings) Phases() []Phase {", "}")
        .iter()
        .filter_map(|line| Some((quoted(line)?, line.split_once(", t.")?.1.trim_end_matches("},"))))
        .collect();
    let names: Vec<&str> = entries.iter().map(|(name, _)| *name).collect();
    let mut errors = Vec::new();
    check_table(path, &names, &[], &phase_names(), true, &mut errors);
    for (name, go_field) in entries.iter().filter(|(_, expr)| !expr.ends_with(')')) {
        let Some(span) = SPANS.iter().find(|span| span.name == *name) else {
            continue;
        };
        let c_field = from_c.iter().find(|(g, _)| g == go_field).map(|(_, c)| *c);
        if c_field != Some(span.field) {
            errors.push(format!(
                "{path}: Phases gives the phase {name} as t.{go_field}, which timingsFromC reads from {c_field:?}, not {}",
                span.field
            ));
        }
    }
    for field in SPANS.iter().map(|span| span.field).chain(["total_ns"]) {
        if !from_c.iter().any(|(_, c)| *c == field) {
            errors.push(format!("{path}: timingsFromC does not read {field}"));
        }
    }
    report(errors);
}

/// The example's table shows phases, each by its span's field, and names the ones it leaves
/// out. Its rows are a display, so their order is its own.
#[test]
fn c_example_table_follows_the_spans() {
    let path = "examples/example_util.h";
    let c = read(path);
    let fields = idents_after(
        &block(path, &c, "const struct { const char *name; uint64_t ns; } rows[] = {", "};"),
        "t->",
    );
    let mut errors = Vec::new();
    let shown: Vec<&str> = fields
        .iter()
        .filter_map(|field| {
            let span = SPANS.iter().find(|span| span.role == Role::Phase && span.field == *field);
            if span.is_none() {
                errors.push(format!(
                    "{path}: the timings table shows {field}, the field of no phase in src/timings.rs SPANS"
                ));
            }
            Some(span?.name)
        })
        .collect();
    check_table(path, &shown, &not_shown(path, &c), &phase_names(), false, &mut errors);
    report(errors);
}

/// The script's phase rows are spans (phases and their parts) by their "<name>_s" keys, in
/// order, and it names the ones it leaves out.
#[test]
fn bench_table_rows_follow_the_spans() {
    let path = "scripts/bench-table.py";
    let py = read(path);
    let mut errors = Vec::new();
    let shown: Vec<&str> = block(path, &py, "CUZK_PHASES = [", "]")
        .iter()
        .filter_map(|line| quoted(line))
        .filter_map(|key| {
            let name = key.strip_suffix("_s");
            if name.is_none() {
                errors.push(format!("{path}: CUZK_PHASES has the key {key}, not a \"<span>_s\" key"));
            }
            name
        })
        .collect();
    check_table(path, &shown, &not_shown(path, &py), &span_names(), true, &mut errors);
    report(errors);
}
