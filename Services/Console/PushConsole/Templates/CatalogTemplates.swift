extension ConsoleTemplates {
    /// The catalog (services and their apps), the app form (create and edit) and an app's page
    /// with its credentials. A refusal shows next to the form that caused it, what was typed kept.
    static let catalogTemplates: [String: String] = [
        // A form's refusal: `problemId`, `problemText`.
        "problem-line": #"<p role="alert" class="problem" id="{{problemId}}"><strong>Not saved:</strong> {{problemText}}</p>"#,
        "done-line": #"{{#done}}<p role="status" class="done" id="form-message">{{.}}</p>{{/done}}"#,
        "catalog": #"""
        {{<page}}{{$content}}
        <h1>Services and apps</h1>
        {{> done-line}}
        <p class="hint">Every change goes through the registration service's admin API (docs/admin-api.md), which records it as an event.
        Credentials show by kind and fingerprint, never their content.</p>
        <section aria-labelledby="new-service-heading" class="form">
        <h2 id="new-service-heading">New service</h2>
        {{#createProblem}}{{> problem-line}}{{/createProblem}}
        <form method="post" action="/catalog/services" id="new-service"><input type="hidden" name="csrf" value="{{csrf}}">
        <p><label for="service-name">Service name</label> <input id="service-name" name="name" type="text" required maxlength="64" value="{{createName}}" aria-describedby="service-name-hint"> <span class="hint" id="service-name-hint">letters, digits, _ . - (it cannot change)</span></p>
        <p><label for="service-label">Service label</label> <input id="service-label" name="label" type="text" required maxlength="200" value="{{createLabel}}"></p>
        <p><button type="submit">Create the service</button></p>
        </form>
        </section>
        {{^services}}<p>No service yet.</p>{{/services}}
        {{#services}}
        <section aria-labelledby="service-{{index}}" data-service="{{service}}" id="service-{{service}}">
        <h2 id="service-{{index}}">{{label}} <span class="note">({{service}})</span></h2>
        {{^apps}}<p>No app yet.</p>{{/apps}}
        {{#hasApps}}
        <table class="apps"><caption>Apps of {{service}} (the app's name opens its settings and credentials)</caption>
        <thead><tr><th scope="col">App</th><th scope="col">Platform</th><th scope="col">Environment</th><th scope="col">Bundle or project</th>
        <th scope="col">Integration key (the SDK's mobileAppUuid)</th><th scope="col">Credentials (kind, fingerprint)</th><th scope="col">Variables</th>
        <th scope="col">Sounds</th><th scope="col">Subscription parameters</th></tr></thead>
        <tbody>
        {{#apps}}
        <tr data-integration-key="{{integrationKey}}" data-app-id="{{appId}}">
        <th scope="row"><a href="{{link}}" aria-label="Edit {{label}} ({{platform}})">{{label}}</a></th><td>{{platform}}</td><td>{{environment}}</td><td>{{target}}</td>
        <td><code>{{integrationKey}}</code> <button type="button" data-copy="{{integrationKey}}" aria-label="Copy the integration key of {{label}} ({{platform}})">Copy</button></td>
        <td data-credential="{{credentialState}}">{{#credential}}{{kind}}, <code>{{fingerprint}}</code>, set {{set}}{{#expires}}, expires {{.}}{{/expires}}{{/credential}}{{^credential}}none yet{{/credential}}</td>
        <td><code>{{variables}}</code></td><td><code>{{sounds}}</code></td><td><code>{{subscriptionParameters}}</code></td>
        </tr>
        {{/apps}}
        </tbody></table>
        {{/hasApps}}
        <p><a href="/catalog/services/{{serviceQuery}}/apps/new">Add an app to {{service}}</a></p>
        {{#relabelProblem}}{{> problem-line}}{{/relabelProblem}}
        <form method="post" action="/catalog/services/{{serviceQuery}}/label" class="inline"><input type="hidden" name="csrf" value="{{csrf}}">
        <label for="label-{{index}}">Label of {{service}}</label>
        <input id="label-{{index}}" name="label" type="text" required maxlength="200" value="{{labelValue}}"{{#relabelProblem}} aria-describedby="{{problemId}}"{{/relabelProblem}}>
        <button type="submit">Rename</button></form>
        <p data-frequency-cap="{{service}}">Frequency cap of {{service}}: {{cap}}</p>
        {{#capProblem}}{{> problem-line}}{{/capProblem}}
        <form method="post" action="/catalog/services/{{serviceQuery}}/frequency-cap" class="inline"><input type="hidden" name="csrf" value="{{csrf}}">
        <label for="cap-messages-{{index}}">At most</label>
        <input id="cap-messages-{{index}}" name="messages" type="number" min="1" max="1000" required value="{{capMessages}}"{{#capProblem}} aria-describedby="{{problemId}}"{{/capProblem}}>
        <label for="cap-hours-{{index}}">bulk deliveries per person in (hours)</label>
        <input id="cap-hours-{{index}}" name="periodHours" type="number" min="1" max="720" required value="{{capHours}}">
        <button type="submit" name="action" value="set">Set the cap</button></form>
        {{#hasCap}}<form method="post" action="/catalog/services/{{serviceQuery}}/frequency-cap" class="inline"><input type="hidden" name="csrf" value="{{csrf}}"><button type="submit" name="action" value="lift">Lift the cap</button></form>{{/hasCap}}
        </section>
        {{/services}}
        {{/content}}{{/page}}
        """#,
        // The fields of an app (create and edit; the platform is chosen when creating only).
        // `appForm` is the ConsoleAppForm.
        "app-fields": #"""
        {{#creating}}
        <fieldset><legend>Platform</legend>
        <input type="radio" id="platform-ios" name="platform" value="ios"{{#isIOS}} checked{{/isIOS}}> <label for="platform-ios">iOS (APNs)</label>
        <input type="radio" id="platform-android" name="platform" value="android"{{#isAndroid}} checked{{/isAndroid}}> <label for="platform-android">Android (FCM)</label>
        </fieldset>
        {{/creating}}
        {{^creating}}<input type="hidden" name="platform" value="{{appForm.platform}}"><p>Platform: <strong>{{platformName}}</strong> (it cannot change)</p>{{/creating}}
        <p><label for="app-label">Label</label> <input id="app-label" name="label" type="text" required maxlength="200" value="{{appForm.label}}"></p>
        <p><label for="app-environment">APNs environment (iOS)</label> <select id="app-environment" name="environment">
        <option value="production"{{#production}} selected{{/production}}>production</option>
        <option value="sandbox"{{#sandbox}} selected{{/sandbox}}>sandbox (development builds)</option></select></p>
        <p><label for="app-bundle">Bundle id (iOS: the APNs topic)</label> <input id="app-bundle" name="bundleId" type="text" maxlength="200" value="{{appForm.bundleId}}"></p>
        <p><label for="app-project">FCM project id (Android)</label> <input id="app-project" name="fcmProjectId" type="text" maxlength="200" value="{{appForm.fcmProjectId}}"></p>
        {{#creating}}<p><label for="app-key">Integration key</label> <input id="app-key" name="integrationKey" type="text" maxlength="128" value="{{appForm.integrationKey}}" aria-describedby="app-key-hint"> <span class="hint" id="app-key-hint">leave empty for a new one (a UUID); an existing app's key when moving it here</span></p>{{/creating}}
        <p><label for="app-variables">Application variables (one name per line)</label><br><textarea id="app-variables" name="variables" rows="3" cols="40">{{appForm.variables}}</textarea></p>
        <p><label for="app-sounds">Sounds the iOS app ships (one per line, name: label)</label><br><textarea id="app-sounds" name="sounds" rows="3" cols="40">{{appForm.sounds}}</textarea></p>
        <p><label for="app-params">Subscription parameters (one per line, name: type among string, integer, decimal, boolean, date)</label><br><textarea id="app-params" name="subscriptionParameters" rows="3" cols="40">{{appForm.subscriptionParameters}}</textarea></p>
        """#,
        "new-app": #"""
        {{<page}}{{$content}}
        <p><a href="/catalog">← Catalog</a></p>
        <h1>New app of {{service}}</h1>
        {{#settingsProblem}}{{> problem-line}}{{/settingsProblem}}
        <form method="post" action="/catalog/services/{{serviceQuery}}/apps/new" id="app-form"><input type="hidden" name="csrf" value="{{csrf}}">
        {{#appFields}}
        {{> app-fields}}
        {{/appFields}}
        <p><button type="submit">Create the app</button></p>
        </form>
        {{/content}}{{/page}}
        """#,
        // One app: its integration key to copy, its credentials (kind, fingerprint, details;
        // never the secret), the upload form and the settings form.
        "app": #"""
        {{<page}}{{$content}}
        <p><a href="/catalog">← Catalog</a></p>
        <h1>{{appLabel}} <span class="note">({{platform}}, service {{service}})</span></h1>
        {{> done-line}}
        <p>Integration key (the SDK's <code>mobileAppUuid</code>): <code id="integration-key">{{integrationKey}}</code>
        <button type="button" data-copy="{{integrationKey}}" aria-label="Copy the integration key">Copy</button></p>
        <section aria-labelledby="credentials-heading" id="credentials">
        <h2 id="credentials-heading">Provider credentials</h2>
        <table id="credential-list"><caption>Stored credentials, newest (the active one) first: kind and fingerprint, never the secret</caption>
        <thead><tr><th scope="col">Kind</th><th scope="col">Fingerprint</th><th scope="col">Details</th><th scope="col">Set at</th></tr></thead>
        <tbody>
        {{#credentials}}
        <tr data-kind="{{kind}}"><td>{{kind}}{{#active}} <span class="tag">active</span>{{/active}}</td>
        <td><code data-figure="fingerprint">{{fingerprint}}</code></td><td>{{details}}</td>
        <td>{{createdAt}}</td></tr>
        {{/credentials}}
        {{^credentials}}<tr><td colspan="4">None yet: the senders cannot reach this app's devices.</td></tr>{{/credentials}}
        </tbody></table>
        {{#credentialProblem}}{{> problem-line}}{{/credentialProblem}}
        <form method="post" action="/catalog/apps/{{appQuery}}/credentials" enctype="multipart/form-data" id="credential-form"><input type="hidden" name="csrf" value="{{csrf}}">
        {{#ios}}
        <fieldset><legend>Kind</legend>
        <input type="radio" id="kind-token" name="kind" value="apns-token"{{^certificate}} checked{{/certificate}}> <label for="kind-token">APNs key (.p8, with its key id and team id)</label><br>
        <input type="radio" id="kind-certificate" name="kind" value="apns-certificate"{{#certificate}} checked{{/certificate}}> <label for="kind-certificate">APNs certificate (.p12, with its password)</label>
        </fieldset>
        <p><label for="key-id">Key id</label> <input id="key-id" name="keyId" type="text" maxlength="10" autocomplete="off" value="{{keyId}}"></p>
        <p><label for="team-id">Team id</label> <input id="team-id" name="teamId" type="text" maxlength="10" autocomplete="off" value="{{teamId}}"></p>
        <p><label for="credential-file">Key or certificate file (.p8 or .p12)</label> <input id="credential-file" name="file" type="file" accept=".p8,.p12,.pfx" required{{#credentialProblem}} aria-describedby="credential-problem"{{/credentialProblem}}></p>
        <p><label for="p12-password">Certificate password (.p12 only)</label> <input id="p12-password" name="password" type="password" autocomplete="off"></p>
        {{/ios}}
        {{^ios}}
        <input type="hidden" name="kind" value="fcm-service-account">
        <p><label for="credential-file">Service account file (.json, from the Firebase console)</label> <input id="credential-file" name="file" type="file" accept=".json,application/json" required{{#credentialProblem}} aria-describedby="credential-problem"{{/credentialProblem}}></p>
        {{/ios}}
        <p><button type="submit">Upload the credentials</button></p>
        </form>
        </section>
        <section aria-labelledby="settings-heading">
        <h2 id="settings-heading">Settings</h2>
        {{#settingsProblem}}{{> problem-line}}{{/settingsProblem}}
        <form method="post" action="/catalog/apps/{{appQuery}}" id="app-form"><input type="hidden" name="csrf" value="{{csrf}}">
        {{#appFields}}
        {{> app-fields}}
        {{/appFields}}
        <p><button type="submit">Save the settings</button></p>
        </form>
        </section>
        {{/content}}{{/page}}
        """#,
    ]
}
