/* tests/viz/browser_checks.js — what the browser test (tests/viz/test_browser.sh) checks inside
 * a page fxdb wrote: it clicks nodes and module boxes the way a person does (a bubbling click
 * event on the SVG element) and reads the side panel, the breadcrumb and the view shown. The
 * results go into <pre id="fx-test-result">, one "PASS name" or "FAIL name: why" per line, which
 * the shell script reads from Chromium's --dump-dom. window.FX_SCENARIO picks the checks. */
(function () {
  'use strict';
  var out = [];
  var V = window.fxdbViewer;
  function check(name, ok, why) { out.push((ok ? 'PASS ' : 'FAIL ') + name + (ok ? '' : ': ' + why)); }
  function panelText() { return document.getElementById('fx-panel').textContent; }
  function svgNode(title) {
    var gs = document.querySelectorAll('#fx-stage g.node');
    for (var i = 0; i < gs.length; i++) if (gs[i].querySelector('title').textContent === title) return gs[i];
    return null;
  }
  function click(title) {
    var g = svgNode(title);
    if (!g) return false;
    var target = g.querySelector('text') || g;
    target.dispatchEvent(new MouseEvent('click', { bubbles: true, cancelable: true, view: window }));
    return true;
  }
  function has(text, what) { return panelText().indexOf(what) >= 0; }
  function view() { return document.body.getAttribute('data-view'); }
  function finish() {
    var pre = document.createElement('pre');
    pre.id = 'fx-test-result';
    pre.textContent = out.join('\n') + '\nDONE\n';
    document.body.appendChild(pre);
  }
  var steps = [];
  function later(fn) { steps.push(fn); }
  function run() {
    if (!steps.length) { finish(); return; }
    try { steps.shift()(); } catch (e) { check('step threw', false, String(e)); }
    setTimeout(run, 300);
  }

  check('viewer loaded', !!V, 'window.fxdbViewer missing');
  if (!V) { finish(); return; }
  var D = V.data;

  if (window.FX_SCENARIO === 'seed') {
    later(function () {
      check('seed: program view shown', view() === '' && !!document.querySelector('#fx-stage svg'), 'view ' + view());
      var mut = Object.keys(D.nodes).filter(function (n) { return D.nodes[n].mutation && D.nodes[n].mutation.version === 1; })[0];
      check('seed: a node makes v1 of state', !!mut, 'no mutation record');
      check('seed: click the v1 node', click(mut), 'no SVG node ' + mut);
      check('seed: panel names the node', document.querySelector('#fx-panel h2').textContent === mut, panelText().slice(0, 80));
      check('seed: panel target and type', has(0, 'aten.mul.Tensor') && has(0, 'f16[3]'), panelText().slice(0, 200));
      check('seed: panel new version', has(0, 'v1 of state (aten.mul_.Tensor)'), panelText().slice(0, 300));
      check('seed: panel stack trace with the Lua line', has(0, 'seed_s1.lua:9 in forward') && has(0, 'self.state:mul_(x)'), panelText());
      check('seed: panel provenance', has(0, 'provenance of state') && has(0, 'add_.Tensor') && has(0, 'placeholder'), panelText());
      var marked = document.querySelectorAll('#fx-stage g.node.fx-path').length;
      check('seed: provenance path highlighted', marked >= 4, marked + ' nodes marked');
      check('seed: path edge highlighted', document.querySelectorAll('#fx-stage g.edge.fx-path').length >= 2, 'no edge marked');
    });
    later(function () {
      check('seed: click the buffer placeholder', click('b_state'), 'no b_state');
      check('seed: placeholder panel', has(0, 'BUFFER state') && has(0, 'provenance of state'), panelText().slice(0, 300));
      check('seed: click the mutation output', click('output.buffer_mutation.state'), 'no output node');
      check('seed: output panel', has(0, 'BUFFER_MUTATION') && has(0, 'v2'), panelText().slice(0, 300));
      var s = document.getElementById('fx-search');
      s.value = 'mul';
      s.dispatchEvent(new Event('input'));
    });
    later(function () {
      var hits = document.querySelectorAll('#fx-results li');
      check('seed: search finds mul', hits.length >= 2, hits.length + ' hits');
      if (hits.length) hits[0].click();
      check('seed: search hit selected', /^mul/.test(document.querySelector('#fx-panel h2').textContent), panelText().slice(0, 80));
    });
  } else if (window.FX_SCENARIO === 'llama32') {
    later(function () {
      check('llama: program view of module boxes', view() === '' && !!svgNode('module.layers.31') && !svgNode('add_2'), 'view ' + view());
      check('llama: a box per layer', !!svgNode('module.layers.0') && !!svgNode('module.tok_embeddings'), 'boxes missing');
      check('llama: click the box of layers.3', click('module.layers.3'), 'no box');
      check('llama: layers.3 expanded', view() === 'layers.3' && !svgNode('module.layers.3'), 'view ' + view());
      check('llama: breadcrumb', document.getElementById('fx-crumbs').textContent.indexOf('program') === 0 &&
            document.getElementById('fx-crumbs').textContent.indexOf('layers.3: TransformerBlock') > 0,
            document.getElementById('fx-crumbs').textContent);
      check('llama: panel shows the module', has(0, 'layers.3: TransformerBlock') && has(0, 'mutations'), panelText().slice(0, 200));
      var mut = Object.keys(D.nodes).filter(function (n) {
        var m = D.nodes[n].mutation; return m && m.state === 'layers.3.attention.cache_k';
      })[0];
      check('llama: click the cache_k update', !!mut && click(mut), 'no node for layers.3.attention.cache_k');
      check('llama: provenance of the cache', has(0, 'provenance of layers.3.attention.cache_k') && has(0, 'copy_.default') && has(0, 'examples/llama.lua:128'), panelText().slice(0, 400));
      check('llama: cache path highlighted', document.querySelectorAll('#fx-stage g.node.fx-path').length >= 2,
            document.querySelectorAll('#fx-stage g.node.fx-path').length + ' marked');
    });
    later(function () {
      var a = document.querySelector('#fx-crumbs a');
      check('llama: breadcrumb back to the program', !!a, 'no crumb link');
      if (a) a.click();
      check('llama: collapsed again', view() === '' && !!svgNode('module.layers.3'), 'view ' + view());
      var s = document.getElementById('fx-search');
      s.value = 'rms_norm_40';
      s.dispatchEvent(new Event('input'));
    });
    later(function () {
      var hits = document.querySelectorAll('#fx-results li');
      check('llama: search finds a node by name', hits.length >= 1, hits.length + ' hits');
      if (hits.length) hits[0].click();
      var n = D.nodes['rms_norm_40'];
      var want = n && n.modules ? n.modules[1][0] : '?';
      check('llama: search opens the node\'s module', view() === want && document.querySelector('#fx-panel h2').textContent === 'rms_norm_40',
            'view ' + view() + ' want ' + want);
      check('llama: node is selected', document.querySelectorAll('#fx-stage g.node.fx-selected').length === 1, 'no selection');
    });
  } else {
    check('scenario', false, 'unknown scenario ' + window.FX_SCENARIO);
  }
  run();
})();
