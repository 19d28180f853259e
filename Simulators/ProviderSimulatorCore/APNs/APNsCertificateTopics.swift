import Foundation
import SwiftASN1
import X509

/// The topics an APNs client certificate authorises, read from its subject the way Apple issues
/// them: the bundle id is the subject's UID attribute (OID 0.9.2342.19200300.100.1.1), next to a
/// CN like "Apple Push Services: com.example.app".
///
/// Without a UID the CN is used, minus anything up to its last ": " (so Apple's CN form still gives
/// the bundle id). Apple's multi-topic ("universal") certificates list further topics in a private
/// extension (1.2.840.113635.100.6.3.6); the simulator does not read it: one topic per certificate.
package enum APNsCertificateTopics {
    /// 0.9.2342.19200300.100.1.1, "UID" (userId) in RFC 4519.
    package static let userIDAttribute: ASN1ObjectIdentifier = [0, 9, 2342, 19_200_300, 100, 1, 1]

    /// The certificate's topics (none when neither a UID nor a CN is readable).
    package static func topics(of certificate: Certificate) -> [String] {
        if let uid = self.attribute(self.userIDAttribute, in: certificate.subject) {
            return [uid]
        }
        if let commonName = self.attribute(.RDNAttributeType.commonName, in: certificate.subject) {
            let topic = commonName.range(of: ": ", options: .backwards).map { String(commonName[$0.upperBound...]) } ?? commonName
            return topic.isEmpty ? [] : [topic]
        }
        return []
    }

    private static func attribute(_ type: ASN1ObjectIdentifier, in name: DistinguishedName) -> String? {
        for relativeName in name {
            for attribute in relativeName where attribute.type == type {
                if let value = String(attribute.value), !value.isEmpty { return value }
            }
        }
        return nil
    }
}
