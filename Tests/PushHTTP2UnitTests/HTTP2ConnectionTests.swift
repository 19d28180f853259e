import NIOCore
import NIOEmbedded
import NIOHPACK
import NIOHTTP2
import Testing

@testable import PushHTTP2

/// `HTTP2ClientConnection` and `HTTP2ConnectionHandler` against swift-nio-http2's server on
/// embedded channels (`HTTP2ConnectionHarness`): what a caller of the connection sees for each
/// thing a server can do.
@Suite("HTTP2 client connection on embedded channels")
struct HTTP2ConnectionTests {
    // MARK: answers

    @Test("a request reaches the server whole and its answer brings back status, headers and body")
    func answered() throws {
        let h = try HTTP2ConnectionHarness()
        defer { h.finish() }
        let request = HTTP2Request(path: "/3/device/abc", headers: ["apns-topic": "com.example"], body: ByteBuffer(string: #"{"aps":{}}"#))
        let answer = try h.send(request)

        let sent = try #require(h.received.requestHeaders[1])
        #expect(sent.first(name: ":method") == "POST")
        #expect(sent.first(name: ":scheme") == "https")
        #expect(sent.first(name: ":authority") == HTTP2ConnectionHarness.authority)
        #expect(sent.first(name: ":path") == "/3/device/abc")
        #expect(sent.first(name: "apns-topic") == "com.example")
        #expect(sent.first(name: "content-length") == "10")
        let body = h.received.frames.compactMap { frame -> ByteBuffer? in
            guard case .data(let data) = frame.payload, case .byteBuffer(let bytes) = data.data else { return nil }
            return bytes
        }
        #expect(body == [ByteBuffer(string: #"{"aps":{}}"#)])
        #expect(answer.isPending)

        try h.answer(1, status: 400, headers: [("apns-id", "id-1")], body: ByteBuffer(string: #"{"reason":"BadDeviceToken"}"#))
        let response = try #require(answer.response)
        #expect(response.status == 400)
        #expect(response.headers.first(name: "apns-id") == "id-1")
        #expect(response.body == ByteBuffer(string: #"{"reason":"BadDeviceToken"}"#))
    }

    @Test("an answer of headers only, after an informational 100, completes with an empty body")
    func headersOnlyAnswer() throws {
        let h = try HTTP2ConnectionHarness()
        defer { h.finish() }
        let answer = try h.send()
        try h.serverSends(.headers(.init(headers: [":status": "100"])), on: 1)
        #expect(answer.isPending)
        try h.answer(1, status: 200, headers: [("apns-id", "id-1")])
        let response = try #require(answer.response)
        #expect(response.status == 200)
        #expect(response.body.readableBytes == 0)
    }

    @Test("each request opens its own stream with odd increasing ids, and each answer reaches its own request")
    func streamIDs() throws {
        let h = try HTTP2ConnectionHarness()
        defer { h.finish() }
        let answers = try (0..<3).map { index in try h.send(HTTP2Request(path: "/send/\(index)", body: ByteBuffer(string: "{}"))) }
        #expect(h.openedStreams == [1, 3, 5])
        #expect(h.received.requestHeaders[1]?.first(name: ":path") == "/send/0")
        #expect(h.received.requestHeaders[5]?.first(name: ":path") == "/send/2")

        // Answered out of order: routing is by stream id, not by arrival.
        for stream in [5, 1, 3] as [HTTP2StreamID] {
            try h.answer(stream, body: ByteBuffer(string: "stream \(Int(stream))"))
        }
        #expect(answers.map { $0.response?.body } == ["stream 1", "stream 3", "stream 5"].map { ByteBuffer(string: $0) })
        #expect(h.connection.isUsable)
    }

    // MARK: MAX_CONCURRENT_STREAMS

    @Test("above the server's MAX_CONCURRENT_STREAMS a request waits unsent until a stream ends, then goes out")
    func waitsForAStream() throws {
        let h = try HTTP2ConnectionHarness(serverMaxConcurrentStreams: 2)
        defer { h.finish() }
        #expect(h.frames.maxConcurrentStreams == 2)
        let wanted = Wanted()
        let answers = try [
            h.send(), h.send(),
            h.send(HTTP2Request(path: "/third", body: ByteBuffer(string: "{}"), stillWanted: { wanted.ask() })),
        ]
        #expect(h.openedStreams == [1, 3])
        #expect(h.received.requestHeaders.count == 2)
        // Not even asked yet: it is only asked when its turn to be written comes.
        #expect(wanted.timesAsked == 0)
        #expect(answers[2].isPending)

        try h.answer(3)
        #expect(h.openedStreams == [1, 3, 5])
        #expect(h.received.requestHeaders[5]?.first(name: ":path") == "/third")
        #expect(wanted.timesAsked == 1)
        try h.answer(1)
        try h.answer(5)
        #expect(answers.allSatisfy { $0.response?.status == 200 })
    }

    @Test("a later SETTINGS raising the stream limit sends the waiting requests at once")
    func limitRaised() throws {
        let h = try HTTP2ConnectionHarness(serverMaxConcurrentStreams: 1)
        defer { h.finish() }
        let answers = try (0..<4).map { _ in try h.send() }
        #expect(h.openedStreams == [1])

        try h.serverSends(.settings(.settings([HTTP2Setting(parameter: .maxConcurrentStreams, value: 3)])))
        #expect(h.frames.maxConcurrentStreams == 3)
        #expect(h.openedStreams == [1, 3, 5])
        #expect(h.received.requestHeaders.count == 3)

        try h.answer(1)
        #expect(h.openedStreams == [1, 3, 5, 7])
        for stream in [3, 5, 7] as [HTTP2StreamID] { try h.answer(stream) }
        #expect(answers.allSatisfy { $0.response?.status == 200 })
    }

    @Test("a later SETTINGS lowering the stream limit keeps the open streams and holds new requests until below it")
    func limitLowered() throws {
        let h = try HTTP2ConnectionHarness(serverMaxConcurrentStreams: 3)
        defer { h.finish() }
        let open = try (0..<3).map { _ in try h.send() }
        try h.serverSends(.settings(.settings([HTTP2Setting(parameter: .maxConcurrentStreams, value: 1)])))
        let later = try h.send()
        #expect(h.openedStreams == [1, 3, 5])
        #expect(open.allSatisfy { $0.isPending })

        try h.answer(1)
        try h.answer(3)
        // One stream still open: at the limit of 1, the new request still waits.
        #expect(h.openedStreams == [1, 3, 5])
        try h.answer(5)
        #expect(h.openedStreams == [1, 3, 5, 7])
        try h.answer(7)
        #expect((open + [later]).allSatisfy { $0.response?.status == 200 })
    }

    // MARK: GOAWAY

    @Test("after GOAWAY: no new stream, waiting requests requeued, streams up to its last id answered, above it not delivered, then closed")
    func goAway() throws {
        let h = try HTTP2ConnectionHarness(serverMaxConcurrentStreams: 3)
        defer { h.finish() }
        let answers = try (0..<5).map { index in try h.send(HTTP2Request(path: "/send/\(index)", body: ByteBuffer(string: "{}"))) }
        #expect(h.openedStreams == [1, 3, 5])

        try h.serverSends(.goAway(lastStreamID: 3, errorCode: .noError, opaqueData: nil))
        #expect(!h.connection.isUsable)
        #expect(h.frames.goAwayLastStreamID == 3)
        // The two waiting requests go back to the endpoint, unsent and still pending.
        #expect(h.requeued.map(\.request.path) == ["/send/3", "/send/4"])
        #expect(answers[3].isPending && answers[4].isPending)
        // Stream 5 is above the last-stream-id: the server did not process it.
        let above = try #require(answers[2].error)
        #expect(above.kind == .notSent)
        #expect(!above.mayHaveBeenDelivered)

        try h.answer(1, body: ByteBuffer(string: "one"))
        #expect(h.client.isActive)
        try h.answer(3, body: ByteBuffer(string: "three"))
        #expect(answers[0].response?.body == ByteBuffer(string: "one"))
        #expect(answers[1].response?.body == ByteBuffer(string: "three"))
        #expect(h.openedStreams == [1, 3, 5])
        #expect(h.received.requestHeaders.count == 3)
        // Drained: the connection closes itself.
        #expect(!h.client.isActive)
    }

    @Test("a GOAWAY with no stream open closes the connection at once")
    func goAwayWhenIdle() throws {
        let h = try HTTP2ConnectionHarness()
        defer { h.finish() }
        try h.send()
        try h.answer(1)
        #expect(h.client.isActive)
        try h.serverSends(.goAway(lastStreamID: 1, errorCode: .noError, opaqueData: nil))
        #expect(!h.client.isActive)
        #expect(!h.connection.isUsable)
    }

    @Test("a request given to a connection after its GOAWAY goes back unsent, whether a stream is free or not; the open streams are still answered")
    func sendAfterGoAway() throws {
        let h = try HTTP2ConnectionHarness(serverMaxConcurrentStreams: 2)
        defer { h.finish() }
        let open = try h.send(HTTP2Request(path: "/open", body: ByteBuffer(string: "{}")))
        try h.serverSends(.goAway(lastStreamID: 1, errorCode: .noError, opaqueData: nil))
        // A stream is free (1 of 2 open): without the check it would be written as stream 3.
        let late = try h.send(HTTP2Request(path: "/late", body: ByteBuffer(string: "{}")))
        #expect(h.requeued.map(\.request.path) == ["/late"])
        #expect(late.isPending, "the endpoint sends it elsewhere")
        #expect(h.openedStreams == [1])
        #expect(h.client.isActive, "the connection is not closed by a refused stream")
        try h.answer(1, body: ByteBuffer(string: "kept"))
        #expect(open.response?.body == ByteBuffer(string: "kept"))
        #expect(!h.client.isActive)
    }

    // MARK: RST_STREAM

    @Test(
        "a RST_STREAM fails only its own request, saying whether the server may have acted on it",
        arguments: [
            (HTTP2ErrorCode.refusedStream, HTTP2ClientError.Kind.notSent, false),
            (HTTP2ErrorCode.internalError, HTTP2ClientError.Kind.lostAnswer, true),
            (HTTP2ErrorCode.cancel, HTTP2ClientError.Kind.lostAnswer, true),
        ])
    func reset(code: HTTP2ErrorCode, kind: HTTP2ClientError.Kind, mayHaveBeenDelivered: Bool) throws {
        let h = try HTTP2ConnectionHarness()
        defer { h.finish() }
        let answers = try (0..<3).map { _ in try h.send() }
        try h.serverSends(.rstStream(code), on: 3)
        let error = try #require(answers[1].error)
        #expect(error.kind == kind)
        #expect(error.mayHaveBeenDelivered == mayHaveBeenDelivered)
        #expect(answers[0].isPending && answers[2].isPending)

        try h.answer(1)
        try h.answer(5)
        #expect(answers[0].response?.status == 200)
        #expect(answers[2].response?.status == 200)
        #expect(h.connection.isUsable)
    }

    // MARK: flow control

    @Test("the client's SETTINGS advertise a stream window above the largest answer it reads, and no server push")
    func clientSettings() throws {
        let h = try HTTP2ConnectionHarness()
        defer { h.finish() }
        let settings = h.received.frames.compactMap { frame -> HTTP2Settings? in
            guard case .settings(.settings(let settings)) = frame.payload else { return nil }
            return settings
        }
        let first = try #require(settings.first)
        #expect(first.last { $0.parameter == .initialWindowSize }?.value == HTTP2ConnectionHandler.initialStreamWindow)
        #expect(first.last { $0.parameter == .enablePush }?.value == 0)
        #expect(HTTP2ConnectionHandler.initialStreamWindow > HTTP2Exchange.maximumBodyBytes)
    }

    @Test("the connection window is opened once ready, and topped up by a WINDOW_UPDATE on stream 0 after a quarter of it is read")
    func connectionWindowUpdate() throws {
        let h = try HTTP2ConnectionHarness()
        defer { h.finish() }
        func connectionUpdates() -> [Int] {
            h.written.frames.compactMap { frame in
                guard frame.streamID == .rootStream, case .windowUpdate(let increment) = frame.payload else { return nil }
                return increment
            }
        }
        #expect(connectionUpdates() == [HTTP2ConnectionHandler.connectionWindow - 65_535])

        // Four answers of 64 KiB: a quarter of the window exactly, reached by the last frame of
        // the last answer, which must still reach its request (a top-up written before that frame
        // reached its exchange made swift-nio-http2 close the stream first, losing the answer).
        let quarter = HTTP2ConnectionHandler.connectionWindow / 4
        let answers = try (0..<4).map { _ in try h.send() }
        for (index, stream) in ([1, 3, 5] as [HTTP2StreamID]).enumerated() {
            try h.answer(stream, body: ByteBuffer(repeating: UInt8(index), count: quarter / 4))
        }
        #expect(connectionUpdates().count == 1)
        try h.answer(7, body: ByteBuffer(repeating: 3, count: quarter / 4))
        #expect(connectionUpdates() == [HTTP2ConnectionHandler.connectionWindow - 65_535, quarter])
        #expect(answers.allSatisfy { $0.response?.body.readableBytes == quarter / 4 })
        // Streams never need one: their window is larger than any answer.
        #expect(!h.written.frames.contains { frame in frame.streamID != .rootStream && frame.payload.isWindowUpdate })
    }

    @Test("answers totalling more than the connection window all arrive")
    func moreThanTheConnectionWindow() throws {
        let h = try HTTP2ConnectionHarness()
        defer { h.finish() }
        let size = 300_000
        let answers = try (0..<5).map { _ in try h.send() }
        // Written by the server all at once: it can only finish if the client reopens the window.
        for stream in [1, 3, 5, 7, 9] as [HTTP2StreamID] {
            h.serverWrites(HTTP2Frame(streamID: stream, payload: .headers(.init(headers: [":status": "200"]))))
            h.serverWrites(HTTP2Frame(streamID: stream, payload: .data(.init(data: .byteBuffer(ByteBuffer(repeating: 7, count: size)), endStream: true))))
        }
        try h.exchangeBytes()
        #expect(5 * size > HTTP2ConnectionHandler.connectionWindow)
        #expect(answers.allSatisfy { $0.response?.body.readableBytes == size })
    }

    // MARK: connection lost

    enum Loss: String, CaseIterable, CustomTestStringConvertible, Sendable {
        case closed
        case error
        var testDescription: String { self.rawValue }
    }

    @Test("a lost connection fails every sent request as maybe delivered, and hands waiting ones back unsent", arguments: Loss.allCases)
    func connectionLost(loss: Loss) throws {
        let h = try HTTP2ConnectionHarness(serverMaxConcurrentStreams: 2)
        defer { h.finish() }
        let answers = try (0..<3).map { index in try h.send(HTTP2Request(path: "/send/\(index)", body: ByteBuffer(string: "{}"))) }
        #expect(h.openedStreams == [1, 3])

        switch loss {
        case .closed: h.client.close(promise: nil)
        case .error: h.client.pipeline.fireErrorCaught(ConnectionReset())
        }
        h.loop.run()
        #expect(!h.client.isActive)
        #expect(!h.connection.isUsable)
        for answer in answers[0..<2] {
            let error = try #require(answer.error)
            #expect(error.kind == .lostAnswer)
            #expect(error.mayHaveBeenDelivered)
        }
        #expect(answers[2].isPending)
        #expect(h.requeued.map(\.request.path) == ["/send/2"])
        #expect(h.openedStreams == [1, 3])
    }

    @Test("a request whose frames had not left when the connection closed fails as not delivered")
    func lostBeforeTheFlush() throws {
        let h = try HTTP2ConnectionHarness()
        defer { h.finish() }
        let promise = h.loop.makePromise(of: HTTP2Response.self)
        let answer = Answer(promise.futureResult)
        // No loop turn: the coalesced flush has not run.
        h.connection.send(HTTP2Request(path: "/send", body: ByteBuffer(string: "{}")), deadline: .distantFuture, promise: promise)
        #expect(h.openedStreams == [1])
        h.client.close(promise: nil)
        h.loop.run()
        let error = try #require(answer.error)
        #expect(error.kind == .notSent)
        #expect(!error.mayHaveBeenDelivered)
        #expect(h.received.requestHeaders.isEmpty)
    }

    // MARK: withdrawn and expired while waiting

    @Test("a request no longer wanted when a stream frees up is withdrawn, never written, and the next one goes out")
    func withdrawn() throws {
        let h = try HTTP2ConnectionHarness(serverMaxConcurrentStreams: 1)
        defer { h.finish() }
        let wanted = Wanted()
        let first = try h.send()
        let unwanted = try h.send(HTTP2Request(path: "/unwanted", body: ByteBuffer(string: "{}"), stillWanted: { wanted.ask() }))
        let next = try h.send(HTTP2Request(path: "/next", body: ByteBuffer(string: "{}")))
        wanted.isWanted = false

        try h.answer(1)
        #expect(first.response?.status == 200)
        let error = try #require(unwanted.error)
        #expect(error.kind == .withdrawn)
        #expect(!error.mayHaveBeenDelivered)
        #expect(wanted.timesAsked == 1)
        #expect(h.openedStreams == [1, 3])
        #expect(h.received.requestHeaders[3]?.first(name: ":path") == "/next")
        #expect(!h.received.requestHeaders.values.contains { $0.first(name: ":path") == "/unwanted" })
        try h.answer(3)
        #expect(next.response?.status == 200)
    }

    @Test("a request whose deadline passed while it waited for a stream fails with a timeout, never written")
    func expiredWhileWaiting() throws {
        let h = try HTTP2ConnectionHarness(serverMaxConcurrentStreams: 1)
        defer { h.finish() }
        let first = try h.send()
        let expired = try h.send(HTTP2Request(path: "/expired", body: ByteBuffer(string: "{}")), deadline: .now() - .seconds(1))
        let next = try h.send(HTTP2Request(path: "/next", body: ByteBuffer(string: "{}")))
        #expect(expired.isPending)

        try h.answer(1)
        #expect(first.response?.status == 200)
        let error = try #require(expired.error)
        #expect(error.kind == .timeout)
        #expect(!error.mayHaveBeenDelivered)
        #expect(h.openedStreams == [1, 3])
        #expect(!h.received.requestHeaders.values.contains { $0.first(name: ":path") == "/expired" })
        try h.answer(3)
        #expect(next.response?.status == 200)
    }

    // MARK: idle

    @Test("a connection without streams for its idle timeout closes, and a request before then keeps it open")
    func idleTimeout() throws {
        let h = try HTTP2ConnectionHarness(idleTimeout: .seconds(1))
        defer { h.finish() }
        try h.send()
        try h.answer(1)
        h.loop.advanceTime(by: .milliseconds(600))
        #expect(h.client.isActive)

        // A request cancels the timer; the next one starts when its answer ends the last stream.
        try h.send()
        h.loop.advanceTime(by: .milliseconds(600))
        try h.answer(3)
        h.loop.advanceTime(by: .milliseconds(999))
        #expect(h.client.isActive)
        #expect(h.connection.isUsable)
        h.loop.advanceTime(by: .milliseconds(1))
        #expect(!h.client.isActive)
        #expect(!h.connection.isUsable)
    }
}

private struct ConnectionReset: Error {}

extension HTTP2Frame.FramePayload {
    fileprivate var isWindowUpdate: Bool {
        if case .windowUpdate = self { return true }
        return false
    }
}
