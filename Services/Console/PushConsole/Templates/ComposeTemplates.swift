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
        <p><label for="service">Service</label> <select id="service" name="service" required{{#p.service}} aria-invalid="true" aria-describedby="service-problem"{{/p.service}}>{{#services}}{{> option}}{{/services}}</select>{{#p.service}} <strong class="field-problem" id="service-problem">{{.}}</strong>{{/p.service}}</p>
        <p><label for="title">Title</label><br><input id="title" name="title" type="text" value="{{form.title}}" maxlength="1000"{{#p.title}} aria-invalid="true" aria-describedby="title-problem"{{/p.title}}>{{#p.title}} <strong class="field-problem" id="title-problem">{{.}}</strong>{{/p.title}}</p>
        <p><label for="body">Message</label><br><textarea id="body" name="body" rows="3" cols="60" maxlength="4000"{{#p.body}} aria-invalid="true" aria-describedby="body-problem"{{/p.body}}>{{form.body}}</textarea>{{#p.body}} <strong class="field-problem" id="body-problem">{{.}}</strong>{{/p.body}}</p>
        {{> compose-languages}}
        {{> compose-variants}}
        <fieldset><legend>Audience</legend>
        <input type="radio" id="audience-all" name="audience" value="all"{{#audience.all}} checked{{/audience.all}}> <label for="audience-all">Every subscribed device of the service</label><br>
        <input type="radio" id="audience-keys" name="audience" value="userKeys"{{#audience.userKeys}} checked{{/audience.userKeys}}> <label for="audience-keys">These user keys</label><br>
        <label for="userKeys">User keys (one per line)</label><br><textarea id="userKeys" name="userKeys" rows="3" cols="40"{{#p.userKeys}} aria-invalid="true" aria-describedby="userKeys-problem"{{/p.userKeys}}>{{form.userKeys}}</textarea>{{#p.userKeys}} <strong class="field-problem" id="userKeys-problem">{{.}}</strong>{{/p.userKeys}}<br>
        <input type="radio" id="audience-filter" name="audience" value="filter"{{#audience.filter}} checked{{/audience.filter}}> <label for="audience-filter">Devices matching</label>
        <select id="match" name="match" aria-label="Which conditions must hold"{{#p.match}} aria-invalid="true" aria-describedby="match-problem"{{/p.match}}>{{#match}}{{> option}}{{/match}}</select>{{#p.match}} <strong class="field-problem" id="match-problem">{{.}}</strong>{{/p.match}}
        {{> compose-conditions}}
        <input type="radio" id="audience-segment" name="audience" value="segment"{{#audience.segment}} checked{{/audience.segment}}> <label for="audience-segment">Devices in the segment</label>
        <input id="segment" name="segment" type="text" size="24" maxlength="64" aria-label="Segment name" value="{{form.segment}}"{{#p.segment}} aria-invalid="true" aria-describedby="segment-problem"{{/p.segment}}>{{#p.segment}} <strong class="field-problem" id="segment-problem">{{.}}</strong>{{/p.segment}} (its latest version; <code>pushctl segments list</code>)
        </fieldset>
        <p><label for="sendAt">Send at (empty: now)</label> <input id="sendAt" name="sendAt" type="datetime-local" value="{{form.sendAt}}"{{#p.sendAt}} aria-invalid="true" aria-describedby="sendAt-problem"{{/p.sendAt}}>{{#p.sendAt}} <strong class="field-problem" id="sendAt-problem">{{.}}</strong>{{/p.sendAt}}
        <label for="timeZone">in the time zone</label> <input id="timeZone" name="timeZone" type="text" size="20" list="time-zones" placeholder="UTC" value="{{form.timeZone}}" data-default-zone{{#p.timeZone}} aria-invalid="true" aria-describedby="timeZone-problem"{{/p.timeZone}}>{{#p.timeZone}} <strong class="field-problem" id="timeZone-problem">{{.}}</strong>{{/p.timeZone}}{{#sendAtSummary}} <span id="sendAt-utc">= {{.}}</span>{{/sendAtSummary}}</p>
        <datalist id="time-zones">{{#timeZones}}<option value="{{.}}"></option>{{/timeZones}}</datalist>
        {{#soundLists}}<datalist id="{{id}}" data-service="{{service}}" data-platform="{{platform}}">{{#sounds}}<option value="{{name}}">{{label}}</option>{{/sounds}}</datalist>{{/soundLists}}
        {{> compose-options}}
        <p><label for="proofUserKeys">Proof recipients: user keys (one per line, for "Send a proof")</label><br>
        <textarea id="proofUserKeys" name="proofUserKeys" rows="2" cols="40"{{#p.proofUserKeys}} aria-invalid="true" aria-describedby="proofUserKeys-problem"{{/p.proofUserKeys}}>{{form.proofUserKeys}}</textarea>{{#p.proofUserKeys}} <strong class="field-problem" id="proofUserKeys-problem">{{.}}</strong>{{/p.proofUserKeys}}</p>
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
        <tr><td><input id="lang{{row}}Tag" name="lang{{row}}Tag" type="text" size="8" maxlength="16" aria-label="Language {{number}}: tag" value="{{tag}}"{{#p.Tag}} aria-invalid="true" aria-describedby="lang{{row}}Tag-problem"{{/p.Tag}}>{{#p.Tag}} <strong class="field-problem" id="lang{{row}}Tag-problem">{{.}}</strong>{{/p.Tag}}</td><td><input id="lang{{row}}Title" name="lang{{row}}Title" type="text" size="24" maxlength="1000" aria-label="Language {{number}}: title" value="{{title}}"{{#p.Title}} aria-invalid="true" aria-describedby="lang{{row}}Title-problem"{{/p.Title}}>{{#p.Title}} <strong class="field-problem" id="lang{{row}}Title-problem">{{.}}</strong>{{/p.Title}}</td><td><input id="lang{{row}}Body" name="lang{{row}}Body" type="text" size="40" maxlength="4000" aria-label="Language {{number}}: message" value="{{body}}"{{#p.Body}} aria-invalid="true" aria-describedby="lang{{row}}Body-problem"{{/p.Body}}>{{#p.Body}} <strong class="field-problem" id="lang{{row}}Body-problem">{{.}}</strong>{{/p.Body}}</td></tr>
        {{/languages}}
        </tbody></table></fieldset>
        """#,
        // The texts above are the first variant (a name and a share), then rows of a name, a
        // share, a title and a message; a row without a name is left out, without any there is no test.
        "compose-variants": #"""
        <fieldset><legend>A/B test</legend><p>Name a second variant to split the audience: the title, message and languages above are the first variant; each device gets one variant, the shares (per cent) adding up to 100.</p><table class="variants"><thead><tr><th>Variant</th><th>Share (%)</th><th>Title</th><th>Message</th></tr></thead><tbody><tr><td><input id="variantAName" name="variantAName" type="text" size="10" maxlength="32" placeholder="A" aria-label="Variant 1: name" value="{{form.variantAName}}"{{#p.variantAName}} aria-invalid="true" aria-describedby="variantAName-problem"{{/p.variantAName}}>{{#p.variantAName}} <strong class="field-problem" id="variantAName-problem">{{.}}</strong>{{/p.variantAName}}</td><td><input id="variantAShare" name="variantAShare" type="text" inputmode="numeric" size="4" maxlength="3" aria-label="Variant 1: share" value="{{form.variantAShare}}"{{#p.variantAShare}} aria-invalid="true" aria-describedby="variantAShare-problem"{{/p.variantAShare}}>{{#p.variantAShare}} <strong class="field-problem" id="variantAShare-problem">{{.}}</strong>{{/p.variantAShare}}</td><td colspan="2">the title, message and languages above</td></tr>
        {{#variants}}
        <tr><td><input id="var{{row}}Name" name="var{{row}}Name" type="text" size="10" maxlength="32" aria-label="Variant {{number}}: name" value="{{name}}"{{#p.Name}} aria-invalid="true" aria-describedby="var{{row}}Name-problem"{{/p.Name}}>{{#p.Name}} <strong class="field-problem" id="var{{row}}Name-problem">{{.}}</strong>{{/p.Name}}</td><td><input id="var{{row}}Share" name="var{{row}}Share" type="text" inputmode="numeric" size="4" maxlength="3" aria-label="Variant {{number}}: share" value="{{share}}"{{#p.Share}} aria-invalid="true" aria-describedby="var{{row}}Share-problem"{{/p.Share}}>{{#p.Share}} <strong class="field-problem" id="var{{row}}Share-problem">{{.}}</strong>{{/p.Share}}</td><td><input id="var{{row}}Title" name="var{{row}}Title" type="text" size="24" maxlength="1000" aria-label="Variant {{number}}: title" value="{{title}}"{{#p.Title}} aria-invalid="true" aria-describedby="var{{row}}Title-problem"{{/p.Title}}>{{#p.Title}} <strong class="field-problem" id="var{{row}}Title-problem">{{.}}</strong>{{/p.Title}}</td><td><input id="var{{row}}Body" name="var{{row}}Body" type="text" size="40" maxlength="4000" aria-label="Variant {{number}}: message" value="{{body}}"{{#p.Body}} aria-invalid="true" aria-describedby="var{{row}}Body-problem"{{/p.Body}}>{{#p.Body}} <strong class="field-problem" id="var{{row}}Body-problem">{{.}}</strong>{{/p.Body}}</td></tr>
        {{/variants}}
        </tbody></table></fieldset>
        """#,
        // A field (a parameter by name, or a device field), an operator and a value; a row
        // without an operator is left out.
        "compose-conditions": #"""
        <table class="conditions"><thead><tr><th>Field</th><th>Parameter</th><th>Operator</th><th>Value (lists comma-separated; periods like 30 days)</th></tr></thead><tbody>
        {{#conditions}}
        <tr><td><select id="cond{{row}}Field" name="cond{{row}}Field" aria-label="Condition {{number}}: field"{{#p.Field}} aria-invalid="true" aria-describedby="cond{{row}}Field-problem"{{/p.Field}}>{{#fields}}{{> option}}{{/fields}}</select>{{#p.Field}} <strong class="field-problem" id="cond{{row}}Field-problem">{{.}}</strong>{{/p.Field}}</td><td><input id="cond{{row}}Param" name="cond{{row}}Param" type="text" size="12" maxlength="128" aria-label="Condition {{number}}: parameter name" value="{{param}}"{{#p.Param}} aria-invalid="true" aria-describedby="cond{{row}}Param-problem"{{/p.Param}}>{{#p.Param}} <strong class="field-problem" id="cond{{row}}Param-problem">{{.}}</strong>{{/p.Param}}</td><td><select id="cond{{row}}Op" name="cond{{row}}Op" aria-label="Condition {{number}}: operator"{{#p.Op}} aria-invalid="true" aria-describedby="cond{{row}}Op-problem"{{/p.Op}}>{{#operators}}{{> option}}{{/operators}}</select>{{#p.Op}} <strong class="field-problem" id="cond{{row}}Op-problem">{{.}}</strong>{{/p.Op}}</td><td><input id="cond{{row}}Value" name="cond{{row}}Value" type="text" size="24" maxlength="2000" aria-label="Condition {{number}}: value" value="{{value}}"{{#p.Value}} aria-invalid="true" aria-describedby="cond{{row}}Value-problem"{{/p.Value}}>{{#p.Value}} <strong class="field-problem" id="cond{{row}}Value-problem">{{.}}</strong>{{/p.Value}}</td></tr>
        {{/conditions}}
        </tbody></table>
        """#,
        // Template, lane, rate, validity and the platforms' options.
        "compose-options": #"""
        <fieldset><legend>Options</legend>
        <p><label for="template">Template</label> <input id="template" name="template" type="text" size="20" value="{{form.template}}" maxlength="64"{{#p.template}} aria-invalid="true" aria-describedby="template-problem"{{/p.template}}>{{#p.template}} <strong class="field-problem" id="template-problem">{{.}}</strong>{{/p.template}} (its latest version; the texts above override it)</p>
        <p><label for="priority">Priority</label> <select id="priority" name="priority"{{#p.priority}} aria-invalid="true" aria-describedby="priority-problem"{{/p.priority}}>{{#priority}}{{> option}}{{/priority}}</select>{{#p.priority}} <strong class="field-problem" id="priority-problem">{{.}}</strong>{{/p.priority}}
        <label for="throttle">At most per second</label> <input id="throttle" name="throttle" type="text" size="8" value="{{form.throttle}}" inputmode="numeric"{{#p.throttle}} aria-invalid="true" aria-describedby="throttle-problem"{{/p.throttle}}>{{#p.throttle}} <strong class="field-problem" id="throttle-problem">{{.}}</strong>{{/p.throttle}}
        <label for="validHours">Valid for (hours)</label> <input id="validHours" name="validHours" type="text" size="5" value="{{form.validHours}}" inputmode="numeric"{{#p.validHours}} aria-invalid="true" aria-describedby="validHours-problem"{{/p.validHours}}>{{#p.validHours}} <strong class="field-problem" id="validHours-problem">{{.}}</strong>{{/p.validHours}}</p>
        <p>iOS: <label for="iosBadge">badge</label> <input id="iosBadge" name="iosBadge" type="text" size="4" value="{{form.iosBadge}}" inputmode="numeric"{{#p.iosBadge}} aria-invalid="true" aria-describedby="iosBadge-problem"{{/p.iosBadge}}>{{#p.iosBadge}} <strong class="field-problem" id="iosBadge-problem">{{.}}</strong>{{/p.iosBadge}} <label for="iosSound">sound</label> <input id="iosSound" name="iosSound" type="text" size="12" list="{{iosSoundList}}" data-sounds="ios" value="{{form.iosSound}}"{{#p.iosSound}} aria-invalid="true" aria-describedby="iosSound-problem"{{/p.iosSound}}>{{#p.iosSound}} <strong class="field-problem" id="iosSound-problem">{{.}}</strong>{{/p.iosSound}} <label for="iosCategory">category</label> <input id="iosCategory" name="iosCategory" type="text" size="12" value="{{form.iosCategory}}"{{#p.iosCategory}} aria-invalid="true" aria-describedby="iosCategory-problem"{{/p.iosCategory}}>{{#p.iosCategory}} <strong class="field-problem" id="iosCategory-problem">{{.}}</strong>{{/p.iosCategory}} <label for="iosThreadId">thread</label> <input id="iosThreadId" name="iosThreadId" type="text" size="12" value="{{form.iosThreadId}}"{{#p.iosThreadId}} aria-invalid="true" aria-describedby="iosThreadId-problem"{{/p.iosThreadId}}>{{#p.iosThreadId}} <strong class="field-problem" id="iosThreadId-problem">{{.}}</strong>{{/p.iosThreadId}} <label for="iosInterruptionLevel">interruption level</label> <select id="iosInterruptionLevel" name="iosInterruptionLevel"{{#p.iosInterruptionLevel}} aria-invalid="true" aria-describedby="iosInterruptionLevel-problem"{{/p.iosInterruptionLevel}}>{{#interruptionLevel}}{{> option}}{{/interruptionLevel}}</select>{{#p.iosInterruptionLevel}} <strong class="field-problem" id="iosInterruptionLevel-problem">{{.}}</strong>{{/p.iosInterruptionLevel}}</p>
        <p>Android: <label for="androidMode">message</label> <select id="androidMode" name="androidMode"{{#p.androidMode}} aria-invalid="true" aria-describedby="androidMode-problem"{{/p.androidMode}}>{{#androidMode}}{{> option}}{{/androidMode}}</select>{{#p.androidMode}} <strong class="field-problem" id="androidMode-problem">{{.}}</strong>{{/p.androidMode}}
        <label for="androidChannel">channel</label> <input id="androidChannel" name="androidChannel" type="text" size="12" value="{{form.androidChannel}}"{{#p.androidChannel}} aria-invalid="true" aria-describedby="androidChannel-problem"{{/p.androidChannel}}>{{#p.androidChannel}} <strong class="field-problem" id="androidChannel-problem">{{.}}</strong>{{/p.androidChannel}} <label for="androidImage">image URL</label> <input id="androidImage" name="androidImage" type="text" size="30" value="{{form.androidImage}}"{{#p.androidImage}} aria-invalid="true" aria-describedby="androidImage-problem"{{/p.androidImage}}>{{#p.androidImage}} <strong class="field-problem" id="androidImage-problem">{{.}}</strong>{{/p.androidImage}} <label for="androidSound">sound</label> <input id="androidSound" name="androidSound" type="text" size="12" list="{{androidSoundList}}" data-sounds="android" value="{{form.androidSound}}"{{#p.androidSound}} aria-invalid="true" aria-describedby="androidSound-problem"{{/p.androidSound}}>{{#p.androidSound}} <strong class="field-problem" id="androidSound-problem">{{.}}</strong>{{/p.androidSound}} <label for="androidColor">colour (#rrggbb)</label> <input id="androidColor" name="androidColor" type="text" size="8" maxlength="7" value="{{form.androidColor}}"{{#p.androidColor}} aria-invalid="true" aria-describedby="androidColor-problem"{{/p.androidColor}}>{{#p.androidColor}} <strong class="field-problem" id="androidColor-problem">{{.}}</strong>{{/p.androidColor}} <label for="androidClickAction">click action</label> <input id="androidClickAction" name="androidClickAction" type="text" size="20" value="{{form.androidClickAction}}"{{#p.androidClickAction}} aria-invalid="true" aria-describedby="androidClickAction-problem"{{/p.androidClickAction}}>{{#p.androidClickAction}} <strong class="field-problem" id="androidClickAction-problem">{{.}}</strong>{{/p.androidClickAction}}</p>
        </fieldset>
        """#,
        // The admin API's dry run (audience per app, one payload per platform with its size), or
        // why the draft is not valid yet.
        "preview": #"""
        {{#previewProblem}}<section id="preview" data-valid="false" aria-labelledby="preview-heading"><h2 id="preview-heading">Preview</h2><p class="problem" id="preview-problem"><strong>Not valid yet:</strong> {{.}}</p>{{#fieldProblems}}<ul id="preview-field-problems">{{#items}}<li data-input="{{input}}"><a href="#{{input}}">{{label}}</a>: <span class="problem-text">{{text}}</span></li>{{/items}}</ul>{{/fieldProblems}}</section>{{/previewProblem}}
        {{#dryRun}}
        <section id="preview" data-valid="true" aria-labelledby="preview-heading">
        <h2 id="preview-heading">Preview (nothing sent)</h2>
        <p>Would target <strong data-figure="preview-targeted">{{targeted}}</strong> devices and exclude <strong data-figure="preview-excluded">{{excluded}}</strong> (quarantined or unsubscribed).</p>
        {{#sendAt}}<p>Sends at <strong id="preview-send-at">{{.}}</strong>.</p>{{/sendAt}}
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
