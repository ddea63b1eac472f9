/**
 * The studio's page: one HTML document, its style inline, its script (page.js, bundled from
 * main.ts by `npm run build`), both reached with the page's cookie (the token the page was opened
 * with never appears in an address after that). Nothing is fetched from anywhere but this server.
 */
export function studioPage(): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>a2a studio</title>
<link rel="icon" href="data:,">
<style>${STYLE}</style>
</head>
<body>
<header class="top">
  <a class="brand" href="#/" aria-label="a2a studio: all runs">a2a studio</a>
  <nav aria-label="Views"><a href="#/">Runs</a><a href="#/nats" id="nav-nats" hidden>Namespace</a></nav>
  <span id="where" class="dim"></span>
  <span id="conn" class="conn" role="status" aria-live="polite">connecting…</span>
</header>
<main id="main" tabindex="-1"><p class="dim">loading…</p></main>
<div id="toast" role="alert" aria-live="assertive"></div>
<script type="module" src="/page.js"></script>
</body>
</html>`;
}

const STYLE = `
:root { --bg:#fafafa; --fg:#1d2125; --dim:#67707a; --line:#d9dde2; --accent:#2457c5; --ok:#1f7a3d; --bad:#b3261e; --warn:#9a6400; --chip:#eef1f5; }
* { box-sizing: border-box; }
body { margin:0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; background: var(--bg); color: var(--fg); }
a { color: var(--accent); }
.top { display:flex; gap:16px; align-items:center; padding:8px 16px; border-bottom:1px solid var(--line); background:#fff; position:sticky; top:0; z-index:2; }
.top nav a { margin-right: 12px; }
.brand { font-weight:700; text-decoration:none; color:var(--fg); }
.conn { margin-left:auto; font-size:12px; padding:2px 8px; border-radius:10px; background:var(--chip); }
.conn.live { background:#e3f4e8; color:var(--ok); } .conn.down { background:#fbe9e7; color:var(--bad); }
main { padding: 12px 16px; }
.dim { color: var(--dim); }
table { border-collapse: collapse; width: 100%; background:#fff; }
th, td { text-align:left; padding:4px 8px; border-bottom:1px solid var(--line); vertical-align: top; }
th { font-weight:600; font-size:12px; color:var(--dim); }
button, input, select, textarea { font: inherit; }
button { border:1px solid var(--line); background:#fff; border-radius:4px; padding:3px 10px; cursor:pointer; }
button:hover { border-color: var(--accent); }
button.primary { background: var(--accent); color:#fff; border-color: var(--accent); }
button.danger { color: var(--bad); border-color: var(--bad); }
:focus-visible { outline: 2px solid var(--accent); outline-offset: 1px; }
.runhead { display:flex; flex-wrap:wrap; gap:12px; align-items:center; margin-bottom:8px; }
.runhead h1 { font-size:18px; margin:0; }
.stat { background:#fff; border:1px solid var(--line); border-radius:6px; padding:4px 10px; }
.tabs { display:flex; gap:4px; border-bottom:1px solid var(--line); margin: 8px 0; }
.tabs button { border:none; border-bottom:2px solid transparent; border-radius:0; background:none; padding:6px 12px; }
.tabs button[aria-selected="true"] { border-bottom-color: var(--accent); font-weight:600; }
.cols { display:grid; grid-template-columns: minmax(420px, 1fr) minmax(380px, 1fr); gap: 12px; align-items:start; }
.panel { background:#fff; border:1px solid var(--line); border-radius:6px; padding:8px 12px; overflow:auto; }
.vtree { position:relative; overflow:auto; max-height: calc(100vh - 220px); min-height: 28px; contain: content; } .vspace { position:relative; }
.trow { position:absolute; left:0; right:0; height:28px; display:flex; align-items:center; gap:2px; white-space:nowrap; }
.trow .twisty { flex:0 0 16px; text-align:center; color: var(--dim); cursor:pointer; user-select:none; } .trow .node { flex-wrap:nowrap; overflow:hidden; min-width:0; }
.trow .node > * { flex-shrink:0; } .trow .node .note { flex-shrink:1; overflow:hidden; text-overflow:ellipsis; font-size:12px; }
.tree { list-style:none; margin:0; padding-left:0; } .tree .tree { padding-left: 18px; border-left:1px dotted var(--line); margin-left:6px; }
.node { display:flex; flex-wrap:wrap; gap:6px; align-items:center; width:100%; text-align:left; border:1px solid transparent; background:none; padding:2px 4px; }
.node[aria-current="true"] { background:#eaf0fc; border-color:#b9cbf2; }
.node .id { font-family: ui-monospace, monospace; font-weight:600; }
.chip { font-size:11px; background:var(--chip); border-radius:8px; padding:0 6px; white-space:nowrap; }
.badge { font-size:11px; border-radius:8px; padding:0 6px; white-space:nowrap; color:#fff; }
.b-permission, .b-question { background: var(--warn); } .b-inquiry { background:#6b4fbb; } .b-model { background:#00739e; } .b-stuck { background: var(--bad); } .b-paused { background:#555; }
.s-success, .s-completed { color: var(--ok); } .s-failed, .s-timeout, .s-cancelled { color: var(--bad); } .s-partial { color: var(--warn); }
.transcript { display:flex; flex-direction:column; gap:6px; }
.msg { border:1px solid var(--line); border-radius:6px; padding:6px 8px; white-space:pre-wrap; word-break:break-word; }
.msg header { font-size:11px; color:var(--dim); margin-bottom:2px; }
.msg.assistant { background:#f5f8ff; } .msg.tool { background:#f7f7f7; font-family: ui-monospace, monospace; font-size:12px; } .msg.injected { background:#fff8e6; } .msg.error { border-color: var(--bad); }
.call { font-family: ui-monospace, monospace; font-size:12px; background:#eef1f5; border-radius:4px; padding:2px 6px; margin-top:4px; }
.chartbox { overflow:auto; max-height: 520px; border:1px solid var(--line); border-radius:6px; background:#fcfdff; }
.diagram { display:block; font: 11px system-ui, sans-serif; }
.diagram .st rect { fill:#fff; stroke:#9aa5b1; } .diagram .st .ring { fill:none; }
.diagram .st.visited rect { stroke: var(--accent); stroke-width:1.6; } .diagram .st.active rect { fill: var(--accent); stroke: var(--accent); } .diagram .st.active text { fill:#fff; font-weight:600; }
.diagram .st.any rect { fill:#f1f3f6; stroke-dasharray:3 2; } .diagram .st.any text { fill: var(--dim); font-size:10px; }
.diagram .cl rect { fill:#f7f9fc; stroke:#d3dae3; } .diagram .cl text { fill: var(--dim); font-weight:600; } .diagram .cl.on-path rect { stroke:#8fa9e8; } .diagram .cl.visited rect { stroke:#b9cbf2; }
.diagram .ed path { fill:none; stroke:#b3bcc7; } .diagram .ed text { fill:#7a8592; font-size:9.5px; } .diagram .head { fill:#b3bcc7; }
.diagram .ed.taken path { stroke: var(--accent); stroke-width:2; } .diagram .ed.taken text { fill: var(--accent); font-weight:600; } .diagram .head.taken { fill: var(--accent); }
.timebar { display:flex; gap:6px; align-items:center; flex-wrap:wrap; margin: 0 0 6px; } .timebar input[type=range] { flex: 1 1 320px; }
.timebar .when { font-size:12px; color: var(--dim); max-width: 60ch; overflow:hidden; text-overflow:ellipsis; white-space:nowrap; } .timebar .when.past { color: var(--warn); font-weight:600; }
.past-note { background:#fff8e6; border:1px solid #f0d9a6; border-radius:6px; padding:4px 10px; }
.events a.ev { display:block; color:inherit; text-decoration:none; } .events a.ev:hover { background:#eef1f5; } .events a.ev.here { background:#eaf0fc; font-weight:600; } .events a.ev.later { color: var(--dim); }
.group h3 { font-size:13px; margin: 10px 0 4px; }
.item { display:flex; flex-wrap:wrap; gap:8px; align-items:center; padding:6px 0; border-bottom:1px solid var(--line); }
.item .title { flex: 1 1 300px; }
.row { display:flex; gap:8px; align-items:center; flex-wrap:wrap; margin: 6px 0; }
.bar { height:8px; background:var(--chip); border-radius:4px; overflow:hidden; width:160px; display:inline-block; vertical-align:middle; }
.bar > span { display:block; height:100%; background: var(--accent); } .bar.over > span { background: var(--bad); }
dl.remote { display:grid; grid-template-columns: max-content 1fr; gap:2px 10px; margin:4px 0 8px; } dl.remote dt { color:var(--dim); } dl.remote dd { margin:0; word-break:break-all; }
.a2a-messages { margin:4px 0 10px; padding-left:20px; } .a2a-messages li { white-space:pre-wrap; word-break:break-word; margin:2px 0; } .a2a-messages li.in { color:#1d3f8a; }
.msg.a2a { background:#eefaf3; } .panel .bad { color: var(--bad); }
.events { font-family: ui-monospace, monospace; font-size:12px; white-space:pre-wrap; max-height: 70vh; overflow:auto; }
#toast { position:fixed; bottom:12px; right:12px; max-width:480px; }
#toast div { background:#fff; border:1px solid var(--line); border-left:4px solid var(--accent); padding:8px 12px; margin-top:6px; border-radius:4px; box-shadow: 0 2px 6px rgba(0,0,0,.08); }
#toast div.bad { border-left-color: var(--bad); }
.sr { position:absolute; left:-9999px; }
`;
