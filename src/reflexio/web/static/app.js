// Reflexio dashboard behaviour: charts from JSON blocks, review shortcuts, bulk selection.
// No inline scripts anywhere (the Content-Security-Policy forbids them): pages carry data in
// <script type="application/json"> blocks and data-* attributes, read here.
(function () {
  "use strict";

  var PALETTE = ["#1f4fd1", "#d9480f", "#2b8a3e", "#862e9c", "#c92a2a", "#0b7285"];

  function drawCharts(root) {
    if (typeof Chart === "undefined") return;
    root.querySelectorAll("script[data-chart]").forEach(function (block) {
      var canvas = document.getElementById(block.dataset.chart);
      if (!canvas || canvas.dataset.drawn) return;
      canvas.dataset.drawn = "1";
      var spec = JSON.parse(block.textContent);
      var opts = spec.options || {};
      var datasets = spec.series.map(function (s, i) {
        return {
          label: s.name, data: s.values, backgroundColor: PALETTE[i % PALETTE.length],
          borderColor: PALETTE[i % PALETTE.length], borderWidth: 2, spanGaps: true, tension: 0.2,
          yAxisID: "y",
        };
      });
      var scales = {
        x: { stacked: !!opts.stacked, grid: { display: false } },
        y: { stacked: !!opts.stacked, beginAtZero: true },
      };
      if (opts.percent) {
        scales.y.max = 1;
        scales.y.ticks = { callback: function (v) { return Math.round(v * 100) + "%"; } };
      }
      if (opts.second) {
        datasets.push({
          type: "line", label: opts.second_name, data: opts.second, borderColor: PALETTE[1],
          backgroundColor: PALETTE[1], yAxisID: "y2", borderWidth: 2,
        });
        scales.y2 = { position: "right", beginAtZero: true, grid: { display: false } };
      }
      new Chart(canvas, {
        type: spec.type, data: { labels: spec.labels, datasets: datasets },
        options: {
          responsive: true, maintainAspectRatio: false, animation: false,
          plugins: { legend: { position: "bottom" } }, scales: scales,
        },
      });
    });
  }

  // -- review queue: j/k to move, a approve, r reject, e edit, x select, d delete ----------------
  function cards() { return Array.prototype.slice.call(document.querySelectorAll("[data-review-card]")); }

  function focused() {
    var el = document.activeElement;
    return el && el.closest ? el.closest("[data-review-card]") : null;
  }

  function typing(event) {
    var t = event.target;
    return t && (t.tagName === "INPUT" || t.tagName === "TEXTAREA" || t.tagName === "SELECT" || t.isContentEditable);
  }

  function move(step) {
    var all = cards();
    if (!all.length) return;
    var at = all.indexOf(focused());
    var next = all[Math.max(0, Math.min(all.length - 1, at < 0 ? 0 : at + step))];
    next.focus();
    next.scrollIntoView({ block: "nearest" });
  }

  function press(card, selector) {
    var el = card && card.querySelector(selector);
    if (el) { el.click(); return true; }
    return false;
  }

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey || typing(event)) return;
    if (!document.querySelector("[data-review-queue]")) return;
    var card = focused();
    var key = event.key;
    if (key === "j") { move(1); } else if (key === "k") { move(-1); }
    else if (key === "a") { press(card, "[data-key=approve]"); }
    else if (key === "r") {
      var note = card && card.querySelector("input[name=note]");
      if (note) note.focus();
    }
    else if (key === "e") { press(card, "[data-key=edit]"); }
    else if (key === "x") {
      var box = card && card.querySelector("input[name=ids]");
      if (box) { box.checked = !box.checked; box.dispatchEvent(new Event("change", { bubbles: true })); }
    }
    else if (key === "d") { press(card, "[data-key=delete]"); }
    else { return; }
    event.preventDefault();
  });

  // -- bulk selection ---------------------------------------------------------------------------
  function syncBulk() {
    var picked = document.querySelectorAll("input[name=ids][form=bulk]:checked").length;
    document.querySelectorAll("[data-bulk-count]").forEach(function (el) { el.textContent = picked; });
    document.querySelectorAll("[data-bulk-action]").forEach(function (el) { el.disabled = picked === 0; });
    document.querySelectorAll("input[name=ids][form=bulk]").forEach(function (box) {
      var card = box.closest("[data-review-card]");
      if (card) card.classList.toggle("selected-row", box.checked);
    });
  }

  document.addEventListener("change", function (event) {
    var t = event.target;
    if (t.matches && t.matches("[data-select-all]")) {
      document.querySelectorAll("input[name=ids][form=" + t.dataset.selectAll + "]").forEach(function (box) { box.checked = t.checked; });
    }
    syncBulk();
  });

  // -- confirmations for destructive buttons (data-confirm="...") -------------------------------
  document.addEventListener("click", function (event) {
    var t = event.target.closest ? event.target.closest("[data-confirm]") : null;
    if (t && !window.confirm(t.dataset.confirm)) { event.preventDefault(); event.stopImmediatePropagation(); }
  }, true);

  // -- show/hide toggles (data-toggle="id") -----------------------------------------------------
  document.addEventListener("click", function (event) {
    var t = event.target.closest ? event.target.closest("[data-toggle]") : null;
    if (!t) return;
    var target = document.getElementById(t.dataset.toggle);
    if (!target) return;
    target.hidden = !target.hidden;
    t.setAttribute("aria-expanded", String(!target.hidden));
    if (!target.hidden) { var first = target.querySelector("textarea, input"); if (first) first.focus(); }
  });

  document.addEventListener("DOMContentLoaded", function () { drawCharts(document); syncBulk(); });
  document.addEventListener("htmx:afterSwap", function (event) { drawCharts(event.target); syncBulk(); });
})();
