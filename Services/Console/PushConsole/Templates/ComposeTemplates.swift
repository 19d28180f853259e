extension ConsoleTemplates {
    /// The compose page (its language, A/B, audience and option fields) and the preview of a
    /// draft, which `POST /deliveries/preview` also serves alone for the live preview.
    static let composeTemplates: [String: String] = [
        // One `<option>` of a select: `value`, `label`, `selected`.
        "option": #"<option value="{{value}}"{{#selected}} selected{{/selected}}>{{label}}</option>"#,
        "compose": #"""
        {{<page}}{{$content}}
        <p><a href="/deliveries">← All deliveries</a></p>
        <h1>New delivery</h1>
        {{#problem}}<p role="alert" class="problem" id="compose-problem"><strong>Not accepted:</strong> {{.}}</p>{{/problem}}
        <form method="post" action="/deliveries/new" class="compose" id="compose" data-preview="/deliveries/preview">
        <input type="hidden" name="csrf" value="{{csrf}}">
        <p><label for="service">Service</label> <select id="service" name="service" required>{{#services}}{{> option}}{{/services}}</select></p>
        <p><label for="title">Title</label><br><input id="title" name="title" type="text" value="{{form.title}}" maxlength="1000"></p>
        <p><label for="body">Message</label><br><textarea id="body" name="body" rows="3" cols="60" maxlength="4000">{{form.body}}</textarea></p>
        {{> compose-languages}}
        {{> compose-variants}}
        <fieldset><legend>Audience</legend>
        <input type="radio" id="audience-all" name="audience" value="all"{{#audience.all}} checked{{/audience.all}}> <label for="audience-all">Every subscribed device of the service</label><br>
        <input type="radio" id="audience-keys" name="audience" value="userKeys"{{#audience.userKeys}} checked{{/audience.userKeys}}> <label for="audience-keys">These user keys</label><br>
        <label for="userKeys">User keys (one per line)</label><br><textarea id="userKeys" name="userKeys" rows="3" cols="40">{{form.userKeys}}</textarea><br>
        <input type="radio" id="audience-filter" name="audience" value="filter"{{#audience.filter}} checked{{/audience.filter}}> <label for="audience-filter">Devices matching</label>
        <select id="match" name="match" aria-label="Which conditions must hold">{{#match}}{{> option}}{{/match}}</select>
        {{> compose-conditions}}
        <input type="radio" id="audience-segment" name="audience" value="segment"{{#audience.segment}} checked{{/audience.segment}}> <label for="audience-segment">Devices in the segment</label>
        <input id="segment" name="segment" type="text" size="24" maxlength="64" aria-label="Segment name" value="{{form.segment}}"> (its latest version; <code>pushctl segments list</code>)
        </fieldset>
        <p><label for="sendAt">Send at (UTC; empty: now)</label> <input id="sendAt" name="sendAt" type="datetime-local" value="{{form.sendAt}}"></p>
        {{> compose-options}}
        <p><label for="proofUserKeys">Proof recipients: user keys (one per line, for "Send a proof")</label><br>
        <textarea id="proofUserKeys" name="proofUserKeys" rows="2" cols="40">{{form.proofUserKeys}}</textarea></p>
        <p><button type="submit" name="step" value="preview">Preview</button>
        <button type="submit" name="step" value="proof">Send a proof</button>
        <button type="submit" name="step" value="send">Send</button></p>
        </form>
        <div id="live-preview" aria-live="polite">{{#preview}}{{> preview}}{{/preview}}</div>
        {{/content}}{{/page}}
        """#,
        // Rows with a tag become `content.languages`; a row without a tag is left out.
        "compose-languages": #"""
        <fieldset><legend>Languages</legend><p>Texts per language (fr, pt-BR): a device gets the row of its language, the title and message above when none matches.</p><table class="languages"><thead><tr><th>Language</th><th>Title</th><th>Message</th></tr></thead><tbody>
        {{#languages}}
        <tr><td><input id="lang{{row}}Tag" name="lang{{row}}Tag" type="text" size="8" maxlength="16" aria-label="Language {{number}}: tag" value="{{tag}}"></td><td><input id="lang{{row}}Title" name="lang{{row}}Title" type="text" size="24" maxlength="1000" aria-label="Language {{number}}: title" value="{{title}}"></td><td><input id="lang{{row}}Body" name="lang{{row}}Body" type="text" size="40" maxlength="4000" aria-label="Language {{number}}: message" value="{{body}}"></td></tr>
        {{/languages}}
        </tbody></table></fieldset>
        """#,
        // The texts above are the first variant (a name and a share), then rows of a name, a
        // share, a title and a message; a row without a name is left out, without any there is no test.
        "compose-variants": #"""
        <fieldset><legend>A/B test</legend><p>Name a second variant to split the audience: the title, message and languages above are the first variant; each device gets one variant, the shares (per cent) adding up to 100.</p><table class="variants"><thead><tr><th>Variant</th><th>Share (%)</th><th>Title</th><th>Message</th></tr></thead><tbody><tr><td><input id="variantAName" name="variantAName" type="text" size="10" maxlength="32" placeholder="A" aria-label="Variant 1: name" value="{{form.variantAName}}"></td><td><input id="variantAShare" name="variantAShare" type="text" inputmode="numeric" size="4" maxlength="3" aria-label="Variant 1: share" value="{{form.variantAShare}}"></td><td colspan="2">the title, message and languages above</td></tr>
        {{#variants}}
        <tr><td><input id="var{{row}}Name" name="var{{row}}Name" type="text" size="10" maxlength="32" aria-label="Variant {{number}}: name" value="{{name}}"></td><td><input id="var{{row}}Share" name="var{{row}}Share" type="text" inputmode="numeric" size="4" maxlength="3" aria-label="Variant {{number}}: share" value="{{share}}"></td><td><input id="var{{row}}Title" name="var{{row}}Title" type="text" size="24" maxlength="1000" aria-label="Variant {{number}}: title" value="{{title}}"></td><td><input id="var{{row}}Body" name="var{{row}}Body" type="text" size="40" maxlength="4000" aria-label="Variant {{number}}: message" value="{{body}}"></td></tr>
        {{/variants}}
        </tbody></table></fieldset>
        """#,
        // A field (a parameter by name, or a device field), an operator and a value; a row
        // without an operator is left out.
        "compose-conditions": #"""
        <table class="conditions"><thead><tr><th>Field</th><th>Parameter</th><th>Operator</th><th>Value (lists comma-separated; periods like 30 days)</th></tr></thead><tbody>
        {{#conditions}}
        <tr><td><select id="cond{{row}}Field" name="cond{{row}}Field" aria-label="Condition {{number}}: field">{{#fields}}{{> option}}{{/fields}}</select></td><td><input id="cond{{row}}Param" name="cond{{row}}Param" type="text" size="12" maxlength="128" aria-label="Condition {{number}}: parameter name" value="{{param}}"></td><td><select id="cond{{row}}Op" name="cond{{row}}Op" aria-label="Condition {{number}}: operator">{{#operators}}{{> option}}{{/operators}}</select></td><td><input id="cond{{row}}Value" name="cond{{row}}Value" type="text" size="24" maxlength="2000" aria-label="Condition {{number}}: value" value="{{value}}"></td></tr>
        {{/conditions}}
        </tbody></table>
        """#,
        // Template, lane, rate, validity and the platforms' options.
        "compose-options": #"""
        <fieldset><legend>Options</legend>
        <p><label for="template">Template</label> <input id="template" name="template" type="text" size="20" value="{{form.template}}" maxlength="64"> (its latest version; the texts above override it)</p>
        <p><label for="priority">Priority</label> <select id="priority" name="priority">{{#priority}}{{> option}}{{/priority}}</select>
        <label for="throttle">At most per second</label> <input id="throttle" name="throttle" type="text" size="8" value="{{form.throttle}}" inputmode="numeric">
        <label for="validHours">Valid for (hours)</label> <input id="validHours" name="validHours" type="text" size="5" value="{{form.validHours}}" inputmode="numeric"></p>
        <p>iOS: <label for="iosBadge">badge</label> <input id="iosBadge" name="iosBadge" type="text" size="4" value="{{form.iosBadge}}" inputmode="numeric"> <label for="iosSound">sound</label> <input id="iosSound" name="iosSound" type="text" size="12" value="{{form.iosSound}}"> <label for="iosCategory">category</label> <input id="iosCategory" name="iosCategory" type="text" size="12" value="{{form.iosCategory}}"></p>
        <p>Android: <label for="androidMode">message</label> <select id="androidMode" name="androidMode">{{#androidMode}}{{> option}}{{/androidMode}}</select>
        <label for="androidChannel">channel</label> <input id="androidChannel" name="androidChannel" type="text" size="12" value="{{form.androidChannel}}"> <label for="androidImage">image URL</label> <input id="androidImage" name="androidImage" type="text" size="30" value="{{form.androidImage}}"> <label for="androidSound">sound</label> <input id="androidSound" name="androidSound" type="text" size="12" value="{{form.androidSound}}"></p>
        </fieldset>
        """#,
        // The admin API's dry run (audience per app, one payload per platform with its size), or
        // why the draft is not valid yet.
        "preview": #"""
        {{#previewProblem}}<section id="preview" data-valid="false" aria-labelledby="preview-heading"><h2 id="preview-heading">Preview</h2><p class="problem" id="preview-problem"><strong>Not valid yet:</strong> {{.}}</p></section>{{/previewProblem}}
        {{#dryRun}}
        <section id="preview" data-valid="true" aria-labelledby="preview-heading">
        <h2 id="preview-heading">Preview (nothing sent)</h2>
        <p>Would target <strong data-figure="preview-targeted">{{targeted}}</strong> devices and exclude <strong data-figure="preview-excluded">{{excluded}}</strong> (quarantined or unsubscribed).</p>
        <table><caption>Audience per app</caption><thead><tr><th scope="col">Platform</th><th scope="col">Integration key</th><th scope="col">Targeted</th><th scope="col">Excluded</th></tr></thead>
        <tbody>{{#apps}}<tr><td>{{platform}}</td><td><code>{{integrationKey}}</code></td><td class="n">{{targeted}}</td><td class="n">{{excluded}}</td></tr>{{/apps}}</tbody></table>
        {{#languageCounts}}
        <table id="preview-languages"><caption>Devices per language</caption><thead><tr><th scope="col">Texts</th><th scope="col">Devices</th></tr></thead><tbody>{{#rows}}<tr><td>{{#code}}<code>{{.}}</code>{{/code}}{{^code}}default texts{{/code}}</td><td class="n" data-language="{{language}}">{{devices}}</td></tr>{{/rows}}</tbody></table>
        {{/languageCounts}}
        {{#variantCounts}}
        <table id="preview-variants"><caption>Devices per A/B variant (about: each device's variant is drawn from its message id)</caption><thead><tr><th scope="col">Variant</th><th scope="col">Share</th><th scope="col">Devices</th></tr></thead><tbody>{{#rows}}<tr><td><code>{{variant}}</code></td><td class="n">{{share}} %</td><td class="n" data-variant="{{variant}}">{{devices}}</td></tr>{{/rows}}</tbody></table>
        {{/variantCounts}}
        {{#samples}}
        <div class="sample" data-platform="{{platform}}"><h3>{{platform}} payload{{#variant}}, variant <code>{{.}}</code>{{/variant}}{{#language}}, language <code>{{.}}</code>{{/language}}, <span data-figure="bytes">{{bytes}}</span> bytes of 4096 (as the provider counts them){{#failure}} <strong class="problem">would fail: {{.}}</strong>{{/failure}}</h3>
        <pre>{{payload}}</pre></div>
        {{/samples}}
        </section>
        {{/dryRun}}
        """#,
    ]
}
