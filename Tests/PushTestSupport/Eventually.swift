import Testing

/// Polls `condition` every `interval` until it holds. Past `limit` it records an issue at the
/// caller's line, naming `what`, and throws: the test stops there instead of asserting on a
/// state that never came. The one way tests wait for something they cannot be told about (a
/// projection's row, a process's metric, a simulator's log).
package func eventually(
    within limit: Duration = .seconds(60), every interval: Duration = .milliseconds(100), _ what: String,
    sourceLocation: SourceLocation = #_sourceLocation, _ condition: () async throws -> Bool
) async throws {
    let deadline = ContinuousClock.now + limit
    while ContinuousClock.now < deadline {
        if try await condition() { return }
        try await Task.sleep(for: interval)
    }
    if try await condition() { return }
    Issue.record("timed out after \(limit): \(what)", sourceLocation: sourceLocation)
    throw EventuallyTimedOut(what: what, limit: limit)
}

/// What `eventually` throws when its condition did not hold in time.
package struct EventuallyTimedOut: Error, CustomStringConvertible {
    package var what: String
    package var limit: Duration
    package var description: String { "timed out after \(limit): \(what)" }
}
