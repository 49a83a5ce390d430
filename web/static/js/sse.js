// Server-sent events framing (the text/event-stream format), pure: serve's
// GET /api/clusters/{name}/events is read with fetch (so that it carries the
// bearer token, which EventSource cannot send) and cut into events here.

/**
 * takeEvents cuts the complete events off the front of buf. Returns
 * {events: [{event, data}], rest} where rest is the incomplete tail to keep.
 * Comment lines (":") and events without data are skipped; "data" lines of
 * one event are joined with "\n"; CRLF and CR line ends are accepted.
 */
export function takeEvents(buf) {
  const text = buf.replace(/\r\n?/g, '\n');
  const events = [];
  let start = 0;
  for (;;) {
    const end = text.indexOf('\n\n', start);
    if (end < 0) break;
    const ev = parseEvent(text.slice(start, end));
    if (ev) events.push(ev);
    start = end + 2;
  }
  return { events, rest: text.slice(start) };
}

/** parseEvent reads one event's lines; null when it has no data. */
export function parseEvent(block) {
  let event = 'message';
  const data = [];
  for (const line of block.split('\n')) {
    if (line === '' || line.startsWith(':')) continue;
    const i = line.indexOf(':');
    const field = i < 0 ? line : line.slice(0, i);
    let value = i < 0 ? '' : line.slice(i + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') event = value;
    else if (field === 'data') data.push(value);
  }
  return data.length ? { event, data: data.join('\n') } : null;
}
