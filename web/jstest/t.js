// Tiny test harness for the runner page: test(name, fn), assertions.
export const tests = [];
export function test(name, fn) { tests.push({ name, fn }); }

function show(v) { try { return JSON.stringify(v); } catch { return String(v); } }
export function eq(actual, expected, msg = '') {
  if (show(actual) !== show(expected)) throw new Error(`${msg ? msg + ': ' : ''}got ${show(actual)}, want ${show(expected)}`);
}
export function ok(cond, msg = 'assertion failed') { if (!cond) throw new Error(msg); }
export function near(a, b, eps, msg = '') { if (!(Math.abs(a - b) <= eps)) throw new Error(`${msg ? msg + ': ' : ''}got ${a}, want ${b} ± ${eps}`); }
