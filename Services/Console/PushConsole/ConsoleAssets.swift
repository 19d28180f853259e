/// The console's only stylesheet and script, served by itself (no CDN, no build step).
package enum ConsoleAssets {
    package static let css = """
        :root { --ink: #1b1f24; --muted: #4a5560; --line: #c9d1d9; --focus: #0b5cad; --bg: #ffffff; --soft: #f3f5f7; }
        * { box-sizing: border-box; }
        body { margin: 0; font: 16px/1.5 system-ui, sans-serif; color: var(--ink); background: var(--bg); }
        .skip { position: absolute; left: -9999px; }
        .skip:focus { left: 8px; top: 8px; background: #fff; padding: 8px; border: 2px solid var(--focus); z-index: 10; }
        header.top { display: flex; flex-wrap: wrap; gap: 16px; align-items: center; padding: 8px 24px; border-bottom: 1px solid var(--line); background: var(--soft); }
        .brand { font-weight: 700; margin: 0; }
        nav ul { list-style: none; display: flex; gap: 16px; margin: 0; padding: 0; }
        nav a[aria-current="page"] { font-weight: 700; text-decoration: underline; text-decoration-thickness: 3px; }
        .signout { margin-left: auto; }
        main { padding: 16px 24px 48px; max-width: 1100px; }
        a { color: #0b4f94; }
        a:focus, button:focus, input:focus, summary:focus, main:focus { outline: 3px solid var(--focus); outline-offset: 2px; }
        button { font: inherit; padding: 4px 14px; border: 1px solid var(--ink); border-radius: 4px; background: #fff; cursor: pointer; }
        input[type="password"], input[type="search"], input[type="text"] { font: inherit; padding: 4px 8px; border: 1px solid var(--muted); border-radius: 4px; min-width: 22em; }
        label { font-weight: 600; margin-right: 6px; }
        .problem { border-left: 6px solid #a40e26; padding: 8px 12px; background: #fdf1f2; }
        .done { border-left: 6px solid #2f7d4f; padding: 8px 12px; background: #f0f8f3; }
        form.inline { display: inline-block; margin: 0 16px 8px 0; }
        section.controls { border: 1px solid var(--line); border-radius: 4px; padding: 0 12px 8px; margin-bottom: 16px; }
        .hint, .note, .meta { color: var(--muted); }
        table { border-collapse: collapse; margin: 8px 0 24px; min-width: 50%; }
        caption { text-align: left; font-weight: 600; padding: 4px 0; }
        th, td { border-bottom: 1px solid var(--line); padding: 4px 10px; text-align: left; vertical-align: top; }
        td.n { text-align: right; font-variant-numeric: tabular-nums; }
        .tag { font-size: 80%; border: 1px solid var(--muted); border-radius: 3px; padding: 0 4px; }
        dl.figures { display: grid; grid-template-columns: repeat(auto-fill, minmax(170px, 1fr)); gap: 8px; }
        dl.figures div, dl.pairs div { border: 1px solid var(--line); border-radius: 4px; padding: 6px 10px; }
        dt { font-weight: 600; }
        dd { margin: 0; font-variant-numeric: tabular-nums; }
        dl.figures dd span[data-figure] { font-size: 140%; font-weight: 700; }
        svg.chart { display: block; width: 100%; max-width: 720px; height: auto; margin: 8px 0; }
        svg .label, svg .value { font: 13px system-ui, sans-serif; fill: var(--ink); }
        svg .axis { stroke: var(--muted); }
        svg .bar { stroke: var(--ink); stroke-width: 0.5; }
        svg .bar.targeted, svg .bar.s0 { fill: #3b6ea8; }
        svg .bar.excluded { fill: #9aa5b1; }
        svg .bar.sent { fill: #2f7d4f; }
        svg .bar.failed { fill: #b3261e; }
        svg .bar.received, svg .bar.s1 { fill: #c98a16; }
        svg .bar.opened { fill: #6a3fa0; }
        svg .bar.expired, svg .bar.pending { fill: #d5dbe1; }
        code.token { word-break: break-all; }
        pre { white-space: pre-wrap; word-break: break-all; background: var(--soft); padding: 8px; border: 1px solid var(--line); }
        section.device { border-top: 1px solid var(--line); margin-top: 16px; }
        input[type="file"], input[type="datetime-local"], select, textarea { font: inherit; }
        select:focus, textarea:focus { outline: 3px solid var(--focus); outline-offset: 2px; }
        fieldset { border: 1px solid var(--line); border-radius: 4px; margin: 8px 0; }
        table.variants input[inputmode="numeric"], table.variants input[name$="Name"] { min-width: 0; width: 6em; }
        #live-preview[aria-busy="true"] { opacity: 0.6; }
        .field-problem { color: #a40e26; font-weight: 600; }
        tr.refused td { color: #a40e26; }
        [aria-invalid="true"] { border: 2px solid #a40e26; }
        """

    /// The browser tab's icon: a bell.
    package static let icon = """
        <svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><path d="M8 1a4 4 0 0 0-4 4v3L2 11v1h12v-1l-2-3V5a4 4 0 0 0-4-4zm-2 12a2 2 0 0 0 4 0z" fill="#3b6ea8"/></svg>
        """

    /// The report refreshes its own section while the delivery runs, then (receptions and opens
    /// keep coming) every sixth as often, at least a minute apart (a signed-out session
    /// reloads the page, which then shows the sign-in form); the compose form previews the draft
    /// while one types, starts its time zone as the browser's and suggests the selected
    /// service's sounds; buttons with `data-copy` copy a value to the clipboard.
    package static let javascript = """
        (function () {
          'use strict';
          var report = document.getElementById('report');
          function schedule() {
            if (!report) { return; }
            var seconds = parseInt(report.getAttribute('data-refresh') || '0', 10);
            // Sending is over: receptions and opens still arrive for hours, at a slower pace.
            if (report.getAttribute('data-final') === 'true') { seconds = Math.max(60, seconds * 6); }
            if (seconds > 0) { window.setTimeout(refresh, seconds * 1000); }
          }
          function refresh() {
            fetch(report.getAttribute('data-source'), { credentials: 'same-origin', headers: { 'Accept': 'text/html' } })
              .then(function (response) {
                if (response.status === 401) { window.location.reload(); return null; }
                return response.ok ? response.text() : null;
              })
              .then(function (html) {
                if (html) {
                  var holder = document.createElement('template');
                  holder.innerHTML = html;
                  var fresh = holder.content.getElementById('report');
                  if (fresh) { report.replaceWith(fresh); report = fresh; }
                }
                schedule();
              }, function () { schedule(); });
          }
          schedule();
          // Live preview: the compose form, posted (with its CSRF token) to the console's preview
          // endpoint 600 ms after the last keystroke; the answer replaces the preview. An answer
          // that is the sign-in page (the session expired) reloads the page into it.
          var compose = document.getElementById('compose');
          var live = document.getElementById('live-preview');
          if (compose && live && window.fetch && window.URLSearchParams) {
            var timer = null;
            var sequence = 0;
            var preview = function () {
              var mine = ++sequence;
              live.setAttribute('aria-busy', 'true');
              fetch(compose.getAttribute('data-preview'), {
                method: 'POST', credentials: 'same-origin',
                headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
                body: new URLSearchParams(new FormData(compose)).toString()
              }).then(function (response) {
                if (response.redirected && response.url.indexOf('/signin') >= 0) { window.location.reload(); return null; }
                return response.ok ? response.text() : null;
              }).then(function (html) {
                if (html !== null && mine === sequence) { live.innerHTML = html; markFields(); }
                if (mine === sequence) { live.setAttribute('aria-busy', 'false'); }
              }, function () { if (mine === sequence) { live.setAttribute('aria-busy', 'false'); } });
            };
            // The refusals of the latest answer, each at the input it concerns (as after a
            // Preview with a page load): the earlier marks go first.
            var markFields = function () {
              Array.prototype.forEach.call(compose.querySelectorAll('.field-problem'), function (old) { old.remove(); });
              Array.prototype.forEach.call(compose.querySelectorAll('[aria-invalid]'), function (input) {
                input.removeAttribute('aria-invalid');
                input.removeAttribute('aria-describedby');
              });
              Array.prototype.forEach.call(live.querySelectorAll('li[data-input]'), function (item) {
                var input = document.getElementById(item.getAttribute('data-input'));
                var text = item.querySelector('.problem-text');
                if (!input || !text || !compose.contains(input)) { return; }
                var id = input.id + '-problem';
                var mark = document.getElementById(id);
                if (mark) { mark.textContent += '; ' + text.textContent; return; }
                mark = document.createElement('strong');
                mark.className = 'field-problem';
                mark.id = id;
                mark.textContent = text.textContent;
                input.setAttribute('aria-invalid', 'true');
                input.setAttribute('aria-describedby', id);
                input.insertAdjacentElement('afterend', mark);
                input.parentNode.insertBefore(document.createTextNode(' '), mark);
              });
            };
            var later = function () {
              if (timer) { window.clearTimeout(timer); }
              timer = window.setTimeout(preview, 600);
            };
            compose.addEventListener('input', later);
            compose.addEventListener('change', later);
          }
          // The compose form: the send time's zone starts as the browser's own; the sound
          // inputs suggest the sounds the selected service's apps declare.
          var zone = document.querySelector('input[data-default-zone]');
          if (zone && zone.value === '' && window.Intl && Intl.DateTimeFormat) {
            zone.value = Intl.DateTimeFormat().resolvedOptions().timeZone || '';
          }
          var service = document.getElementById('service');
          if (service) {
            service.addEventListener('change', function () {
              Array.prototype.forEach.call(document.querySelectorAll('input[data-sounds]'), function (input) {
                Array.prototype.forEach.call(document.querySelectorAll('datalist[data-service]'), function (list) {
                  if (list.getAttribute('data-service') === service.value && list.getAttribute('data-platform') === input.getAttribute('data-sounds')) {
                    input.setAttribute('list', list.id);
                  }
                });
              });
            });
          }
          Array.prototype.forEach.call(document.querySelectorAll('button[data-copy]'), function (button) {
            button.addEventListener('click', function () {
              var value = button.getAttribute('data-copy');
              if (navigator.clipboard) {
                navigator.clipboard.writeText(value).then(function () { button.textContent = 'Copied'; });
              }
            });
          });
        })();
        """
}
