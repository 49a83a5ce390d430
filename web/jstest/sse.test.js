import { test, eq } from './t.js';
import { takeEvents, parseEvent } from '../static/js/sse.js';

test('sse: complete events are taken, the tail is kept', () => {
  const r = takeEvents('event: cluster\ndata: {"a":1}\n\n: keep-alive\n\nevent: cluster\ndata: {"a"');
  eq(r.events, [{ event: 'cluster', data: '{"a":1}' }]);
  eq(r.rest, 'event: cluster\ndata: {"a"');
  const r2 = takeEvents(r.rest + ':2}\n\n');
  eq(r2.events, [{ event: 'cluster', data: '{"a":2}' }]);
  eq(r2.rest, '');
});
test('sse: CRLF, multi-line data, default event, fields without a space', () => {
  eq(takeEvents('data:x\r\ndata: y\r\n\r\n').events, [{ event: 'message', data: 'x\ny' }]);
  eq(parseEvent('event:error\ndata:{"error":"no"}'), { event: 'error', data: '{"error":"no"}' });
  eq(parseEvent(': only a comment'), null);
  eq(takeEvents('').events, []);
});
