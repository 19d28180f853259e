extension ConsoleTemplates {
    /// The deliveries list, the report page, its refreshing section and its SVG charts. Figures
    /// carry `data-figure="<name>"` and tables their column names, so the browser test reads
    /// exactly what a person reads.
    static let deliveryTemplates: [String: String] = [
        "deliveries": #"""
        {{<page}}{{$content}}
        <h1>Deliveries</h1>
        <p><a href="/deliveries/new">New delivery</a></p>
        <form method="get" action="/deliveries" class="inline">
        <input type="checkbox" id="proofs" name="proofs" value="1"{{#includeProofs}} checked{{/includeProofs}}>
        <label for="proofs">Show proofs</label> <button type="submit">Apply</button>
        </form>
        {{^rows}}<p>No delivery yet.</p>{{/rows}}
        <table id="deliveries">
        <caption>The latest {{count}} deliveries, newest first{{#includeProofs}}, proofs included{{/includeProofs}}{{^includeProofs}}, proofs left out{{/includeProofs}}</caption>
        <thead><tr><th scope="col">Delivery</th><th scope="col">Service</th><th scope="col">Request</th><th scope="col">State</th>
        <th scope="col">Accepted</th><th scope="col">Targeted</th><th scope="col">Sent</th><th scope="col">Failed</th><th scope="col">Opened</th><th scope="col">Open rate</th></tr></thead>
        <tbody>
        {{#rows}}
        <tr data-delivery="{{deliveryId}}">
        <th scope="row"><a href="{{link}}">{{deliveryId}}</a>{{#proof}} <span class="tag">proof</span>{{/proof}}</th>
        <td>{{service}}</td><td>{{requestId}}</td><td>{{state}}</td>
        <td>{{accepted}}</td><td class="n">{{targeted}}</td><td class="n">{{sent}}</td>
        <td class="n">{{failed}}</td><td class="n">{{opened}}</td><td class="n">{{openRate}}</td>
        </tr>
        {{/rows}}
        </tbody>
        </table>
        {{/content}}{{/page}}
        """#,
        "report-page": #"""
        {{<page}}{{$content}}
        <p><a href="/deliveries">← All deliveries</a></p>
        <h1>Delivery {{deliveryId}}</h1>
        {{#message}}<p role="{{role}}" class="{{kind}}" id="control-message">{{#refused}}<strong>Not done:</strong> {{/refused}}{{text}}</p>{{/message}}
        {{#controls}}
        <section aria-labelledby="controls-heading" class="controls">
        <h2 id="controls-heading">Controls</h2>
        {{#controlForms}}
        <form method="post" action="{{controlAction}}" class="inline">
        <input type="hidden" name="csrf" value="{{csrf}}"><input type="hidden" name="action" value="{{control}}">
        {{#confirm}}<input type="checkbox" id="confirm-cancel" name="confirm" value="yes" required> <label for="confirm-cancel">Yes, cancel this delivery for good</label> {{/confirm}}<button type="submit">{{label}}</button>
        </form>
        {{/controlForms}}
        </section>
        {{/controls}}
        {{#report}}
        {{> report-section}}
        {{/report}}
        {{/content}}{{/page}}
        """#,
        // The part that refreshes itself (`GET /deliveries/{id}/report` serves it alone).
        "report-section": #"""
        <section id="report" aria-labelledby="report-heading" data-final="{{final}}" data-refresh="{{refreshSeconds}}" data-source="{{source}}">
        <h2 id="report-heading">Report</h2>
        <p class="meta">Service <strong>{{service}}</strong> · request <code>{{requestId}}</code>{{#proof}} · proof{{/proof}}
         · accepted {{accepted}} · planned {{planned}}{{#operator}} · operator: {{.}}{{/operator}}</p>
        <p class="state">State: <strong data-figure="state">{{state}}</strong>. <span aria-live="polite">{{refresh}} Read at {{readAt}}.</span></p>
        <h3>Funnel</h3>
        <dl class="figures" id="funnel">
        {{#figures}}
        <div><dt>{{label}}</dt><dd><span data-figure="{{name}}">{{value}}</span>{{#note}} <span class="note">{{.}}</span>{{/note}}</dd></div>
        {{/figures}}
        </dl>
        {{#funnelChart}}
        {{> funnel-chart}}
        {{/funnelChart}}
        <h3>Sends over time</h3>
        {{#sendsChart}}
        {{> series-chart}}
        {{/sendsChart}}
        <details><summary>Sends per minute as a table</summary>
        <table id="sends"><caption>Messages sent per minute</caption><thead><tr><th scope="col">Minute</th><th scope="col">Sent</th></tr></thead>
        <tbody>
        {{#sends}}
        <tr><th scope="row">{{time}}</th><td class="n">{{sent}}</td></tr>
        {{/sends}}
        {{^sends}}<tr><td colspan="2">Nothing sent yet.</td></tr>{{/sends}}
        </tbody></table></details>
        <h3>Receptions and opens over time</h3>
        {{#trackingChart}}
        {{> series-chart}}
        {{/trackingChart}}
        <details><summary>Receptions and opens per hour as a table</summary>
        <table id="tracking"><caption>First reception and first open of each message, per hour</caption>
        <thead><tr><th scope="col">Hour</th><th scope="col">Received</th><th scope="col">Opened</th></tr></thead>
        <tbody>
        {{#tracking}}
        <tr><th scope="row">{{time}}</th><td class="n">{{received}}</td><td class="n">{{opened}}</td></tr>
        {{/tracking}}
        {{^tracking}}<tr><td colspan="3">No tracking hit yet.</td></tr>{{/tracking}}
        </tbody></table></details>
        <h3>Failures by reason and platform</h3>
        <table id="failures"><caption>Failed messages by failure type, reason and platform</caption>
        <thead><tr><th scope="col">Type</th><th scope="col">Reason</th><th scope="col">Platform</th><th scope="col">Messages</th></tr></thead>
        <tbody>
        {{#failures}}
        <tr><td>{{type}}</td><td>{{reason}}</td><td>{{platform}}</td><td class="n">{{messages}}</td></tr>
        {{/failures}}
        {{^failures}}<tr><td colspan="4">No failure.</td></tr>{{/failures}}
        </tbody></table>
        <h3>Per app</h3>
        <table id="apps"><caption>Messages of this delivery per app</caption>
        <thead><tr><th scope="col">App</th><th scope="col">Platform</th><th scope="col">Environment</th><th scope="col">Messages</th><th scope="col">Sent</th>
        <th scope="col">Failed</th><th scope="col">Expired</th><th scope="col">Cancelled</th><th scope="col">Pending</th><th scope="col">Received</th><th scope="col">Opened</th></tr></thead>
        <tbody>
        {{#apps}}
        <tr><th scope="row">{{app}}</th><td>{{platform}}</td><td>{{environment}}</td><td class="n">{{messages}}</td><td class="n">{{sent}}</td><td class="n">{{failed}}</td><td class="n">{{expired}}</td><td class="n">{{cancelled}}</td><td class="n">{{pending}}</td><td class="n">{{received}}</td><td class="n">{{opened}}</td></tr>
        {{/apps}}
        {{^apps}}<tr><td colspan="11">No message planned yet.</td></tr>{{/apps}}
        </tbody></table>
        {{#hasLanguages}}
        <h3>Per language</h3>
        <table id="languages"><caption>Messages of this delivery by the language texts they carried; the open rate is over sent</caption>
        <thead><tr><th scope="col">Texts</th><th scope="col">Messages</th><th scope="col">Sent</th><th scope="col">Failed</th><th scope="col">Received</th><th scope="col">Opened</th><th scope="col">Open rate</th></tr></thead>
        <tbody>
        {{#languages}}
        <tr data-language="{{code}}"><th scope="row">{{language}}</th><td class="n">{{messages}}</td><td class="n">{{sent}}</td><td class="n">{{failed}}</td><td class="n">{{received}}</td><td class="n">{{opened}}</td><td class="n">{{openRate}}</td></tr>
        {{/languages}}
        </tbody></table>
        {{/hasLanguages}}
        {{#hasVariants}}
        <h3>Per A/B variant</h3>
        <table id="variants"><caption>Messages of this delivery per A/B variant; the open rate is over sent</caption>
        <thead><tr><th scope="col">Variant</th><th scope="col">Messages</th><th scope="col">Sent</th><th scope="col">Failed</th><th scope="col">Received</th><th scope="col">Opened</th><th scope="col">Open rate</th></tr></thead>
        <tbody>
        {{#variants}}
        <tr><th scope="row">{{variant}}</th><td class="n">{{messages}}</td><td class="n">{{sent}}</td><td class="n">{{failed}}</td><td class="n">{{received}}</td><td class="n">{{opened}}</td><td class="n" data-variant-open-rate="{{variant}}">{{openRate}}</td></tr>
        {{/variants}}
        </tbody></table>
        {{/hasVariants}}
        </section>
        """#,
        // Horizontal bars, one per stage (ConsoleCharts computes the geometry).
        "funnel-chart": #"""
        <svg xmlns="http://www.w3.org/2000/svg" class="chart" id="{{id}}" viewBox="0 0 {{width}} {{height}}" role="img" aria-labelledby="{{id}}-title {{id}}-desc">
        <title id="{{id}}-title">{{title}}</title>
        <desc id="{{id}}-desc">{{description}}</desc>
        {{#bars}}
        <text x="{{labelX}}" y="{{textY}}" text-anchor="end" class="label">{{label}}</text>
        <rect x="{{barX}}" y="{{barY}}" width="{{length}}" height="{{barHeight}}" class="bar {{kind}}"/>
        <text x="{{valueX}}" y="{{textY}}" class="value">{{value}}</text>
        {{/bars}}
        </svg>
        """#,
        // Vertical bars over time, one group per bucket.
        "series-chart": #"""
        <svg xmlns="http://www.w3.org/2000/svg" class="chart" id="{{id}}" viewBox="0 0 {{width}} {{height}}" role="img" aria-labelledby="{{id}}-title {{id}}-desc">
        <title id="{{id}}-title">{{title}}</title>
        <desc id="{{id}}-desc">{{description}}</desc>
        <line x1="{{left}}" y1="{{baseY}}" x2="{{axisEnd}}" y2="{{baseY}}" class="axis"/>
        <text x="{{scaleX}}" y="{{topY}}" text-anchor="end" class="value">{{largest}}</text>
        <text x="{{scaleX}}" y="{{baseY}}" text-anchor="end" class="value">0</text>
        {{#legend}}
        <rect x="{{x}}" y="6" width="14" height="14" class="bar s{{series}}"/><text x="{{textX}}" y="18" class="label">{{name}}</text>
        {{/legend}}
        {{#noData}}
        <text x="{{x}}" y="{{y}}" text-anchor="middle" class="label">No data yet</text>
        {{/noData}}
        {{#groups}}
        {{#bars}}
        <rect x="{{x}}" y="{{y}}" width="{{width}}" height="{{height}}" class="bar s{{series}}"><title>{{tip}}</title></rect>
        {{/bars}}
        {{#label}}
        <text x="{{x}}" y="{{y}}" text-anchor="middle" class="label">{{text}}</text>
        {{/label}}
        {{/groups}}
        </svg>
        """#,
    ]
}
