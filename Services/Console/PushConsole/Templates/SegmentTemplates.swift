extension ConsoleTemplates {
    /// The services' segments: each one's latest version, its conditions and how many devices it
    /// targets now.
    static let segmentTemplates: [String: String] = [
        "segments": #"""
        {{<page}}{{$content}}
        <h1>Segments</h1>
        <p>Named audiences of the services you act on, each at its latest version, with the devices it targets now (the deliveries' preview: a delivery to the segment would go to <em>devices</em>; <em>left out</em> are the quarantined, unsubscribed or capped among its matches). A delivery names a segment in its audience, in the compose page or in a request. Segments are defined with <code>pushctl segments define</code> or the admin API.</p>
        {{#problems}}<p class="problem" role="alert">{{.}}</p>{{/problems}}
        {{#countsHidden}}<p role="status">Counting a segment's devices takes the <code>deliveries:write</code> permission; your role lists the segments only.</p>{{/countsHidden}}
        {{#none}}<p role="status">No segment is defined in your services yet.</p>{{/none}}
        {{#table}}
        <table id="segments"><caption>Segments, by service and name</caption>
        <thead><tr><th scope="col">Service</th><th scope="col">Segment</th><th scope="col">Version</th><th scope="col">Description</th><th scope="col">Conditions</th><th scope="col">Devices</th><th scope="col">Left out</th></tr></thead>
        <tbody>{{#rows}}<tr data-segment="{{service}}/{{name}}"><td>{{service}}</td><th scope="row">{{name}}</th><td class="n">{{version}}</td><td>{{description}}</td><td><code>{{filter}}</code></td><td class="n" data-figure="segment-devices">{{devices}}</td><td class="n">{{excluded}}</td></tr>{{/rows}}</tbody>
        </table>
        {{/table}}
        {{/content}}{{/page}}
        """#
    ]
}
