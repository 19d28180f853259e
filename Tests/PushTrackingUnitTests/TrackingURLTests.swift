import Foundation
import PushEvents
import PushTracking
import Testing

@Suite("Tracking URL parsing, exactly as the SDKs send it")
struct TrackingURLTests {
    @Test(
        "the SDKs' literal URLs",
        arguments: [
            ("id=hd828,deliveryId,2", "55336", TrackingMessageIDForm.decimal, "deliveryId", Int32(2), TrackingKind.opened),
            ("id=h3039,testDeliveryId,1", "12345", .decimal, "testDeliveryId", 1, .received),
            ("id=h6b6499a8-9d43-4bc5-acf0-b6aeb96846f6,testDeliveryId,2", "6b6499a8-9d43-4bc5-acf0-b6aeb96846f6", .uuid, "testDeliveryId", 2, .opened),
            ("id=hd7e15e5c,testDeliveryId,1", "-673096100", .decimal, "testDeliveryId", 1, .received),
        ])
    func literal(query: String, messageId: String, form: TrackingMessageIDForm, deliveryId: String, tag: Int32, kind: TrackingKind) throws {
        let url = try TrackingURL(query: query)
        #expect(url.contentLetter == "h")
        #expect(url.messageID.normalized == messageId)
        #expect(url.messageID.form == form)
        #expect(url.deliveryID == deliveryId)
        #expect(url.tagID == tag)
        #expect(url.kind == kind)
    }

    @Test("a UUID in upper or mixed case is normalised to lowercase")
    func uuidCase() throws {
        let upper = try TrackingURL(id: "h6B6499A8-9D43-4BC5-ACF0-B6AEB96846F6,d,1")
        #expect(upper.messageID == .uuid(UUID(uuidString: "6b6499a8-9d43-4bc5-acf0-b6aeb96846f6")!))
        #expect(upper.messageID.normalized == "6b6499a8-9d43-4bc5-acf0-b6aeb96846f6")
        #expect(try TrackingURL(id: "h6b6499A8-9d43-4BC5-acf0-b6aeb96846f6,d,1").messageID == upper.messageID)
    }

    @Test(
        "hex ids: any case, 32-bit two's complement up to 8 digits, 64-bit beyond",
        arguments: [
            ("D828", Int64(55336)),
            ("0", 0),
            ("7fffffff", Int64(Int32.max)),
            ("80000000", Int64(Int32.min)),
            ("ffffffff", -1),
            ("D7E15E5C", -673_096_100),
            ("100000000", 4_294_967_296),
            ("2540be400", 10_000_000_000),
            ("7fffffffffffffff", Int64.max),
            ("ffffffffffffffff", -1),
            ("fffffffd7e15e5c", 1_152_921_503_933_750_876),
        ])
    func hex(text: String, expected: Int64) throws {
        let url = try TrackingURL(id: "h\(text),d,1")
        #expect(url.messageID == .decimal(expected))
        #expect(url.messageID.normalized == String(expected))
    }

    @Test("any single letter leads; tags other than 1 and 2 are kept as other")
    func letterAndTags() throws {
        #expect(try TrackingURL(id: "xd828,d,1").contentLetter == "x")
        #expect(try TrackingURL(id: "Hd828,d,1").messageID == .decimal(55336))
        for tag: Int32 in [0, 3, 42, -1, Int32.max, Int32.min] {
            let url = try TrackingURL(id: "hd828,d,\(tag)")
            #expect(url.tagID == tag)
            #expect(url.kind == .other)
        }
    }

    @Test("the delivery id is copied verbatim, up to 255 bytes")
    func deliveryVerbatim() throws {
        #expect(try TrackingURL(id: "hd828,DM1234 x/y_z.é,1").deliveryID == "DM1234 x/y_z.é")
        let longest = String(repeating: "a", count: TrackingURL.maximumDeliveryIDLength)
        #expect(try TrackingURL(id: "hd828,\(longest),1").deliveryID == longest)
    }

    @Test("the query string: percent-encoded commas, other parameters, the first id wins")
    func queryForms() throws {
        #expect(try TrackingURL(query: "id=hd828%2CdeliveryId%2C2").deliveryID == "deliveryId")
        #expect(try TrackingURL(query: "x=1&id=hd828,d,2&y").tagID == 2)
        #expect(try TrackingURL(query: "id=hd828,first,2&id=hd828,second,1").deliveryID == "first")
    }

    @Test(
        "malformed ids are refused with a reason a person understands",
        arguments: [
            ("", "missing_id", "id parameter is missing"),
            ("other=1", "missing_id", "id parameter is missing"),
            ("id=", "missing_id", "id parameter is missing"),
            ("id=%zz", "malformed_id", "percent-encoded UTF-8"),
            ("id=hd828", "malformed_id", "found 1 part"),
            ("id=hd828,deliveryId", "malformed_id", "found 2 parts"),
            ("id=hd828,delivery,Id,2", "malformed_id", "found 4 parts"),
            ("id=hd828,deliveryId,2,", "malformed_id", "found 4 parts"),
            ("id=,deliveryId,2", "content_letter", "empty before the first comma"),
            ("id=9d828,deliveryId,2", "content_letter", "must start with a letter"),
            ("id=h,deliveryId,2", "message_id", "messageId is empty"),
            ("id=hxyz,deliveryId,2", "message_id", "neither a UUID nor a hex"),
            ("id=hd8 28,deliveryId,2", "message_id", "neither a UUID nor a hex"),
            ("id=h+d828,deliveryId,2", "message_id", "neither a UUID nor a hex"),
            ("id=h6b6499a8-9d43-4bc5-acf0-b6aeb96846fg,d,2", "message_id", "is not a UUID"),
            ("id=h6b6499a8-9d43-4bc5-acf0,d,2", "message_id", "is not a UUID"),
            ("id=h-1,d,2", "message_id", "is not a UUID"),
            ("id=h10000000000000000,d,2", "message_id", "more than 16 hex digits"),
            ("id=hd828,,2", "delivery_id", "deliveryId (second part) is empty"),
            ("id=hd828,\(String(repeating: "a", count: 256)),2", "delivery_id", "longer than 255 bytes"),
            ("id=hd828,a%0Ab,2", "delivery_id", "control characters"),
            ("id=hd828,a%7Fb,2", "delivery_id", "control characters"),
            ("id=hd828,caf%C3%A9%C2%85,2", "delivery_id", "control characters"),
            ("id=h6b6499a8+9d43-4bc5-acf0-b6aeb96846f6,d,2", "message_id", "is not a UUID"),
            ("id=h6b6499a89-d43-4bc5-acf0-b6aeb96846f6,d,2", "message_id", "is not a UUID"),
            ("id=hd828,deliveryId,", "tag_id", "tagId (third part) is empty"),
            ("id=hd828,deliveryId,open", "tag_id", "is not an integer"),
            ("id=hd828,deliveryId,1.5", "tag_id", "is not an integer"),
            ("id=hd828,deliveryId,+1", "tag_id", "is not an integer"),
            ("id=hd828,deliveryId,-", "tag_id", "is not an integer"),
            ("id=hd828,deliveryId,2147483648", "tag_id", "out of range"),
            ("id=hd828,deliveryId,99999999999999999999999", "tag_id", "out of range"),
        ])
    func refused(query: String, code: String, reason: String) {
        let error = #expect(throws: TrackingURLError.self) { try TrackingURL(query: query) }
        #expect(error?.code.label == code, "\(query): \(error?.reason ?? "")")
        #expect(error?.reason.contains(reason) == true, "\(query): \(error?.reason ?? "")")
        #expect(error?.reason.contains("\n") == false)
    }

    @Test("a reason quotes at most 40 characters of the input")
    func shortReasons() {
        let junk = String(repeating: "z", count: 200)
        let error = #expect(throws: TrackingURLError.self) { try TrackingURL(id: "h\(junk),d,1") }
        #expect((error?.reason.count ?? .max) < 120, "\(error?.reason ?? "")")
    }

    @Test("the event carries the normalised id, its form, the tag and kind")
    func event() throws {
        let url = try TrackingURL(id: "hD7E15E5C,testDeliveryId,7")
        let id = UUID()
        let date = Date(timeIntervalSince1970: 1_790_000_000)
        let hit = TrackingEndpoints.event(for: url, trackingId: id, at: date)
        #expect(
            hit
                == TrackingHitRecorded(
                    trackingId: id, messageId: "-673096100", messageIdForm: "decimal", deliveryId: "testDeliveryId", tagId: 7, kind: "other", occurredAt: date))
    }
}
