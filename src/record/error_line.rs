//! How an error is written where bpfbench reports it (the line a failed
//! command ends with, a result's error, a worker's reply): the error and its causes joined by
//! ": ", as anyhow's alternate form writes them, but never ending in an
//! empty reason. A cause with no text of its own, or a message that stops
//! at its colon (a reason interpolated empty), is said to have given none,
//! so the reader knows the reason is missing rather than cut off.

/// What stands where a reason is missing.
pub const NO_REASON: &str = "(no reason given)";

/// `e` in one line of causes, each with a reason.
pub fn error_line(e: &anyhow::Error) -> String {
    let causes: Vec<String> = e.chain().map(|c| c.to_string().trim_end().to_string()).collect();
    let last = causes.len() - 1;
    let mut parts: Vec<String> = Vec::new();
    for (i, text) in causes.into_iter().enumerate() {
        // A colon before the next cause is that cause's place: dropped here, joined below.
        let text = match text.strip_suffix(':') {
            Some(t) if i < last => t.trim_end().to_string(),
            Some(t) => format!("{}: {NO_REASON}", t.trim_end()),
            None => text,
        };
        match (text.is_empty(), i == last) {
            (true, true) => parts.push(NO_REASON.to_string()),
            (true, false) => {}
            (false, _) => parts.push(text),
        }
    }
    parts.join(": ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::{Context, anyhow};

    #[test]
    fn causes_join_as_anyhow_writes_them() {
        let e = Err::<(), _>(anyhow!("no such file")).context("reading a.json").unwrap_err();
        assert_eq!(error_line(&e), format!("{e:#}"));
        assert_eq!(error_line(&e), "reading a.json: no such file");
    }

    #[test]
    fn an_empty_reason_is_said_to_be_missing() {
        let reason = String::new();
        let e = anyhow!("libbpf cannot open x.o (Operation not supported): {reason}");
        assert_eq!(error_line(&e), "libbpf cannot open x.o (Operation not supported): (no reason given)");
        let e = Err::<(), _>(anyhow!("")).context("loading x.o").unwrap_err();
        assert_eq!(error_line(&e), "loading x.o: (no reason given)");
        let io = std::io::Error::other("");
        let e = Err::<(), _>(io).context("writing out.json:").unwrap_err();
        assert_eq!(error_line(&e), "writing out.json: (no reason given)");
        // A colon before a cause that has text is that cause's place.
        let e = Err::<(), _>(anyhow!("refused")).context("attaching:").unwrap_err();
        assert_eq!(error_line(&e), "attaching: refused");
    }
}
