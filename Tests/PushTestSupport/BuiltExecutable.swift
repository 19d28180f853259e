import Foundation
import Synchronization
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// One run of a product of this package (a service, `pushctl`), built next to the test bundle
/// (`scripts/test` builds them all), as an operator starts it: its environment and arguments,
/// its standard output and error in a log file (never a pipe nobody reads, which would block it
/// once full). Tests wait for it to be ready, SIGTERM or SIGKILL it, and read how it ended and
/// the end of its log.
package final class BuiltExecutable: Sendable {
    /// The product's name (`pushctl`, `tracking-ingestion`).
    package let name: String
    /// Where its standard output and error go.
    package let logURL: URL
    private let process: Process
    private let exit = ExitSignal()

    /// Where the product `name` is built: next to the test bundle.
    package static func url(_ name: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> URL {
        let candidate = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent(name)
        try #require(
            FileManager.default.isExecutableFile(atPath: candidate.path),
            "\(name) is not built next to the tests: run `swift build` first (scripts/test does)", sourceLocation: sourceLocation
        )
        return candidate
    }

    /// Starts `name` with `arguments` and exactly `environment` (the test process's by default).
    package init(
        _ name: String, arguments: [String] = [], environment: [String: String] = ProcessInfo.processInfo.environment,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        self.name = name
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("push-tests", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        self.logURL = directory.appendingPathComponent("\(name)-\(UUID().uuidString.prefix(8).lowercased()).log")
        _ = FileManager.default.createFile(atPath: logURL.path, contents: nil)
        let log = try FileHandle(forWritingTo: logURL)
        defer { try? log.close() }  // the child has its own descriptor
        let process = Process()
        process.executableURL = try Self.url(name, sourceLocation: sourceLocation)
        process.arguments = arguments
        process.environment = environment
        process.standardOutput = log
        process.standardError = log
        let exit = self.exit
        process.terminationHandler = { _ in exit.signal() }
        self.process = process
        try process.run()
    }

    /// Runs `name` to its end (at most `limit`, then SIGKILL) and returns its exit status and its
    /// output (standard output and error together).
    package static func run(
        _ name: String, arguments: [String], environment: [String: String] = ProcessInfo.processInfo.environment,
        within limit: Duration = .seconds(300), sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> (status: Int32, output: String) {
        let run = try BuiltExecutable(name, arguments: arguments, environment: environment, sourceLocation: sourceLocation)
        await run.waitForExit(within: limit, sourceLocation: sourceLocation)
        return (run.terminationStatus, run.log())
    }

    // MARK: state

    package var processIdentifier: Int32 { process.processIdentifier }
    package var isRunning: Bool { process.isRunning }
    /// How it ended (only once it has: after `waitForExit`, `terminate` or `kill`).
    package var terminationReason: Process.TerminationReason { process.terminationReason }
    /// Its exit status, or the signal that ended it.
    package var terminationStatus: Int32 { process.terminationStatus }

    /// Its whole log so far.
    package func log() -> String {
        (try? String(contentsOf: logURL, encoding: .utf8)) ?? ""
    }

    /// The last `lines` lines of its log, for failure messages.
    package func logTail(lines: Int = 20) -> String {
        let all = log().split(separator: "\n", omittingEmptySubsequences: false)
        return "\(name) log (\(logURL.path)), last lines:\n" + all.suffix(lines).joined(separator: "\n")
    }

    // MARK: waiting

    /// Waits until `GET http://127.0.0.1:<port><path>` answers 200 (`/health/ready`, or
    /// `/health/live` for a process that needs no dependency). Throws, with the end of the log,
    /// if the process exits first or `limit` passes.
    package func waitUntilReady(
        port: Int, path: String = "/health/ready", within limit: Duration = .seconds(30), sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let url = try #require(URL(string: "http://127.0.0.1:\(port)\(path)"), sourceLocation: sourceLocation)
        try await poll(within: limit, "GET \(path) on port \(port) answers 200", sourceLocation: sourceLocation) {
            var request = URLRequest(url: url)
            request.timeoutInterval = 2
            let response = try? await URLSession.shared.data(for: request).1 as? HTTPURLResponse
            return response?.statusCode == 200
        }
    }

    /// Waits until a line of its output contains `text`.
    package func waitForOutput(
        containing text: String, within limit: Duration = .seconds(30), sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        try await poll(within: limit, "its output contains \"\(text)\"", sourceLocation: sourceLocation) {
            self.log().contains(text)
        }
    }

    private func poll(within limit: Duration, _ what: String, sourceLocation: SourceLocation, _ condition: () async -> Bool) async throws {
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline {
            if await condition() { return }
            if !isRunning {
                Issue.record(
                    "\(name) exited (\(terminationReason == .exit ? "status" : "signal") \(terminationStatus)) before \(what)\n\(logTail())",
                    sourceLocation: sourceLocation)
                throw CancellationError()
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        Issue.record("\(name): timed out after \(limit) waiting until \(what)\n\(logTail())", sourceLocation: sourceLocation)
        throw CancellationError()
    }

    /// Waits for the process to exit. Past `limit` it records an issue (with the end of the log),
    /// kills it with SIGKILL and waits for that.
    package func waitForExit(within limit: Duration = .seconds(30), sourceLocation: SourceLocation = #_sourceLocation) async {
        let exited = await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                await self.exit.wait()
                return true
            }
            group.addTask {
                try? await Task.sleep(for: limit)
                return false
            }
            let first = await group.next() ?? true
            if !first {
                self.signal(SIGKILL)
            }
            group.cancelAll()
            return first
        }
        if !exited {
            Issue.record("\(name) did not exit within \(limit): killed with SIGKILL\n\(logTail())", sourceLocation: sourceLocation)
        }
        process.waitUntilExit()  // returns at once: the termination handler has run
    }

    // MARK: stopping

    /// SIGTERM (a graceful shutdown), then waits up to `limit` for the exit.
    package func terminate(within limit: Duration = .seconds(30), sourceLocation: SourceLocation = #_sourceLocation) async {
        signal(SIGTERM)
        await waitForExit(within: limit, sourceLocation: sourceLocation)
    }

    /// SIGKILL, then waits for the exit.
    package func kill(sourceLocation: SourceLocation = #_sourceLocation) async {
        signal(SIGKILL)
        await waitForExit(within: .seconds(30), sourceLocation: sourceLocation)
    }

    /// SIGKILL without waiting, if it still runs: for `defer` after a failed test.
    package func killIfRunning() {
        if isRunning { signal(SIGKILL) }
    }

    private func signal(_ signal: Int32) {
        #if canImport(Glibc)
            _ = Glibc.kill(processIdentifier, signal)
        #else
            _ = Darwin.kill(processIdentifier, signal)
        #endif
    }
}

/// The process's exit as something to await: the termination handler signals it once.
private final class ExitSignal: Sendable {
    private let state = Mutex<(exited: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    func signal() {
        let waiters = state.withLock { state in
            state.exited = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let exited = state.withLock { state in
                if !state.exited { state.waiters.append(continuation) }
                return state.exited
            }
            if exited { continuation.resume() }
        }
    }
}
