import { test, eq } from './t.js';
import { holdMs, HOLD_MS, inTrouble } from '../static/js/live.js';

const st = (state, port) => ({ state, primary: { host: '127.0.0.1', port } });

test('live: a new primary waits until the dead one has been seen', () => {
  eq(holdMs(st('dead', 1), 1000, st('ok', 2), 1200), HOLD_MS - 200);
  eq(holdMs(st('recovering', 1), 1000, st('ok', 2), 1000 + HOLD_MS + 5), 0);
});
test('live: anything else is shown at once', () => {
  eq(holdMs(st('dead', 1), 1000, st('recovering', 1), 1001), 0); // same primary
  eq(holdMs(st('ok', 1), 0, st('ok', 2), 5), 0); // a switchover: no trouble shown
  eq(holdMs(null, 0, st('ok', 2), 5), 0);
  eq(inTrouble(st('unreachable', 1)), true);
  eq(inTrouble(st('ok', 1)), false);
  eq(inTrouble(undefined), false);
});
