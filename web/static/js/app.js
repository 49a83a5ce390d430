// dbpilot web console: router, connection state, notices, token dialog.
import { html, render, useState, useEffect, useRef } from '../vendor/preact-htm/standalone.module.js';
import * as api from './api.js';
import { onRoute, Link, NotFound, setNoticeSink, notice, useCan } from './ui.js';
import { Confirm } from './actions.js';
import { Overview } from './views/overview.js';
import { ClusterView } from './views/cluster.js';
import { InstanceView } from './views/instance.js';
import { RecoveryView } from './views/recovery.js';

/** route parses a path into {view, arg} (unknown paths → notfound). */
export function route(pathname) {
  const parts = pathname.split('/').filter((p, i) => i > 0);
  if (parts.length && parts[parts.length - 1] === '') parts.pop();
  const dec = (s) => { try { return decodeURIComponent(s); } catch { return s; } };
  if (parts.length === 0) return { view: 'overview' };
  if (parts.length === 2 && parts[1] !== '') {
    const arg = dec(parts[1]);
    if (parts[0] === 'clusters') return { view: 'cluster', arg };
    if (parts[0] === 'instances') return { view: 'instance', arg };
    if (parts[0] === 'recoveries') return { view: 'recovery', arg };
  }
  return { view: 'notfound', arg: dec(pathname) };
}

function Conn() {
  const [ok, setOk] = useState(true);
  useEffect(() => { api.setHooks({ conn: (b) => setOk(b) }); }, []);
  return html`<span id="conn" data-state=${ok ? 'ok' : 'reconnecting'} role="status" aria-live="polite">${ok ? '● connected' : '◌ reconnecting…'}</span>`;
}

function Notice() {
  const [n, setN] = useState(null);
  useEffect(() => { setNoticeSink(setN); api.setHooks({ notice: (t, k) => notice(t, k) }); }, []);
  return html`<div id="notice" role="status" aria-live="polite" class=${n ? `notice-${n.kind}` : 'empty'}>
    ${n && html`<span>${n.text}</span> <button type="button" class="link" aria-label="dismiss" onClick=${() => setN(null)}>✕</button>`}
  </div>`;
}

function TokenDialog() {
  const [ask, setAsk] = useState(null); // {reason, resolve}
  const [val, setVal] = useState('');
  const ref = useRef(null);
  const input = useRef(null);
  useEffect(() => {
    api.setHooks({ askToken: (reason) => new Promise((resolve) => { setVal(''); setAsk({ reason, resolve }); }) });
  }, []);
  useEffect(() => {
    const d = ref.current;
    if (ask && d && !d.open) { d.showModal(); setTimeout(() => input.current && input.current.focus(), 0); }
  }, [ask]);
  const finish = (t) => {
    const a = ask;
    setAsk(null);
    if (ref.current && ref.current.open) ref.current.close();
    if (a) a.resolve(t);
  };
  return html`<dialog id="token" ref=${ref} onCancel=${(e) => { e.preventDefault(); finish(null); }} aria-labelledby="token-title">
    <form method="dialog" onSubmit=${(e) => { e.preventDefault(); finish(val.trim() || null); }}>
      <h2 id="token-title">API token</h2>
      <p>${ask ? ask.reason : ''} It is kept in this tab only (sessionStorage).</p>
      <p class="muted small">serve --sandbox NAME keeps it in the sandbox directory; a configured serve in its token_file.</p>
      <input id="token-input" ref=${input} type="password" autocomplete="off" value=${val} onInput=${(e) => setVal(e.target.value)} aria-label="API token" />
      <div class="buttons">
        <button type="submit" data-action="save-token" class="primary">Save</button>
        <button type="button" data-action="cancel-token" onClick=${() => finish(null)}>Cancel</button>
      </div>
    </form>
  </dialog>`;
}

function TokenButton() {
  const [has, setHas] = useState(!!api.getToken());
  useCan(); // re-rendered when serve names the token's role
  const who = api.currentWho();
  useEffect(() => {
    const f = () => setHas(!!api.getToken());
    window.addEventListener(api.TOKEN_EVENT, f);
    return () => window.removeEventListener(api.TOKEN_EVENT, f);
  }, []);
  const click = async () => {
    if (has) { api.setToken(''); setHas(false); notice('the API token was removed from this tab', 'info'); return; }
    const t = await api.askToken('Writes need the API token.');
    setHas(!!t);
  };
  return html`<button type="button" class="link" id="token-button" onClick=${click} title=${has ? 'forget the API token of this tab' : 'enter the API token'} data-role=${who ? who.role : ''}>${has ? `🔑 token set${who ? `: ${who.name} (${who.role})` : ''} (forget)` : '🔑 set token'}</button>`;
}

function App() {
  const [path, setPath] = useState(location.pathname);
  useEffect(() => onRoute(() => { setPath(location.pathname); notice(null); }), []);
  const r = route(path);
  useEffect(() => {
    document.title = { overview: 'dbpilot — fleet', cluster: `${r.arg} — dbpilot`, instance: `${r.arg} — dbpilot`, recovery: `recovery ${r.arg} — dbpilot`, notfound: 'not found — dbpilot' }[r.view];
  }, [path]);
  let view;
  switch (r.view) {
    case 'overview': view = html`<${Overview} />`; break;
    case 'cluster': view = html`<${ClusterView} key=${r.arg} name=${r.arg} />`; break;
    case 'instance': view = html`<${InstanceView} key=${r.arg} addr=${r.arg} />`; break;
    case 'recovery': view = html`<${RecoveryView} key=${r.arg} id=${r.arg} />`; break;
    default: view = html`<${NotFound} what=${`page “${r.arg}”`} />`;
  }
  return html`
    <header class="top">
      <${Link} href="/" class="brand">dbpilot</${Link}>
      <nav><${Link} href="/">Fleet</${Link}></nav>
      <span class="spacer"></span>
      <${TokenButton} />
      <${Conn} />
    </header>
    <${Notice} />
    <main>${view}</main>
    <${Confirm} />
    <${TokenDialog} />`;
}

api.refreshWho();
render(html`<${App} />`, document.getElementById('app'));
