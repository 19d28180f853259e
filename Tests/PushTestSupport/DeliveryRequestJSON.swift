import Foundation

/// A delivery request as upstream systems write it (contract v1): the planner's unit tests
/// validate it, its integration tests publish it.
package func requestJSON(
    requestId: String, service: String, apps: [String]? = nil, audience: String = #"{"all": true}"#,
    content: String = #"{"title": "Lisbon is waiting", "body": "Hello {{userKey}}"}"#,
    validUntil: String? = nil, sendAt: String? = nil, throttle: Int? = nil,
    priority: String? = nil
) -> String {
    var fields = [
        #""type": "DeliveryRequested""#, #""version": 1"#, #""requestId": "\#(requestId)""#, #""service": "\#(service)""#,
        #""audience": \#(audience)"#, #""content": \#(content)"#,
    ]
    if let apps { fields.append(#""apps": [\#(apps.map { "\"\($0)\"" }.joined(separator: ","))]"#) }
    if let validUntil { fields.append(#""validUntil": "\#(validUntil)""#) }
    if let sendAt { fields.append(#""sendAt": "\#(sendAt)""#) }
    if let throttle { fields.append(#""throttle": {"perSecond": \#(throttle)}"#) }
    if let priority { fields.append(#""priority": "\#(priority)""#) }
    return "{" + fields.joined(separator: ", ") + "}"
}

extension Date {
    /// ISO 8601 text, as the contract's times are written.
    package var iso: String { formatted(.iso8601) }
}
