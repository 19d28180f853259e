import Foundation

/// The operations an OpenAPI document of docs/ lists, as `METHOD /path` (the path as the
/// document writes it): what a test that calls every route compares its list with.
package enum DocumentedOperations {
    package static func of(_ document: String, pathPrefix: String = "/") throws -> Set<String> {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let data = try Data(contentsOf: root.appendingPathComponent("docs").appendingPathComponent(document))
        let paths = ((try JSONSerialization.jsonObject(with: data) as? [String: Any])?["paths"] as? [String: [String: Any]]) ?? [:]
        var operations: Set<String> = []
        for (path, methods) in paths where path.hasPrefix(pathPrefix) {
            for method in methods.keys where ["get", "post", "put", "delete", "patch"].contains(method) { operations.insert("\(method.uppercased()) \(path)") }
        }
        return operations
    }
}

/// One route of an admin API as a role-matrix test calls it: its method, its path with the
/// test's placeholders, the permission it declares, a body refused after the permission check
/// (so that an allowed call changes nothing another call needs), and the path as the OpenAPI
/// document writes it.
package struct DocumentedRoute<Permission: Sendable>: Sendable, CustomStringConvertible {
    package var method: String
    package var path: String
    package var permission: Permission
    package var body: String?
    package var documented: String

    package init(method: String, path: String, permission: Permission, body: String? = nil, documented: String) {
        self.method = method
        self.path = path
        self.permission = permission
        self.body = body
        self.documented = documented
    }

    package var description: String { "\(method) \(path)" }
    package var operation: String { "\(method) \(documented)" }
}
