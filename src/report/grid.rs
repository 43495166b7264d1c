//! A table sized to its content: the columns are declared once, rows are
//! added as cells, and every form (boxed text, plain text, Markdown) is
//! drawn from the same columns. No column has a fixed width, so a long
//! scenario name or a wide figure moves its whole column, never one row.

/// Where a column's cells sit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    Left,
    Right,
}

/// A column: its heading and alignment.
#[derive(Debug, Clone)]
pub struct Column {
    pub head: String,
    pub align: Align,
}

/// A left-aligned column headed `head`.
pub fn left(head: impl Into<String>) -> Column {
    Column { head: head.into(), align: Align::Left }
}

/// A right-aligned column headed `head` (figures).
pub fn right(head: impl Into<String>) -> Column {
    Column { head: head.into(), align: Align::Right }
}

#[derive(Debug, Clone)]
enum Line {
    /// One cell per column.
    Cells(Vec<String>),
    /// Text in the first column, then one text spanning the others (a row
    /// that has no figures: "VALIDATION FAILED").
    Spanning(String, String),
    /// A line under the row before it, as given (with its own
    /// indentation); not part of any column ("refused: ...", a changed
    /// line of code).
    Note(String),
    /// A new section headed by the text in the first column (a scenario
    /// group); the other headings repeat.
    Section(String),
}

/// Rows under declared columns.
#[derive(Debug, Clone)]
pub struct Grid {
    columns: Vec<Column>,
    lines: Vec<Line>,
}

fn width(s: &str) -> usize {
    s.chars().count()
}

fn pad(s: &str, w: usize, align: Align) -> String {
    match align {
        Align::Left => format!("{s:<w$}"),
        Align::Right => format!("{s:>w$}"),
    }
}

impl Grid {
    pub fn new(columns: Vec<Column>) -> Grid {
        Grid { columns, lines: Vec::new() }
    }

    /// A row of one cell per column (missing cells are empty, extra ones dropped).
    pub fn row(&mut self, mut cells: Vec<String>) {
        cells.resize(self.columns.len(), String::new());
        self.lines.push(Line::Cells(cells));
    }

    /// A row whose first cell is `first` and whose other columns hold `text`.
    pub fn spanning(&mut self, first: impl Into<String>, text: impl Into<String>) {
        self.lines.push(Line::Spanning(first.into(), text.into()));
    }

    /// A line under the last row, outside the columns, as given.
    pub fn note(&mut self, text: impl Into<String>) {
        self.lines.push(Line::Note(text.into()));
    }

    /// Starts a section whose heading row names it in the first column.
    pub fn section(&mut self, name: impl Into<String>) {
        self.lines.push(Line::Section(name.into()));
    }

    pub fn is_empty(&self) -> bool {
        !self.lines.iter().any(|l| matches!(l, Line::Cells(_) | Line::Spanning(..)))
    }

    /// Each column's width: its widest cell or heading; a spanning text
    /// widens the last column when it does not fit the others.
    fn widths(&self, sep: usize) -> Vec<usize> {
        let mut w: Vec<usize> = self.columns.iter().map(|c| width(&c.head)).collect();
        for line in &self.lines {
            match line {
                Line::Cells(cells) => {
                    for (w, c) in w.iter_mut().zip(cells) {
                        *w = (*w).max(width(c));
                    }
                }
                Line::Spanning(first, _) | Line::Section(first) => w[0] = w[0].max(width(first)),
                Line::Note(_) => {}
            }
        }
        let rest = |w: &[usize]| w[1..].iter().sum::<usize>() + sep * (w.len() - 2);
        for line in &self.lines {
            if let Line::Spanning(_, text) = line
                && w.len() > 1
            {
                let have = rest(&w);
                if width(text) > have {
                    *w.last_mut().expect("two columns") += width(text) - have;
                }
            }
        }
        w
    }

    fn heads(&self, first: &str) -> Vec<String> {
        let mut h: Vec<String> = self.columns.iter().map(|c| c.head.clone()).collect();
        h[0] = first.to_string();
        h
    }

    /// Framed text in the manner of the selftests' tables: `+---+` rules,
    /// `|` between cells, a heading row per section.
    pub fn boxed(&self) -> String {
        let w = self.widths(3);
        let rule = {
            let mut s = String::from("+");
            for w in &w {
                s.push_str(&"-".repeat(w + 2));
                s.push('+');
            }
            s + "\n"
        };
        let cells = |cells: &[String]| {
            let mut s = String::from("|");
            for ((c, w), col) in cells.iter().zip(&w).zip(&self.columns) {
                s.push(' ');
                s.push_str(&pad(c, *w, col.align));
                s.push_str(" |");
            }
            s + "\n"
        };
        let mut out = String::new();
        let mut sectioned = false;
        for line in &self.lines {
            match line {
                Line::Section(name) => {
                    out.push_str(&rule);
                    out.push_str(&cells(&self.heads(name)));
                    out.push_str(&rule);
                    sectioned = true;
                }
                Line::Cells(c) => {
                    if !sectioned {
                        out.push_str(&rule);
                        out.push_str(&cells(&self.heads(&self.columns[0].head)));
                        out.push_str(&rule);
                        sectioned = true;
                    }
                    out.push_str(&cells(c));
                }
                Line::Spanning(first, text) => {
                    let span = w[1..].iter().sum::<usize>() + 3 * (w.len() - 2);
                    out.push_str(&format!("| {:<a$} | {:<b$} |\n", first, text, a = w[0], b = span));
                }
                Line::Note(text) => out.push_str(&format!("{text}\n")),
            }
        }
        if sectioned {
            out.push_str(&rule);
        }
        out
    }

    /// Plain text: two spaces between columns, a heading row, notes under
    /// their row.
    pub fn plain(&self) -> String {
        let w = self.widths(2);
        let line = |cells: &[String]| {
            let mut s = String::new();
            for (i, ((c, w), col)) in cells.iter().zip(&w).zip(&self.columns).enumerate() {
                if i > 0 {
                    s.push_str("  ");
                }
                s.push_str(&pad(c, *w, col.align));
            }
            s.trim_end().to_string() + "\n"
        };
        let mut out = String::new();
        // A grid of no rows still shows its heading.
        let mut headed = false;
        if !matches!(self.lines.first(), Some(Line::Section(_))) {
            out.push_str(&line(&self.heads(&self.columns[0].head)));
            headed = true;
        }
        for l in &self.lines {
            match l {
                Line::Section(name) => {
                    if !out.is_empty() {
                        out.push('\n');
                    }
                    out.push_str(&line(&self.heads(name)));
                    headed = true;
                }
                Line::Cells(c) => {
                    if !headed {
                        out.push_str(&line(&self.heads(&self.columns[0].head)));
                        headed = true;
                    }
                    out.push_str(&line(c));
                }
                Line::Spanning(first, text) => {
                    out.push_str(format!("{:<a$}  {}", first, text, a = w[0]).trim_end());
                    out.push('\n');
                }
                Line::Note(text) => out.push_str(&format!("{text}\n")),
            }
        }
        out
    }

    /// A Markdown table: a cell holds no `|` or line break of its own;
    /// sections and notes become rows of their own.
    pub fn markdown(&self) -> String {
        let cell = super::markdown_cell;
        let row = |cells: &[String]| format!("| {} |\n", cells.iter().map(|c| cell(c)).collect::<Vec<_>>().join(" | "));
        let mut out = row(&self.columns.iter().map(|c| c.head.clone()).collect::<Vec<_>>());
        out.push('|');
        for c in &self.columns {
            out.push_str(if c.align == Align::Right { " ---: |" } else { " --- |" });
        }
        out.push('\n');
        let n = self.columns.len();
        for l in &self.lines {
            let mut cells = vec![String::new(); n];
            match l {
                Line::Cells(c) => cells.clone_from(c),
                Line::Spanning(first, text) => {
                    cells[0].clone_from(first);
                    if n > 1 {
                        cells[1].clone_from(text);
                    }
                }
                Line::Section(name) => cells[0] = format!("**{name}**"),
                Line::Note(text) => cells[0] = format!("↳ {}", text.trim_start()),
            }
            out.push_str(&row(&cells));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Grid {
        let mut g = Grid::new(vec![left("scenario"), right("p50"), right("n")]);
        g.section("Basic");
        g.row(vec!["tcp-v4".into(), "12.50".into(), "200".into()]);
        g.row(vec!["tcp-v4v6-lru-hit-with-a-long-name".into(), "1234567.25".into(), "2".into()]);
        g.spanning("broken", "VALIDATION FAILED and a long reason that is wider than the figures");
        g.note("    refused: because");
        g
    }

    /// The offsets of `marks` in each line, for lines that have any.
    fn marks(text: &str, marks: &[char]) -> Vec<Vec<usize>> {
        text.lines()
            .map(|l| l.chars().enumerate().filter(|(_, c)| marks.contains(c)).map(|(i, _)| i).collect::<Vec<_>>())
            .filter(|m| !m.is_empty())
            .collect()
    }

    #[test]
    fn boxed_rows_put_every_bar_under_the_rules_plus() {
        let text = sample().boxed();
        let rules: Vec<Vec<usize>> =
            text.lines().filter(|l| l.starts_with('+')).map(|l| marks(l, &['+'])[0].clone()).collect();
        for l in text.lines().filter(|l| l.starts_with("| ") && !l.contains("VALIDATION")) {
            assert_eq!(marks(l, &['|'])[0], rules[0], "{l:?} in\n{text}");
        }
        let span = text.lines().find(|l| l.contains("VALIDATION")).unwrap();
        let bars = &marks(span, &['|'])[0];
        assert_eq!(bars.first(), rules[0].first());
        assert_eq!(bars.last(), rules[0].last(), "the spanning row closes at the table's edge:\n{text}");
        assert_eq!(bars[1], rules[0][1], "its first cell is the first column:\n{text}");
    }

    #[test]
    fn plain_columns_end_where_their_heading_ends() {
        let text = sample().plain();
        let lines: Vec<&str> = text.lines().collect();
        let head = lines[0];
        let p50_end = head.find("p50").unwrap() + 3;
        for l in &lines[1..3] {
            let cell_end = l.split("  ").filter(|c| !c.is_empty()).nth(1).map(|c| l.find(c).unwrap() + c.len());
            assert_eq!(cell_end, Some(p50_end), "{l:?} in\n{text}");
        }
    }

    #[test]
    fn markdown_has_one_cell_per_column_in_every_row() {
        let text = sample().markdown();
        for l in text.lines() {
            assert_eq!(l.matches(" | ").count(), 2, "{l:?}");
        }
    }
}
