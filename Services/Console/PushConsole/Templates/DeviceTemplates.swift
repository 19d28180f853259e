extension ConsoleTemplates {
    /// The device search: subscriptions by user key or registration token, with their
    /// quarantine state in words.
    static let deviceTemplates: [String: String] = [
        "devices": #"""
        {{<page}}{{$content}}
        <h1>Devices</h1>
        <form method="get" action="/devices" role="search">
        <p><label for="q">User key or registration token</label>
        <input id="q" name="q" type="search" value="{{search}}" required maxlength="4096">
        <button type="submit">Search</button></p>
        </form>
        {{#done}}<p role="status" id="device-message">{{.}}</p>{{/done}}
        {{#problem}}<p class="problem" role="alert" id="device-message">{{.}}</p>{{/problem}}
        {{#noneFound}}<p role="status">No subscription has the user key or registration token “{{search}}”.</p>{{/noneFound}}
        {{#found}}<p role="status">{{.}} found.</p>{{/found}}
        {{#devices}}
        <section class="device" aria-labelledby="device-{{index}}" data-quarantined="{{quarantined}}">
        <h2 id="device-{{index}}">{{app}} ({{platform}}, {{environment}}) · service {{service}}</h2>
        <dl class="pairs">
        <div><dt>Quarantine</dt><dd data-figure="quarantine">{{#quarantined}}<strong>Quarantined</strong> since {{since}}, reason <span data-figure="reason">{{reason}}</span>{{#invalidSince}}; the provider says invalid since {{.}}{{/invalidSince}}{{/quarantined}}{{^quarantined}}Active (not quarantined){{/quarantined}}</dd></div>
        <div><dt>User key</dt><dd>{{userKey}}</dd></div>
        <div><dt>Registration token</dt><dd><code class="token">{{token}}</code></dd></div>
        <div><dt>Device</dt><dd>{{device}}</dd></div>
        <div><dt>System</dt><dd>{{system}}</dd></div>
        <div><dt>Subscription parameters</dt><dd><code>{{params}}</code></dd></div>
        <div><dt>Registered</dt><dd>{{registered}}</dd></div>
        <div><dt>Subscription</dt><dd data-figure="subscription">{{#unsubscribed}}Unsubscribed since {{.}}{{/unsubscribed}}{{^unsubscribed}}Subscribed{{/unsubscribed}}</dd></div>
        </dl>
        <form method="post" action="/devices/action" class="device-actions"><input type="hidden" name="csrf" value="{{csrf}}"><input type="hidden" name="q" value="{{search}}"><input type="hidden" name="appId" value="{{appId}}"><input type="hidden" name="service" value="{{service}}"><input type="hidden" name="token" value="{{token}}">
        {{#quarantined}}<button type="submit" name="action" value="lift">Lift the quarantine</button>{{/quarantined}}
        {{#unsubscribed}}<button type="submit" name="action" value="resubscribe">Subscribe again</button>{{/unsubscribed}}{{^unsubscribed}}<button type="submit" name="action" value="unsubscribe">Unsubscribe this device</button>{{/unsubscribed}}
        </form>
        {{#notifications}}
        <table class="notifications" data-device="{{index}}"><caption>Last notifications (newest first; times UTC)</caption>
        <thead><tr><th scope="col">Delivery</th><th scope="col">Status</th><th scope="col">Time</th><th scope="col">Received</th><th scope="col">Opened</th></tr></thead>
        <tbody>{{#rows}}<tr><td><a href="/deliveries/{{deliveryPath}}"><code>{{deliveryId}}</code></a></td><td>{{status}}{{#reason}} ({{.}}){{/reason}}</td><td>{{at}}</td><td>{{received}}</td><td>{{opened}}</td></tr>{{/rows}}</tbody>
        </table>
        {{/notifications}}
        {{^notifications}}<p>No notification yet.</p>{{/notifications}}
        </section>
        {{/devices}}
        {{/content}}{{/page}}
        """#
    ]
}
