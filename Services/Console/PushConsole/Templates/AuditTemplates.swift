extension ConsoleTemplates {
    /// The audit trail: who did what through the admin APIs, filtered by operator, service,
    /// permission and time.
    static let auditTemplates: [String: String] = [
        "audit": #"""
        {{<page}}{{$content}}
        <h1>Audit trail</h1>
        <p>Who did what through the admin APIs (this console included): every call that changed something or read devices, allowed or refused, with the status answered. Never a body, a secret or a token. Times are UTC, newest first.</p>
        <form method="get" action="/audit" role="search" class="audit-filters">
        <p><label for="operator">Operator</label> <input id="operator" name="operator" type="text" size="16" maxlength="64" value="{{operator}}">
        <label for="service">Service</label> <input id="service" name="service" type="text" size="16" maxlength="64" value="{{service}}">
        <label for="permission">Permission</label> <select id="permission" name="permission">{{#permissions}}{{> option}}{{/permissions}}</select></p>
        <p><label for="since">From (UTC)</label> <input id="since" name="since" type="datetime-local" value="{{since}}">
        <label for="until">until (UTC)</label> <input id="until" name="until" type="datetime-local" value="{{until}}">
        <button type="submit">Filter</button> <a href="/audit">Clear</a></p>
        </form>
        {{#problem}}<p class="problem" role="alert" id="audit-problem">{{.}}</p>{{/problem}}
        {{#none}}<p role="status">No call matches these filters.</p>{{/none}}
        {{#table}}
        <table id="audit"><caption>Calls of the admin APIs{{#capped}} (the {{.}} newest: narrow the filters for older ones){{/capped}}</caption>
        <thead><tr><th scope="col">Time</th><th scope="col">Operator</th><th scope="col">Role</th><th scope="col">Call</th><th scope="col">Permission</th><th scope="col">Service</th><th scope="col">Status</th><th scope="col">Request id</th></tr></thead>
        <tbody>{{#rows}}<tr{{#refused}} class="refused"{{/refused}}><td>{{at}}</td><td>{{operator}}</td><td>{{role}}</td><td><code>{{method}} {{path}}</code></td><td>{{permission}}</td><td>{{service}}</td><td class="n">{{status}}</td><td><code>{{requestId}}</code></td></tr>{{/rows}}</tbody>
        </table>
        {{/table}}
        {{/content}}{{/page}}
        """#
    ]
}
