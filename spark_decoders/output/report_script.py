"""The report page's style sheet and script, embedded in the page as they are: the page works from a
``file://`` URL with no network. The script reads the data block (``report_data.build``), draws the
connection list and the exchange table, and filters the table by API, client id, connection and
problem; the filter lives in the URL fragment (``#api=Fetch&problem=any``), so a filtered view can
be bookmarked or handed on, and the charts' rows, the problem table and the connection list set it
when clicked."""

STYLE = """
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0 auto;max-width:1100px;
padding:1em 1.5em;color:#222}
h1{font-size:1.5em;margin:.2em 0}h2{font-size:1.15em;margin:1.6em 0 .4em;border-bottom:1px solid #ddd}
nav a{margin-right:1em}p.note,.muted{color:#666;font-size:.9em}
table{border-collapse:collapse;width:100%;font-size:.85em}
th,td{padding:2px 6px;text-align:left;border-bottom:1px solid #eee;vertical-align:top;
white-space:nowrap}td.wrap{white-space:normal}
th{background:#f4f4f4;position:sticky;top:0;cursor:default}th[data-sort]{cursor:pointer}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
tr.clickable{cursor:pointer}tr.clickable:hover,tr.selected{background:#eef4fb}
tr.problem td.problems{color:#b00}
.bar{display:inline-block;height:.8em;background:#E45756;vertical-align:middle}
.filters{display:flex;flex-wrap:wrap;gap:.6em;align-items:center;margin:.5em 0}
.filters select{max-width:16em}
.scroll{max-height:32em;overflow:auto;border:1px solid #eee}
svg text{font:12px system-ui,sans-serif;fill:#222}svg .axis,svg .api-count,svg .stat{fill:#555}
svg .api-name{font-weight:600}svg .grid{stroke:#ddd}svg .row-bg{fill:transparent}
svg .api-row:hover .row-bg{fill:#eef4fb}svg .api-row{cursor:pointer}
svg .bin{fill:#4C78A8}svg .p50{stroke:#222;stroke-width:2}svg .p99{stroke:#E45756;stroke-width:2;
stroke-dasharray:3 2}svg .epoch-label{fill:#fff;font-weight:600;dominant-baseline:middle}
svg .lead.conflict rect{stroke:#E45756;stroke-width:3}svg .resign{fill:#E45756}
svg .candidacy{fill:#222}svg .pre-vote{fill:none;stroke:#222}
.legend span{margin-right:1.2em}
"""

SCRIPT = r"""
'use strict';
const D = JSON.parse(document.getElementById('report-data').textContent);
const COL = Object.fromEntries(D.columns.map((name, i) => [name, i]));
const FILTERS = ['api', 'client', 'conn', 'problem'];
const PAGE = 500;
const state = {filters: {}, sort: 't', descending: false, shown: PAGE};

function number(n) { return n === null || n === undefined ? '' : n.toLocaleString('en-US'); }
function duration(us) {
  if (us === null || us === undefined) return '';
  // as report_svg.duration: three significant digits, thousands in full
  const digits = x => (x < 1000 ? String(Number(x.toPrecision(3))) : number(Math.round(x)));
  for (const [unit, size] of [['s', 1e6], ['ms', 1e3]]) {
    if (us >= size) return digits(us / size) + ' ' + unit;
  }
  return digits(us) + ' µs';
}
function clock(t) {
  if (t === null) return '';
  const us = D.t0_us + t;
  const date = new Date(Math.floor(us / 1000));
  return date.toISOString().slice(11, 19) + '.' + String(us % 1000000).padStart(6, '0');
}
function cell(row, text, className) {
  const td = document.createElement('td');
  td.textContent = text;
  if (className) td.className = className;
  row.appendChild(td);
  return td;
}
function connectionName(i) {
  const c = D.connections[i];
  const node = id => (id >= 0 ? ' (node ' + id + ')' : '');
  return c.client + node(c.client_node) + ' → ' + c.server + node(c.server_node);
}

function readFragment() {
  const params = new URLSearchParams(location.hash.slice(1));
  state.filters = {};
  for (const key of FILTERS) {
    if (params.get(key)) state.filters[key] = params.get(key);
  }
}
function writeFragment() {
  const params = new URLSearchParams();
  for (const key of FILTERS) {
    if (state.filters[key]) params.set(key, state.filters[key]);
  }
  const text = params.toString();
  history.replaceState(null, '', text ? '#' + text : location.pathname + location.search);
}
function setFilters(changes) {
  Object.assign(state.filters, changes);
  for (const key of FILTERS) {
    if (!state.filters[key]) delete state.filters[key];
  }
  state.shown = PAGE;
  writeFragment();
  render();
}

function matches(row) {
  const f = state.filters;
  if (f.api && D.tables.api[row[COL.api]] !== f.api) return false;
  if (f.client !== undefined && D.tables.client[row[COL.client]] !== f.client) return false;
  if (f.conn !== undefined && String(row[COL.conn]) !== f.conn) return false;
  if (f.problem) {
    const labels = row[COL.problems].map(p => D.tables.problem[p]);
    if (f.problem === 'any') return labels.length > 0;
    if (f.problem === 'none') return labels.length === 0;
    return labels.includes(f.problem);
  }
  return true;
}
function sortKey(row) {
  const value = row[COL[state.sort]];
  if (state.sort === 'api' || state.sort === 'client') return D.tables[state.sort][value];
  if (state.sort === 'problems') return value.length;
  return value === null ? -Infinity : value;
}

function fillSelect(id, key, options) {
  const select = document.getElementById(id);
  select.replaceChildren(new Option('all', ''));
  for (const [value, label] of options) select.appendChild(new Option(label, value));
  select.value = state.filters[key] || '';
  if (select.value !== (state.filters[key] || '')) {
    select.appendChild(new Option(state.filters[key] + ' (not in the sample)', state.filters[key]));
    select.value = state.filters[key];
  }
  select.onchange = () => setFilters({[key]: select.value});
}
function drawFilters() {
  const sorted = values => [...values].sort().map(v => [v, v === '' ? '(empty)' : v]);
  fillSelect('f-api', 'api', sorted(D.tables.api));
  fillSelect('f-client', 'client', sorted(D.tables.client));
  fillSelect('f-conn', 'conn', D.connections.map((c, i) => [String(i), '#' + i + ' ' + connectionName(i)]));
  fillSelect('f-problem', 'problem',
    [['any', 'any problem'], ['none', 'no problem']].concat(sorted(D.tables.problem)));
}

function drawRows() {
  const chosen = D.rows.filter(matches);
  const sign = state.descending ? -1 : 1;
  chosen.sort((a, b) => {
    const x = sortKey(a), y = sortKey(b);
    return (x < y ? -1 : x > y ? 1 : 0) * sign;
  });
  const body = document.getElementById('rows-body');
  const fragment = document.createDocumentFragment();
  for (const row of chosen.slice(0, state.shown)) {
    const tr = document.createElement('tr');
    const api = D.tables.api[row[COL.api]];
    const labels = row[COL.problems].map(p => D.tables.problem[p]);
    tr.dataset.api = api;
    tr.dataset.conn = row[COL.conn];
    tr.dataset.client = D.tables.client[row[COL.client]];
    tr.dataset.problems = labels.join('|');
    if (labels.length) tr.className = 'problem';
    cell(tr, clock(row[COL.t]));
    cell(tr, '#' + row[COL.conn], 'num').title = connectionName(row[COL.conn]);
    cell(tr, D.tables.client[row[COL.client]]);
    cell(tr, api + (row[COL.version] === null ? '' : ' v' + row[COL.version]));
    cell(tr, number(row[COL.correlation]), 'num');
    cell(tr, duration(row[COL.latency_us]), 'num');
    cell(tr, number(row[COL.request_size]), 'num');
    cell(tr, number(row[COL.response_size]), 'num');
    cell(tr, labels.join(', '), 'problems');
    cell(tr, row[COL.note], 'wrap');
    fragment.appendChild(tr);
  }
  body.replaceChildren(fragment);
  const count = document.getElementById('match-count');
  count.dataset.matching = chosen.length;
  count.textContent = number(chosen.length) + ' of the ' + number(D.rows.length) +
    ' exchanges in the page match' + (chosen.length > state.shown ? '; the first ' +
    number(state.shown) + ' are listed.' : '.');
  document.getElementById('more').hidden = chosen.length <= state.shown;
}

function drawConnections() {
  const body = document.getElementById('conn-body');
  const several = D.captures.length > 1;
  const fragment = document.createDocumentFragment();
  D.connections.forEach((c, i) => {
    const tr = document.createElement('tr');
    tr.className = 'clickable' + (state.filters.conn === String(i) ? ' selected' : '');
    tr.dataset.conn = i;
    cell(tr, '#' + i, 'num');
    if (several) cell(tr, c.capture.split(/[\\/]/).pop());
    cell(tr, c.client + (c.client_node >= 0 ? ' (node ' + c.client_node + ')' : ''));
    cell(tr, c.server + (c.server_node >= 0 ? ' (node ' + c.server_node + ')' : ''));
    cell(tr, c.client_ids.join(', '));
    cell(tr, number(c.exchanges), 'num');
    cell(tr, number(c.request_bytes), 'num');
    cell(tr, number(c.response_bytes), 'num');
    cell(tr, c.apis.map(([name, n]) => name + ' ' + number(n)).join(', '), 'wrap');
    cell(tr, c.problems ? number(c.problems) : '', 'num problems');
    tr.onclick = () => {
      setFilters({conn: state.filters.conn === String(i) ? '' : String(i)});
      document.getElementById('exchanges').scrollIntoView();
    };
    fragment.appendChild(tr);
  });
  body.replaceChildren(fragment);
  if (!several) document.getElementById('conn-capture').remove();
}

function render() {
  drawFilters();
  drawRows();
  for (const tr of document.querySelectorAll('#conn-body tr')) {
    tr.classList.toggle('selected', state.filters.conn === tr.dataset.conn);
  }
}

function wire() {
  for (const g of document.querySelectorAll('#latency-chart .api-row')) {
    const choose = () => {
      setFilters({api: g.dataset.api});
      document.getElementById('exchanges').scrollIntoView();
    };
    g.addEventListener('click', choose);
    g.addEventListener('keydown', event => { if (event.key === 'Enter') choose(); });
  }
  for (const tr of document.querySelectorAll('#problems tr[data-api]')) {
    tr.addEventListener('click', () => {
      setFilters({api: tr.dataset.api, problem: tr.dataset.problem});
      document.getElementById('exchanges').scrollIntoView();
    });
  }
  for (const th of document.querySelectorAll('#rows th[data-sort]')) {
    th.addEventListener('click', () => {
      state.descending = state.sort === th.dataset.sort ? !state.descending : th.dataset.sort !== 't';
      state.sort = th.dataset.sort;
      drawRows();
    });
  }
  document.getElementById('clear').onclick = () => setFilters({api: '', client: '', conn: '', problem: ''});
  document.getElementById('more').onclick = () => { state.shown += PAGE * 4; drawRows(); };
  window.addEventListener('hashchange', () => { readFragment(); state.shown = PAGE; render(); });
}

readFragment();
drawConnections();
wire();
render();
"""
