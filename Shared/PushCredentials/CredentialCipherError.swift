/// A sealed secret that could not be opened. The description names the key id, never a key.
package struct CredentialCipherError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of failure this is. An open set: new codes may be added.
    package struct Code: Sendable, Hashable, CustomStringConvertible {
        /// A short label, safe as a metric dimension.
        package let label: String
        private init(_ label: String) { self.label = label }
        package var description: String { label }

        /// The row was sealed under a key id that is neither the current key nor a previous one.
        package static let unknownKey = Code("unknown_key")
        /// The key the row names (or, for a row sealed before key ids were recorded, every
        /// configured key) fails to open it: the row was altered or belongs to another context.
        package static let notOpened = Code("not_opened")
    }

    package var code: Code
    /// The key id the row names; nil for a row sealed before key ids were recorded (migration 13).
    package var keyId: String?

    package var description: String {
        switch (code, keyId) {
        case (.unknownKey, let keyId?):
            return
                "sealed under credentials key id \(keyId), which is not configured: add that key to PUSH_CREDENTIALS_PREVIOUS_KEYS (docs/operations.md, key rotation)"
        case (_, let keyId?):
            return "does not open under credentials key id \(keyId) (altered, or sealed for another app)"
        case (_, nil):
            return "sealed before key ids were recorded, and no configured credentials key opens it"
        }
    }
}
