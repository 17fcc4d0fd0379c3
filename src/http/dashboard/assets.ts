// The dashboard's one stylesheet and one small script (live status refresh), served as static
// routes so the Content-Security-Policy can forbid inline code. No front-end build.
export const CSS = `
*,*::before,*::after{box-sizing:border-box}
html{font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1b1b1f;background:#f6f7f9}
body{margin:0}
a{color:#0b57d0}
a:hover{color:#062e6f}
:focus-visible{outline:3px solid #0b57d0;outline-offset:2px}
.sr-only{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}
.skip{position:absolute;left:-999px;top:0;background:#fff;padding:.5rem 1rem;z-index:10}
.skip:focus{left:.5rem;top:.5rem}
header.top{background:#1f2937;color:#fff;padding:.5rem 1rem;display:flex;flex-wrap:wrap;gap:.5rem .75rem;align-items:center}
header.top a{color:#fff}
header.top .brand{font-weight:700;text-decoration:none;margin-right:auto}
header.top .who{font-size:.8125rem;color:#e5e7eb}
header.top button{padding:.25rem .6rem;font-size:.875rem}
nav.main ul{list-style:none;margin:0;padding:0;display:flex;flex-wrap:wrap;gap:.25rem .6rem}
nav.main a{color:#fff;text-decoration:none;padding:.25rem 0;display:inline-block;font-size:.875rem}
nav.main a[aria-current=page]{border-bottom:3px solid #93c5fd;font-weight:600}
main{max-width:72rem;margin:0 auto;padding:1rem}
h1{font-size:1.5rem;margin:.5rem 0 1rem}
h2{font-size:1.2rem;margin:1.5rem 0 .5rem}
h3{font-size:1rem;margin:1rem 0 .25rem}
h1,h2,h3,.event-data{overflow-wrap:anywhere}
td time{white-space:nowrap}
td.addr{overflow-wrap:anywhere;min-width:9rem}
.card{background:#fff;border:1px solid #d0d4dc;border-radius:.5rem;padding:1rem;margin:0 0 1rem}
.table-wrap{overflow-x:auto;background:#fff;border:1px solid #d0d4dc;border-radius:.5rem}
table{border-collapse:collapse;width:100%;font-size:.9375rem}
caption{text-align:left;padding:.5rem .75rem;font-weight:600}
th,td{text-align:left;padding:.5rem .75rem;border-top:1px solid #e3e6ec;vertical-align:top}
thead th{background:#eef0f4;border-top:0}
code,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.875rem;overflow-wrap:anywhere}
table.records td:nth-child(3){min-width:13rem}
.card>h2:first-child,.card>h3:first-child{margin-top:0}
.badge{display:inline-block;padding:.05rem .5rem;border-radius:1rem;font-size:.8125rem;font-weight:600;white-space:nowrap;background:#e5e7eb;color:#1f2937}
.s-sent,.s-pending{background:#dbe7fd;color:#0a2a66}
.s-delivered,.s-verified,.s-succeeded,.s-active{background:#cdeed8;color:#0b3d1f}
.s-delivery_delayed{background:#ffe7b0;color:#4a3000}
.s-bounced,.s-failed,.s-revoked{background:#ffdcd8;color:#5c0a05}
.s-complained{background:#eadcff;color:#2f0a6b}
.s-opened,.s-clicked{background:#d7f0f5;color:#053540}
.tag-test{display:inline-block;padding:0 .4rem;border:2px solid #8a5a00;border-radius:.25rem;background:#fff4d6;color:#4d3200;font-size:.75rem;font-weight:700;text-transform:uppercase;letter-spacing:.04em}
.chip{display:inline-block;padding:0 .4rem;border-radius:.25rem;background:#eef0f4;color:#1f2937;font-size:.8125rem;margin:0 .25rem .25rem 0}
.muted{color:#4b5563}
.note{background:#fff8e1;border:1px solid #b98900;border-radius:.5rem;padding:.75rem 1rem;margin:0 0 1rem}
.notice{background:#e7f5ec;border:1px solid #2e7d4f;border-radius:.5rem;padding:.75rem 1rem;margin:0 0 1rem}
.error{background:#fdecea;border:1px solid #b3261e;border-radius:.5rem;padding:.75rem 1rem;margin:0 0 1rem}
.secret{display:block;width:100%;padding:.5rem;font-family:ui-monospace,monospace;background:#fff;border:2px solid #1f2937;border-radius:.25rem}
form.filters{display:flex;flex-wrap:wrap;gap:.75rem;align-items:flex-end;margin-bottom:1rem}
form.inline{display:inline}
label{display:block;font-weight:600;font-size:.875rem;margin-bottom:.2rem}
fieldset{border:1px solid #d0d4dc;border-radius:.5rem;margin:0 0 .75rem;padding:.5rem .75rem}
fieldset label{display:inline-flex;gap:.3rem;align-items:center;font-weight:400;margin-right:1rem}
input,select,button{font:inherit}
input[type=text],input[type=password],input[type=search],input[type=email],select{padding:.4rem .5rem;border:1px solid #6b7280;border-radius:.25rem;background:#fff;color:#1b1b1f;min-width:10rem;max-width:100%}
button,.button{display:inline-block;padding:.4rem .9rem;border:1px solid #0b57d0;border-radius:.25rem;background:#0b57d0;color:#fff;cursor:pointer;text-decoration:none}
button.secondary,.button.secondary{background:#fff;color:#0b57d0}
button.danger{background:#fff;color:#a3160f;border-color:#a3160f}
.pager{display:flex;gap:1rem;margin:1rem 0}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:.25rem 1rem;margin:0}
dl.facts dt{font-weight:600}
dl.facts dd{margin:0;word-break:break-word}
ol.timeline{list-style:none;margin:0;padding:0;border-left:3px solid #d0d4dc}
ol.timeline li{margin:0 0 .75rem;padding-left:1rem}
.event-data{font-size:.875rem;margin-top:.25rem}
.signin{max-width:28rem;margin:2rem auto}
.charts{display:grid;grid-template-columns:repeat(auto-fit,minmax(20rem,1fr));gap:1rem;margin:0 0 1rem}
.charts.small{grid-template-columns:repeat(auto-fill,minmax(18rem,1fr))}
figure.chart{margin:0;background:#fff;border:1px solid #d0d4dc;border-radius:.5rem;padding:.75rem;min-width:0}
figure.chart figcaption{font-weight:600;margin-bottom:.25rem}
figure.chart>svg{display:block;height:auto}
ul.legend{list-style:none;margin:.25rem 0;padding:0;display:flex;flex-wrap:wrap;gap:.25rem 1rem;font-size:.875rem}
ul.legend svg{vertical-align:middle;display:inline}
.chart-data summary{cursor:pointer;font-size:.875rem;color:#0b57d0}
progress{vertical-align:middle;width:10rem;max-width:100%}
.signin input{width:100%}
@media (max-width:40rem){
  main{padding:.5rem}
  dl.facts{grid-template-columns:1fr}
  dl.facts dd{margin-bottom:.5rem}
  table.stack thead{position:absolute;left:-9999px}
  table.stack tr{display:block;border-top:1px solid #d0d4dc;padding:.25rem 0}
  table.stack td{display:block;border:0;padding:.15rem .75rem;overflow-wrap:anywhere}
  table.stack td[data-label]::before{content:attr(data-label) ": ";font-weight:600}
}
`;

export const JS = `(function () {
  'use strict';
  var rows = Array.prototype.slice.call(document.querySelectorAll('[data-email-id]'));
  var live = document.querySelector('[data-live-url]');
  var last = null;
  if (!rows.length && !live) return;
  function get(url, type) {
    return fetch(url, { credentials: 'same-origin', headers: { accept: type } })
      .then(function (r) { return r.ok ? (type === 'application/json' ? r.json() : r.text()) : null; })
      .catch(function () { return null; });
  }
  function tick() {
    if (document.hidden) return;
    if (rows.length) {
      var ids = rows.map(function (el) { return el.getAttribute('data-email-id'); });
      get('/dashboard/emails/statuses?ids=' + encodeURIComponent(ids.join(',')), 'application/json').then(function (j) {
        if (!j) return;
        rows.forEach(function (el) {
          var s = j[el.getAttribute('data-email-id')];
          var b = el.querySelector('.badge[data-status]');
          if (!s || !b || b.getAttribute('data-status') === s) return;
          b.setAttribute('data-status', s);
          b.className = 'badge s-' + s;
          b.textContent = s;
        });
      });
    }
    if (live) {
      get(live.getAttribute('data-live-url'), 'text/html').then(function (h) {
        if (h === null || h === last) return;
        live.innerHTML = h;
        last = h;
      });
    }
  }
  tick();
  setInterval(tick, 2500);
})();
`;
