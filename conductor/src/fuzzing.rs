//! Entry points of the fuzz targets (`fuzz/` in the repository), behind the `fuzzing` feature:
//! the trace reader and the viewer's inputs, on arbitrary input. Not part of the API.

use crate::trace::serve;

/// `conductor trace summarise` on any text: a summary or an error saying which line is wrong,
/// never a panic.
pub fn trace_summary(text: &str) {
    let _ = crate::trace::summary::summarise(text);
}

/// The viewer's resume point (`Last-Event-ID`, `?from=`): any header and any query give a
/// line to start from, and an event id gives the line after it.
pub fn viewer_resume(last_event_id: &[u8], from: &str) {
    let start = serve::resume_from(Some(last_event_id), Some(from));
    if let Some(last) = std::str::from_utf8(last_event_id)
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
    {
        assert_eq!(start, last.saturating_add(1));
    }
    let _ = serve::resume_from(None, Some(from));
}

/// The viewer's export: the trace goes into the page's data script, whatever it holds, and
/// cannot end that script early.
pub fn viewer_export(trace: &str) {
    let page = serve::export_page(trace);
    let open = "<script id=\"trace-data\" type=\"application/x-ndjson\">";
    let start = page.find(open).expect("the data script") + open.len();
    let data = &page[start..];
    let end = data.find("</").expect("the data script ends");
    assert!(
        data[end..].starts_with("</script>"),
        "the trace ended its script early"
    );
    // In JSON text (a trace's lines) `<\/` is `</`: the same lines.
    assert_eq!(
        data[..end].replace("<\\/", "</"),
        trace.replace("<\\/", "</"),
        "the exported data is the trace"
    );
}
