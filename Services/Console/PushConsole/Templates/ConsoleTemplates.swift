import Mustache
import PushStore

/// The console's pages are Mustache templates (docs/console.md, "Templates"), held as string
/// constants, one file per page group, and parsed once into one library when the console starts
/// (`ConsoleApplication.build` touches `library`): a request only renders. The executable carries
/// them, so there is no resource bundle to ship next to it.
///
/// Escaping: `{{name}}` HTML-escapes (`& < > " '`), which is every value from the database, the
/// admin APIs or the request; `{{{name}}}` does not, and no template uses it. A template reads
/// its values from `[String: Any]` contexts (or a form's struct), built in `ConsolePages`.
package enum ConsoleTemplates {
    /// Every template by name; a name is also a partial (`{{> name}}`) or a layout (`{{< page}}`).
    static let all: [String: String] = layoutTemplates.merging(deliveryTemplates) { first, _ in first }
        .merging(composeTemplates) { first, _ in first }.merging(catalogTemplates) { first, _ in first }
        .merging(deviceTemplates) { first, _ in first }.merging(auditTemplates) { first, _ in first }
        .merging(segmentTemplates) { first, _ in first }

    /// Parsed once; a template that does not parse stops the console at start-up (and every page
    /// test), never a request.
    package static let library: MustacheLibrary = {
        var library = MustacheLibrary()
        for (name, text) in all {
            do {
                try library.register(text, named: name)
            } catch {
                fatalError("The console's template \(name) does not parse: \(error)")
            }
        }
        return library
    }()

    static func render(_ name: String, _ context: [String: Any]) -> String {
        guard let text = library.render(context, withTemplate: name) else { fatalError("No console template named \(name)") }
        return text
    }

    /// A whole page: the layout's values (title, navigation, the sign-out form's CSRF token)
    /// and the page's own. `csrf` is nil on the sign-in page (no navigation, no sign-out form).
    /// Who the page is rendered for (set by the endpoints around a signed-in request): the
    /// layout names them and offers only the pages their role may open.
    @TaskLocal package static var viewer: AdminPrincipal?

    /// The main navigation, each page with the permission it needs.
    static let navigation: [(path: String, label: String, permission: AdminPermission)] = [
        ("/deliveries", "Deliveries", .deliveriesRead), ("/catalog", "Catalog", .catalogRead), ("/segments", "Segments", .catalogRead),
        ("/devices", "Devices", .devicesRead), ("/audit", "Audit", .operators),
    ]

    static func page(_ name: String, title: String, csrf: String?, current: String = "", _ context: [String: Any]) -> String {
        var context = context
        context["pageTitle"] = title
        if let csrf {
            let viewer = Self.viewer ?? .bootstrap
            context["signedIn"] = true
            context["csrf"] = csrf
            context["viewer"] = viewer == .bootstrap ? "the admin token" : "\(viewer.name) (\(viewer.role.rawValue))"
            context["navigation"] = navigation.filter { viewer.has($0.permission) }.map { path, label, _ in
                ["path": path, "label": label, "current": path == current] as [String: Any]
            }
        } else {
            context["signedIn"] = false
        }
        return render(name, context)
    }

    /// The layout (`{{< page}}` with its `content` block), the sign-in form and the small
    /// answers that are not pages.
    static let layoutTemplates: [String: String] = [
        "page": #"""
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>{{pageTitle}} · Push console</title>
        <link rel="stylesheet" href="/assets/console.css">
        <link rel="icon" href="/assets/icon.svg" type="image/svg+xml">
        <script src="/assets/console.js" defer></script>
        </head>
        <body>
        <a class="skip" href="#main">Skip to content</a>
        {{#signedIn}}
        <header class="top"><p class="brand">Push console</p>
        <nav aria-label="Main"><ul>{{#navigation}}<li><a href="{{path}}"{{#current}} aria-current="page"{{/current}}>{{label}}</a></li>{{/navigation}}</ul></nav>
        <form method="post" action="/signout" class="signout"><span class="viewer">Signed in as {{viewer}}</span> <input type="hidden" name="csrf" value="{{csrf}}"><button type="submit">Sign out</button></form>
        </header>
        {{/signedIn}}
        <main id="main" tabindex="-1">
        {{$content}}{{/content}}
        </main>
        </body>
        </html>
        """#,
        "signin": #"""
        {{<page}}{{$content}}
        <h1>Sign in to the push console</h1>
        {{#problem}}<p class="problem" role="alert" id="signin-problem"><strong>Not signed in:</strong> {{.}}</p>{{/problem}}
        <form method="post" action="/signin" class="signin">
        <input type="hidden" name="form" value="{{formToken}}">
        <input type="hidden" name="next" value="{{next}}">
        <p><label for="operator">Operator</label>
        <input id="operator" name="operator" type="text" autocomplete="username" value="{{operatorName}}" autofocus></p>
        <p><label for="token">Password or admin token</label>
        <input id="token" name="token" type="password" autocomplete="current-password" required{{#problem}} aria-describedby="signin-problem"{{/problem}}></p>
        <p class="hint">Your operator name and console password; or, with no operator name, the token set as <code>PUSH_ADMIN_TOKEN</code>.</p>
        <p><button type="submit">Sign in</button></p>
        </form>
        {{/content}}{{/page}}
        """#,
        "forbidden": #"""
        {{<page}}{{$content}}<h1>Not allowed</h1><p>{{what}}</p><p>Ask an admin for a role that has it.</p>{{/content}}{{/page}}
        """#,
        "not-found": #"""
        {{<page}}{{$content}}<h1>Not found</h1><p>{{what}}</p><p><a href="/deliveries">All deliveries</a></p>{{/content}}{{/page}}
        """#,
        // The report's refreshing section answers these alone (console.js reloads on the 401).
        "signed-out-fragment": "<p>Signed out: reload the page to sign in.</p>",
        "no-delivery-fragment": "<p>No such delivery.</p>",
        // No details: they may name the database.
        "error": "<!doctype html><title>Error</title><h1>The console could not read this page</h1><p>See the console's log.</p>",
    ]
}
