//! A table's columns declared once, as veristat declares its statistics:
//! each column's heading and cell for people and its fields for machines.
//! The text and Markdown forms are drawn through [`Grid`], the CSV form
//! from the same list, so a column added appears in every form.

use anyhow::Result;

use super::grid::{Column, Grid};

type Cell<R> = Box<dyn Fn(&R, bool) -> String>;
type Value<R> = Box<dyn Fn(&R) -> String>;

/// One column over rows of type `R`.
pub struct Field<R> {
    /// The heading people read (None: a column for machines only).
    head: Option<Column>,
    /// The cell people read; `true`: the Markdown form's.
    cell: Cell<R>,
    /// Its CSV fields: name and value at full precision (none: for people only).
    csv: Vec<(&'static str, Value<R>)>,
}

impl<R> Field<R> {
    /// A column people read, `cell` filling it, with these CSV fields.
    pub fn shown(
        head: Column,
        cell: impl Fn(&R, bool) -> String + 'static,
        csv: Vec<(&'static str, Value<R>)>,
    ) -> Field<R> {
        Field { head: Some(head), cell: Box::new(cell), csv }
    }

    /// CSV fields only, for machines.
    pub fn machines_only(csv: Vec<(&'static str, Value<R>)>) -> Field<R> {
        Field { head: None, cell: Box::new(|_, _| String::new()), csv }
    }
}

/// A CSV field named `name` whose value `value` gives.
pub fn value<R>(name: &'static str, value: impl Fn(&R) -> String + 'static) -> (&'static str, Value<R>) {
    (name, Box::new(value))
}

/// The columns of one table.
pub struct Table<R> {
    pub fields: Vec<Field<R>>,
}

impl<R> Table<R> {
    /// The rows for people, as a grid (more rows may be added to it).
    pub fn grid<'r>(&self, rows: impl IntoIterator<Item = &'r R>, markdown: bool) -> Grid
    where
        R: 'r,
    {
        self.grid_noted(rows, markdown, |_, _| {})
    }

    /// The rows for people, `notes` adding lines under each row.
    pub fn grid_noted<'r>(
        &self,
        rows: impl IntoIterator<Item = &'r R>,
        markdown: bool,
        notes: impl Fn(&R, &mut Grid),
    ) -> Grid
    where
        R: 'r,
    {
        let shown: Vec<&Field<R>> = self.fields.iter().filter(|f| f.head.is_some()).collect();
        let mut g = Grid::new(shown.iter().filter_map(|f| f.head.clone()).collect());
        for r in rows {
            g.row(shown.iter().map(|f| (f.cell)(r, markdown)).collect());
            notes(r, &mut g);
        }
        g
    }

    /// The rows for machines: a heading line of field names, a line per row.
    pub fn csv<'r>(&self, rows: impl IntoIterator<Item = &'r R>) -> Result<String>
    where
        R: 'r,
    {
        let fields: Vec<&(&'static str, Value<R>)> = self.fields.iter().flat_map(|f| &f.csv).collect();
        let mut w = csv::Writer::from_writer(Vec::new());
        w.write_record(fields.iter().map(|(name, _)| *name))?;
        for r in rows {
            w.write_record(fields.iter().map(|(_, value)| value(r)))?;
        }
        Ok(String::from_utf8(w.into_inner()?)?)
    }
}

/// The columns every comparison of A and B starts with: the benchmark,
/// both medians, B/A and its 95% interval (people read two decimals of
/// ns and four of a ratio; machines get more).
pub fn ratio_fields<R: 'static>(
    name: fn(&R) -> String,
    a: fn(&R) -> f64,
    b: fn(&R) -> f64,
    ratio: fn(&R) -> f64,
    ci: fn(&R) -> (f64, f64),
) -> Vec<Field<R>> {
    use super::grid::{left, right};
    // Shown to `places` decimals, written for machines with one more.
    let number = |head: &'static str, key: &'static str, places: usize, f: fn(&R) -> f64| {
        Field::shown(
            right(head),
            move |r, _| format!("{:.places$}", f(r)),
            vec![value(key, move |r| format!("{:.1$}", f(r), places + 1))],
        )
    };
    vec![
        Field::shown(left("benchmark"), move |r, _| name(r), vec![value("benchmark", name)]),
        number("A ns/op", "median_a_ns", 2, a),
        number("B ns/op", "median_b_ns", 2, b),
        number("B/A", "ratio", 4, ratio),
        Field::shown(
            left("95 % CI"),
            move |r, _| format!("[{:.4}, {:.4}]", ci(r).0, ci(r).1),
            vec![
                value("ci95_low", move |r| format!("{:.5}", ci(r).0)),
                value("ci95_high", move |r| format!("{:.5}", ci(r).1)),
            ],
        ),
    ]
}
