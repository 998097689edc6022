/* viz/html/viewer.js — fxdb's interactive graph viewer. The page holds, in the JSON block
 * #fxdb-data, the Graphviz SVG of every view (the program with its modules as boxes, and each
 * module alone), the data of every node and the provenance of every mutated state. This script
 * shows one view at a time with pan and zoom (svg-pan-zoom), opens a module when its box is
 * clicked (the breadcrumb goes back up), searches nodes by name or op, and fills the side panel
 * for the clicked node. No network: everything is in the page.
 *
 * Graphviz writes each node as <g class="node"><title>ID</title>...</g> and each edge with the
 * title "TAIL->HEAD"; the ids are fxviz's (viz/fxviz.h): a node's name, "module.<path>" for a
 * box, "<name>@<cluster>" for the copy of a shared value, "<output>.<kind>.<state>" for the
 * output of a mutated state. */
(function () {
  'use strict';
  var D = JSON.parse(document.getElementById('fxdb-data').textContent);
  var S = { view: -1, pz: null, byTitle: {}, edges: {}, selected: null, hits: [] };

  function el(tag, attrs, kids) {
    var e = document.createElement(tag);
    if (attrs) for (var k in attrs) {
      if (k === 'text') e.textContent = attrs[k];
      else if (k === 'cls') e.className = attrs[k];
      else if (k === 'onclick') e.addEventListener('click', attrs[k]);
      else e.setAttribute(k, attrs[k]);
    }
    (kids || []).forEach(function (c) { if (c) e.appendChild(typeof c === 'string' ? document.createTextNode(c) : c); });
    return e;
  }

  /* ---- the page ---- */
  var crumbs = el('nav', { id: 'fx-crumbs' });
  var search = el('input', { id: 'fx-search', type: 'search', placeholder: 'search node name or op (/)' });
  var results = el('ul', { id: 'fx-results' });
  var stage = el('div', { id: 'fx-stage' });
  var panel = el('aside', { id: 'fx-panel' });
  document.body.appendChild(el('header', { id: 'fx-top' }, [el('h1', { text: D.title }), crumbs, search, results]));
  document.body.appendChild(el('div', { id: 'fx-main' }, [stage, panel]));

  function titleOf(g) { var t = g.querySelector('title'); return t ? t.textContent : ''; }
  function nameOf(title) { var i = title.indexOf('@'); return i > 0 ? title.slice(0, i) : title; }
  function modulePath(title) { return title.indexOf('module.') === 0 ? title.slice(7) : null; }

  /* the state named by an output node id "<output>.<kind>.<state>" */
  function outputState(title) {
    for (var st in D.states) {
      if (title.length > st.length && title.slice(-st.length - 1) === '.' + st && !modulePath(title) && !D.nodes[title])
        return st;
    }
    return null;
  }

  /* ---- views ---- */
  function showView(v) {
    if (S.pz) { S.pz.destroy(); S.pz = null; }
    S.view = v;
    S.byTitle = {}; S.edges = {}; S.selected = null; S.hits = [];
    stage.innerHTML = D.views[v].svg;
    var svg = stage.querySelector('svg');
    svg.removeAttribute('width'); svg.removeAttribute('height');
    svg.querySelectorAll('g.node').forEach(function (g) {
      var t = titleOf(g);
      S.byTitle[t] = g;
      if (modulePath(t)) g.classList.add('fx-box');
    });
    svg.querySelectorAll('g.edge').forEach(function (g) { S.edges[titleOf(g)] = g; });
    S.pz = svgPanZoom(svg, { zoomEnabled: true, controlIconsEnabled: true, fit: true, center: true,
                             minZoom: 0.02, maxZoom: 40, dblClickZoomEnabled: false, zoomScaleSensitivity: 0.3 });
    /* a tall graph fitted whole is unreadable: fit its width instead (at most 1:1) and start
       at the top */
    var sz = S.pz.getSizes(), vb = sz.viewBox, z = sz.realZoom;
    if (vb.width * z < 0.6 * sz.width) {
      var want = Math.min(0.95 * sz.width / vb.width, 1.0);
      if (want > z) {
        S.pz.zoomBy(want / z);
        S.pz.pan({ x: (sz.width - vb.width * want) / 2 - vb.x * want, y: 10 - vb.y * want });
      }
    }
    var path = D.views[v].path;
    document.body.setAttribute('data-view', path);
    renderCrumbs(path);
  }

  function renderCrumbs(path) {
    crumbs.textContent = '';
    var chain = [];
    for (var p = path; p; p = D.modules[p] ? D.modules[p].parent : '') chain.unshift(p);
    var items = [{ label: 'program', view: 0 }];
    chain.forEach(function (p) { items.push({ label: p + (D.modules[p] ? ': ' + D.modules[p].cls : ''), view: D.modules[p] ? D.modules[p].view : -1 }); });
    items.forEach(function (it, i) {
      if (i) crumbs.appendChild(el('span', { cls: 'sep', text: '\u203a' }));
      var last = i === items.length - 1;
      crumbs.appendChild(last || it.view < 0 ? el('span', { cls: last ? 'here' : '', text: it.label })
                                             : el('a', { text: it.label, onclick: function () { showView(it.view); showHelp(); } }));
    });
  }

  function clearMarks() {
    stage.querySelectorAll('.fx-selected, .fx-path, .fx-hit').forEach(function (g) {
      g.classList.remove('fx-selected', 'fx-path', 'fx-hit');
    });
  }

  /* centres the picture on element g, zooming in when the view is far out */
  function focus(g) {
    if (!S.pz || !g) return;
    if (S.pz.getSizes().realZoom < 0.7) S.pz.zoom(Math.max(S.pz.getZoom(), 0.7 / S.pz.getSizes().realZoom * S.pz.getZoom()));
    var r = g.getBoundingClientRect(), s = stage.getBoundingClientRect();
    S.pz.panBy({ x: (s.left + s.width / 2) - (r.left + r.width / 2), y: (s.top + s.height / 2) - (r.top + r.height / 2) });
  }

  /* the element showing node `name` in this view: itself, a shared copy, or the box holding it */
  function shownAs(name) {
    if (S.byTitle[name]) return S.byTitle[name];
    var n = D.nodes[name];
    var mods = (n && n.modules) || [];
    for (var i = 0; i < mods.length; i++) {
      var g = S.byTitle['module.' + mods[i][0]];
      if (g) return g;
    }
    return null;
  }

  /* ---- the provenance path of a state ---- */
  function markPath(state) {
    var pv = D.states[state];
    if (!pv) return;
    var prev = null;
    pv.steps.forEach(function (s) {
      var g = s.node ? shownAs(s.node) : null;
      if (!g) return;
      g.classList.add('fx-path');
      if (prev && prev !== g) {
        var e = S.edges[titleOf(prev) + '->' + titleOf(g)];
        if (e) e.classList.add('fx-path');
      }
      prev = g;
    });
    for (var t in S.byTitle) {
      if (outputState(t) === state) {
        S.byTitle[t].classList.add('fx-path');
        if (prev) { var e = S.edges[titleOf(prev) + '->' + t]; if (e) e.classList.add('fx-path'); }
      }
    }
  }

  /* ---- the side panel ---- */
  function section(title, body) { panel.appendChild(el('h3', { text: title })); panel.appendChild(body); }
  function link(text, fn) { return el('a', { text: text, onclick: fn }); }
  function dl(rows) {
    var d = el('dl');
    rows.forEach(function (r) { if (r[1] !== undefined && r[1] !== null && r[1] !== '') { d.appendChild(el('dt', { text: r[0] })); d.appendChild(el('dd', {}, [r[1]])); } });
    return d;
  }

  function showHelp() {
    panel.textContent = '';
    var v = D.views[S.view], m = D.modules[v.path];
    panel.appendChild(el('h2', { text: v.path ? v.path + (m ? ': ' + m.cls : '') : 'program' }));
    if (m) panel.appendChild(dl([['ops', String(m.ops)], ['mutations', String(m.mutations)]]));
    if (v.path) panel.appendChild(el('button', { text: 'collapse (back to ' + (m && m.parent ? m.parent : 'program') + ')',
      onclick: function () { showView(m && m.parent ? D.modules[m.parent].view : 0); showHelp(); } }));
    panel.appendChild(el('p', { cls: 'fx-help', text: 'Click a node for its details; click a module box (3-D box) to open it. ' +
      'Drag to pan, wheel to zoom. Search with the box above; Esc clears.' }));
  }

  function provenanceTable(state, current) {
    var pv = D.states[state];
    var t = el('table');
    pv.steps.forEach(function (s) {
      var what = s.version === 0 ? 'placeholder' : (s.target || '').replace(/^aten\./, '');
      if (s.from_op) what += ' (' + s.from_op.replace(/^aten\./, '') + ')';
      var tr = el('tr', { cls: s.node === current ? 'on' : '' }, [
        el('td', { text: 'v' + s.version }),
        el('td', {}, [s.node ? link(s.node, function () { goTo(s.node); }) : '']),
        el('td', {}, [what, s.view_path ? el('div', { cls: 'muted', text: 'through ' + s.view_path }) : null,
          s.location ? el('div', { cls: 'muted', text: s.location }) : null, s.source ? el('pre', { text: s.source }) : null])]);
      t.appendChild(tr);
    });
    var box = el('div', {}, [el('div', { cls: 'muted', text: pv.kind + (pv.output ? ', written back by output ' + pv.output : ', never mutated') }), t]);
    return box;
  }

  function showState(state, current) {
    if (!D.states[state]) return;
    section('provenance of ' + state, provenanceTable(state, current));
    markPath(state);
  }

  function showNode(name) {
    var n = D.nodes[name];
    panel.textContent = '';
    if (!n) { panel.appendChild(el('h2', { text: name })); return; }
    panel.appendChild(el('h2', { text: name }));
    panel.appendChild(dl([['op', n.op], ['target', n.target], ['type', n.type], ['input', n.input_kind ? n.input_kind + ' ' + n.state : null]]));
    if (n.args && n.args.length) section('arguments', el('ul', {}, n.args.map(function (a) { return el('li', {}, [el('code', { text: a })]); })));
    if (n.mutation) {
      var m = n.mutation;
      section('new version', el('div', { text: 'v' + m.version + ' of ' + m.state + (m.from_op ? ' (' + m.from_op + ')' : '') + (m.view_path ? ' through ' + m.view_path : '') }));
    }
    if (n.stack && n.stack.length) {
      section('stack trace', el('div', {}, n.stack.map(function (f) {
        return el('div', {}, [el('div', { text: f.file + ':' + f.line + (f.func ? ' in ' + f.func : '') }), f.code ? el('pre', { text: f.code }) : null]);
      })));
    }
    if (n.modules && n.modules.length) {
      section('module stack', el('ul', {}, n.modules.map(function (m) {
        var d = D.modules[m[0]];
        return el('li', {}, [d && d.view >= 0 ? link(m[0] || '(root)', function () { showView(d.view); showHelp(); }) : (m[0] || '(root)'), ': ' + m[1]]);
      })));
    }
    if (n.from_node && n.from_node.length) section('from_node', el('div', {}, [el('code', { text: n.from_node.join(', ') })]));
    if (n.users && n.users.length) {
      var ul = el('div');
      n.users.forEach(function (u, i) { if (i) ul.appendChild(document.createTextNode(', ')); ul.appendChild(D.nodes[u] ? link(u, function () { goTo(u); }) : el('span', { text: u })); });
      section('users', ul);
    }
    var st = (n.mutation && n.mutation.state) || n.state;
    if (st) showState(st, name);
  }

  function select(title) {
    clearMarks();
    var g = S.byTitle[title];
    if (g) g.classList.add('fx-selected');
    S.selected = title;
    var st = outputState(title);
    if (st && !D.nodes[title]) {
      panel.textContent = '';
      panel.appendChild(el('h2', { text: title }));
      panel.appendChild(dl([['op', 'output'], ['kind', D.states[st].output_kind], ['state', st], ['value', D.states[st].output]]));
      showState(st, null);
      return;
    }
    showNode(nameOf(title));
  }

  /* shows node `name` in the view that draws it, selected and centred */
  function goTo(name) {
    var n = D.nodes[name];
    if (n && n.view !== S.view) showView(n.view);
    select(name);
    focus(S.byTitle[name]);
  }

  stage.addEventListener('click', function (ev) {
    var g = ev.target.closest ? ev.target.closest('g.node') : null;
    if (!g) return;
    var t = titleOf(g), p = modulePath(t);
    if (p !== null && D.modules[p] && D.modules[p].view >= 0) {
      showView(D.modules[p].view);
      showHelp();
      return;
    }
    select(t);
  });

  /* ---- search ---- */
  var names = Object.keys(D.nodes);
  function runSearch() {
    var q = search.value.trim().toLowerCase();
    results.textContent = '';
    if (!q) return;
    var hits = [];
    Object.keys(D.modules).forEach(function (p) { if (hits.length < 60 && p.toLowerCase().indexOf(q) >= 0) hits.push({ module: p }); });
    for (var i = 0; i < names.length && hits.length < 60; i++) {
      var n = D.nodes[names[i]];
      if (names[i].toLowerCase().indexOf(q) >= 0 || (n.target || '').toLowerCase().indexOf(q) >= 0) hits.push({ node: names[i] });
    }
    hits.forEach(function (h) {
      var li = h.module !== undefined
        ? el('li', {}, [h.module, el('span', { cls: 'what', text: 'module ' + D.modules[h.module].cls })])
        : el('li', {}, [h.node, el('span', { cls: 'what', text: (D.nodes[h.node].target || D.nodes[h.node].op) + ' ' + (D.nodes[h.node].type || '') })]);
      li.addEventListener('click', function () {
        results.textContent = '';
        if (h.module !== undefined) {
          var m = D.modules[h.module];
          var v = m.view >= 0 ? m.view : (D.modules[m.parent] ? D.modules[m.parent].view : 0);
          showView(v); showHelp();
          var g = S.byTitle['module.' + h.module]; if (g) { g.classList.add('fx-hit'); focus(g); }
        } else {
          goTo(h.node);
        }
      });
      results.appendChild(li);
    });
    if (!hits.length) results.appendChild(el('li', { cls: 'muted', text: 'no node or module matches' }));
  }
  var timer = null;
  search.addEventListener('input', function () { clearTimeout(timer); timer = setTimeout(runSearch, 120); });
  search.addEventListener('keydown', function (ev) {
    if (ev.key === 'Enter') { var li = results.querySelector('li'); if (li) li.click(); }
    if (ev.key === 'Escape') { search.value = ''; results.textContent = ''; }
  });
  document.addEventListener('keydown', function (ev) {
    if (ev.key === '/' && document.activeElement !== search) { ev.preventDefault(); search.focus(); }
    if (ev.key === 'Escape' && document.activeElement !== search) { clearMarks(); showHelp(); }
  });

  /* for scripts driving the page (the browser test): the same steps a click takes */
  window.fxdbViewer = { data: D, showView: showView, goTo: goTo, select: select, state: S };

  /* deep links: #view=<module path> opens a module, #node=<name> selects a node */
  function openHash() {
    var h = decodeURIComponent(location.hash.slice(1));
    if (h.indexOf('view=') === 0 && D.modules[h.slice(5)] && D.modules[h.slice(5)].view >= 0) {
      showView(D.modules[h.slice(5)].view); showHelp(); return true;
    }
    if (h.indexOf('node=') === 0 && D.nodes[h.slice(5)]) { goTo(h.slice(5)); return true; }
    return false;
  }
  window.addEventListener('hashchange', openHash);
  showView(0);
  if (!openHash()) {
    showHelp();
    /* fxdb.render(ep, "x.html", {why = STATE}): open on that state's provenance */
    if (D.why && D.states[D.why]) { panel.textContent = ''; panel.appendChild(el('h2', { text: D.why })); showState(D.why, null); }
  }
})();
